"""Grouping rows by the values of several columns, vectorised: the core of every keyed operator.

Columns are combined into one integer code per row (integer columns arithmetically, in mixed
radix; other columns through their sorted uniques). When the codes span a small range they are
made dense by counting (no sort); the rows are then ordered by group with a stable sort, which
numpy does as a radix sort when there are fewer than 65,536 groups. Groups are numbered in sorted
key order, so results come out in the same order on any instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_RADIX_SORT_GROUPS = 1 << 16
_LARGE_SPAN = 1 << 62


@dataclass(frozen=True)
class Grouping:
    """`codes`: each row's group (0..count-1); `order`: rows sorted by group, stably;
    `starts`: where each group begins in `order`."""

    codes: npt.NDArray[np.int64]
    count: int
    order: npt.NDArray[np.intp]
    starts: npt.NDArray[np.intp]

    @property
    def first(self) -> npt.NDArray[np.intp]:
        """The first row (in input order) of each group."""
        return self.order[self.starts]

    @property
    def sizes(self) -> npt.NDArray[np.intp]:
        sizes: npt.NDArray[np.intp] = np.diff(np.append(self.starts, len(self.order)))
        return sizes


def _combined(arrays: Sequence[npt.NDArray[Any]], length: int) -> tuple[npt.NDArray[np.int64], int]:
    codes = np.zeros(length, np.int64)
    span = 1
    for array in arrays:
        integer = array.dtype.kind in "biu"
        low = int(array.min()) if integer else 0
        if integer and int(array.max()) - low < 2**31:
            digits, radix = array.astype(np.int64) - low, int(array.max()) - low + 1
        else:
            _, inverse = np.unique(array, return_inverse=True)
            digits, radix = inverse.astype(np.int64), int(inverse.max()) + 1
        if span * radix >= _LARGE_SPAN:
            _, codes = np.unique(codes, return_inverse=True)
            span = int(codes.max()) + 1
        codes = codes * radix + digits
        span *= radix
    return codes, span


def group(arrays: Sequence[npt.NDArray[Any]]) -> Grouping:
    """Group the rows of equal values in all `arrays` (at least one array)."""
    length = len(arrays[0])
    if length == 0:
        empty = np.empty(0, np.intp)
        return Grouping(np.empty(0, np.int64), 0, empty, empty)
    combined, span = _combined(arrays, length)
    if span > max(4 * length, 1 << 16):
        return _sorted_grouping(combined)
    counts = np.bincount(combined, minlength=span)
    present = np.flatnonzero(counts)
    dense = np.zeros(span, np.int64)
    dense[present] = np.arange(len(present))
    codes, count = dense[combined], len(present)
    keys = codes.astype(np.uint16) if count < _RADIX_SORT_GROUPS else codes
    order = np.argsort(keys, kind="stable")
    sizes = counts[present]
    starts = (np.cumsum(sizes) - sizes).astype(np.intp)
    return Grouping(codes, count, order, starts)


def _sorted_grouping(combined: npt.NDArray[np.int64]) -> Grouping:
    """Grouping of widely spread codes with one stable sort."""
    order = np.argsort(combined, kind="stable")
    ordered = combined[order]
    boundary = np.ones(len(ordered), dtype=bool)
    boundary[1:] = ordered[1:] != ordered[:-1]
    codes = np.empty(len(combined), np.int64)
    codes[order] = np.cumsum(boundary) - 1
    starts = np.flatnonzero(boundary)
    return Grouping(codes, len(starts), order, starts)


def group_codes(arrays: Sequence[npt.NDArray[Any]]) -> tuple[npt.NDArray[np.int64], int]:
    """Dense group numbers (in sorted key order) and the number of groups."""
    grouping = group(arrays)
    return grouping.codes, grouping.count
