"""Shared machinery of the per-group record windows (tuple-based and session), vectorised.

Both keep per (partition, group) a little state in a `KeyedRecordStore` (the last tuples of a
`ROWS` window, the running partials of an open session). A batch is processed in one pass with
numpy: its records are grouped by (partition, group), and each group's held state rows are laid
out in front of its new records in merge order (`Layout`), group after group, so that a window
is a contiguous run of positions. Window aggregates are then one `ufunc.reduceat` per partial
over the runs; sums of floats (whose rounding depends on the order of the additions) are Python
`sum`s per run instead, left to right in merge order as a per-record loop adds them, so a result
does not depend on where batches were cut. Python touches each group once per batch, to read
and write its state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import Grouping, group
from streamshift_engine.windows.aggregates import AggregateSpec

Record = tuple[Any, ...]
Index = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Layout:
    """Positions of a batch's groups: per group its `held` state rows, then its batch records
    in merge order. `source` indexes the held rows (where `held`) or the batch."""

    group: Index
    held: npt.NDArray[np.bool_]
    source: Index
    starts: Index
    ends: Index

    def __len__(self) -> int:
        return len(self.group)

    def gather(self, held_values: Sequence[Any], column: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """One column over all positions: `held_values` (one per held row, in layout order)
        and the batch `column`."""
        pool = _joined(held_values, column)
        return pool[np.where(self.held, self.source, self.source + len(held_values))]


def layout(grouping: Grouping, held: npt.NDArray[np.intp]) -> Layout:
    """The layout of a batch grouped by `grouping`, with `held[g]` state rows before group g."""
    sizes = grouping.sizes
    block = held + sizes
    ends = np.cumsum(block)
    starts = ends - block
    groups = np.repeat(np.arange(grouping.count), block)
    position = np.arange(int(ends[-1]) if len(ends) else 0) - starts[groups]
    is_held = position < held[groups]
    held_at = (np.cumsum(held) - held)[groups] + position
    record_at = grouping.starts[groups] + position - held[groups]
    record = grouping.order[np.clip(record_at, 0, max(len(grouping.order) - 1, 0))]
    source = np.where(is_held, held_at, record)
    return Layout(groups, is_held, source.astype(np.intp), starts, ends)


def _joined(held_values: Sequence[Any], column: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if column.dtype == object:
        pool = np.empty(len(held_values) + len(column), dtype=object)
        pool[: len(held_values)] = list(held_values)
        pool[len(held_values) :] = column
        return pool
    return np.concatenate([np.array(held_values, dtype=column.dtype), column])


def runs(lo: Index, hi: Index) -> tuple[Index, Index]:
    """Positions of the runs `[lo, hi]` (inclusive) back to back, and where each run starts."""
    lengths = hi - lo + 1
    offsets = np.cumsum(lengths) - lengths
    flat = np.repeat(lo - offsets, lengths) + np.arange(int(lengths.sum()))
    return flat.astype(np.intp), offsets.astype(np.intp)


def run_sums(values: npt.NDArray[Any], offsets: Index) -> npt.NDArray[Any]:
    """The sum of each run of `values` starting at `offsets`: exact integer sums by numpy,
    others added left to right (Python's `sum`)."""
    if values.dtype.kind in "biu":
        return np.add.reduceat(values, offsets)
    items = values.tolist()
    bounds = zip(offsets.tolist(), [*offsets[1:].tolist(), len(items)], strict=True)
    sums: npt.NDArray[Any] = python_column([sum(items[start:stop]) for start, stop in bounds])
    return sums


class RecordWindowOperator(Operator):
    """Base of the per-group record windows: grouping and state access."""

    def __init__(
        self,
        node_id: str,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.group_by = tuple(group_by)
        self.aggregates = tuple(aggregates)
        self.value_fields = tuple(dict.fromkeys(a.field for a in aggregates if a.field))

    def groups_of(self, batch: Batch) -> tuple[Grouping, list[tuple[int, tuple[Any, ...]]]]:
        """The batch's grouping by (state partition, group) and each group's state place."""
        partition = self.state_partition(batch)
        keys = [batch.columns[g] for g in self.group_by]
        grouping = group([partition, *keys])
        first = grouping.first
        values = [column[first].tolist() for column in keys]
        groups = list(zip(*values, strict=True)) if values else [()] * grouping.count
        return grouping, list(zip(partition[first].tolist(), groups, strict=True))


def python_column(values: list[Any]) -> Any:
    """A numpy column of Python values: native dtype for numbers, object for the rest."""
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return array
    result = np.empty(len(values), dtype=object)
    result[:] = values
    return result
