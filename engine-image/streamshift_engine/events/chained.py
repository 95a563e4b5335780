"""Several lists of records read as one collection, in order, without joining them.

A worker holds the records of several consumes of a partition, one list each
(`runtime.source.Consumes`), and decodes them in one call. A joined list touches every record
twice more, its reference count raised when the list is built and lowered when it is freed; the
records were read up to 100 ms before (`runner.MINI_BATCH`), so each touch is likely a cache
miss. `Chained` hands the decode the lists as they are: it reads them one after the other.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Chained(Collection[T]):
    """The items of `parts`, part after part."""

    parts: Sequence[Collection[T]]

    def __len__(self) -> int:
        return sum(map(len, self.parts))

    def __iter__(self) -> Iterator[T]:
        return chain.from_iterable(self.parts)

    def __contains__(self, item: object) -> bool:
        return any(item in part for part in self.parts)
