"""Columnar input batches: the unit every operator consumes.

A `Batch` holds records of one input (`source`) as parallel numpy arrays. Besides the payload
columns it carries, per record, the event time `ts` (int64 milliseconds), the input `partition`
(the key group) and the `offset` in that partition, which together give the deterministic merge
order `(ts, input index, partition, offset)` described in docs/design/engine-api.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Selector = npt.NDArray[np.bool_] | npt.NDArray[np.integer[Any]] | slice


@dataclass(frozen=True, slots=True)
class Batch:
    """Records of one input as columns; immutable by convention (arrays are never written). The
    time field's column is often `ts` itself (as decoded): `take` and `concat` keep it so,
    building that array once."""

    source: str
    ts: npt.NDArray[np.int64]
    partition: npt.NDArray[np.int32]
    offset: npt.NDArray[np.int64]
    columns: Mapping[str, npt.NDArray[Any]]

    def __post_init__(self) -> None:
        n = len(self.ts)
        if len(self.partition) != n or len(self.offset) != n:
            raise ValueError(f"batch {self.source!r}: ts, partition and offset lengths differ")
        for name, column in self.columns.items():
            if len(column) != n:
                raise ValueError(
                    f"batch {self.source!r}: column {name!r} has {len(column)} values, expected {n}"
                )

    def __len__(self) -> int:
        return len(self.ts)

    @classmethod
    def empty(cls, source: str, column_names: Sequence[str] = ()) -> Batch:
        return cls(
            source=source,
            ts=np.empty(0, np.int64),
            partition=np.empty(0, np.int32),
            offset=np.empty(0, np.int64),
            columns={name: np.empty(0, object) for name in column_names},
        )

    def take(self, selector: Selector) -> Batch:
        """The records picked by a boolean mask, an index array or a slice, in that order. A
        mask becomes the indices it picks first: indexing each array by a mask counts the
        mask again, by indices does not."""
        if isinstance(selector, np.ndarray) and selector.dtype == np.bool_:
            if len(selector) != len(self.ts):
                raise IndexError(f"mask of {len(selector)} for a batch of {len(self.ts)}")
            selector = np.flatnonzero(selector)
        ts = self.ts[selector]
        return Batch(
            source=self.source,
            ts=ts,
            partition=self.partition[selector],
            offset=self.offset[selector],
            columns={
                name: ts if column is self.ts else column[selector]
                for name, column in self.columns.items()
            },
        )

    def with_columns(self, columns: Mapping[str, npt.NDArray[Any]]) -> Batch:
        """The same records with their payload columns replaced."""
        return Batch(self.source, self.ts, self.partition, self.offset, columns)

    @classmethod
    def concat(cls, batches: Sequence[Batch]) -> Batch:
        """Records of several batches of one source, in the given order."""
        if not batches:
            raise ValueError("concat needs at least one batch")
        if len(batches) == 1:
            return batches[0]
        source = batches[0].source
        names = list(batches[0].columns)
        for other in batches[1:]:
            if other.source != source or list(other.columns) != names:
                raise ValueError(f"concat: batches of {source!r} differ in source or columns")
        ts = np.concatenate([b.ts for b in batches])
        return cls(
            source=source,
            ts=ts,
            partition=np.concatenate([b.partition for b in batches]),
            offset=np.concatenate([b.offset for b in batches]),
            columns={
                n: ts
                if all(b.columns[n] is b.ts for b in batches)
                else np.concatenate([b.columns[n] for b in batches])
                for n in names
            },
        )

    def rows(self) -> Iterator[dict[str, Any]]:
        """Each record as a dict of its payload (Python scalars), for the per-record paths."""
        names = list(self.columns)
        lists = [self.columns[n].tolist() for n in names]
        for values in zip(*lists, strict=True):
            yield dict(zip(names, values, strict=True))
