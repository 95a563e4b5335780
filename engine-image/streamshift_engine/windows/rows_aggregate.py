"""Tuple-based window aggregation (`ROWS size`, sliding by `slide` tuples), vectorised.

Per group, the window holds the last `size` tuples in the deterministic merge order; after
every `slide`-th tuple of the group it emits the aggregate over the window (fewer than `size`
tuples while the group fills up, as CQL's `[Rows n]` does). A result's `row` key is the identity
of the tuple that closed the window; `window_start`/`window_end` are the event time of the
window's oldest tuple and one past its newest, the bounds equation (2)
of seed 000 (Pham et al., UniMiCo) works with.

State per group: the `window` store keeps its last `size` tuples `(ts, min_ts, max_ts, identity,
*values)`, the `seen` store its tuple count. A batch lays each group's kept tuples before its new
ones (`record_windows.Layout`); the windows the new tuples close are runs of at most `size`
positions, aggregated with one `reduceat` per field, and emitted in the order of their closing
tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    WINDOW_END,
    WINDOW_START,
    identities_at,
    max_ts,
    min_ts,
    stream,
)
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import AggregateSpec
from streamshift_engine.windows.assigners import RowsWindows
from streamshift_engine.windows.record_windows import (
    Layout,
    Record,
    RecordWindowOperator,
    layout,
    run_sums,
    runs,
)

IDENTITY = 3


class RowsWindowAggregate(RecordWindowOperator):
    """`window_aggregate` over `rows` windows."""

    def __init__(
        self,
        node_id: str,
        windows: RowsWindows,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        upstream_keys: Sequence[str],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, group_by, aggregates, keyed)
        self.windows = windows
        self.upstream_keys = tuple(upstream_keys)
        self.record_fields = ("ts", "min_ts", "max_ts", "identity", *self.value_fields)
        self.window = KeyedRecordStore(self.record_fields)
        self.seen = KeyedRecordStore(("count",))
        self.stores = {"window": self.window, "seen": self.seen}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        size, slide = self.windows.size, self.windows.slide
        grouping, places = self.groups_of(batch)
        kept = [self.window.records(p, key) for p, key in places]
        seen = [self.seen.records(p, key) for p, key in places]
        before = np.array([s[-1][0] if s else 0 for s in seen], np.int64)
        lay = layout(grouping, np.array([len(k) for k in kept], np.intp))
        flat = [record for records in kept for record in records]
        columns = {
            name: lay.gather([r[self.record_fields.index(name)] for r in flat], column)
            for name, column in self._batch_columns(batch).items()
        }
        count = before[lay.group] + np.arange(len(lay)) - lay.starts[lay.group]
        count -= np.array([len(k) for k in kept], np.int64)[lay.group] - 1
        closing = np.flatnonzero(~lay.held & (count % slide == 0))
        closing = closing[np.argsort(lay.source[closing], kind="stable")]
        results = self._windows(batch, lay, flat, columns, closing, size)
        for index in range(len(places)):
            seen[index][:] = [(int(before[index]) + int(grouping.sizes[index]),)]
        self._keep(batch, lay, flat, columns, kept, size)
        return results

    def _batch_columns(self, batch: Batch) -> dict[str, Any]:
        """The stored fields of the batch's records but their identities (built only for the
        tuples that need them)."""
        columns = {"ts": batch.ts, "min_ts": min_ts(batch), "max_ts": max_ts(batch)}
        columns.update({f: batch.columns[f] for f in self.value_fields})
        return columns

    def _identities(self, batch: Batch, lay: Layout, flat: list[Record], at: Any) -> Any:
        """Identities of the tuples at layout positions `at`."""
        source, held = lay.source[at], lay.held[at]
        found = np.empty(len(source), dtype=object)
        found[~held] = identities_at(batch, self.upstream_keys, source[~held])
        found[held] = [flat[s][IDENTITY] for s in source[held].tolist()]
        return found

    def _windows(
        self,
        batch: Batch,
        lay: Layout,
        flat: list[Record],
        columns: dict[str, Any],
        closing: Any,
        size: int,
    ) -> list[Batch]:
        if len(closing) == 0:
            return []
        lo = np.maximum(lay.starts[lay.group[closing]], closing - size + 1)
        positions, offsets = runs(lo, closing)
        values: dict[str, Any] = {}
        for aggregate in self.aggregates:
            length = closing - lo + 1
            if aggregate.function == "count":
                values[aggregate.name] = length.astype(np.int64)
                continue
            column = columns[aggregate.field or ""][positions]
            if aggregate.function in ("sum", "avg"):
                total = run_sums(column, offsets)
                values[aggregate.name] = total if aggregate.function == "sum" else total / length
            else:
                reducer = np.minimum if aggregate.function == "min" else np.maximum
                values[aggregate.name] = reducer.reduceat(column, offsets)
        rows = lay.source[closing]
        result = {g: batch.columns[g][rows] for g in self.group_by}
        result.update(values)
        identity = np.empty(len(closing), dtype=object)
        identity[:] = self._identities(batch, lay, flat, closing)
        result["row"] = identity
        result[WINDOW_START] = columns["ts"][lo]
        result[WINDOW_END] = columns["ts"][closing] + 1
        result[MIN_TS] = np.minimum.reduceat(columns["min_ts"][positions], offsets)
        result[MAX_TS] = np.maximum.reduceat(columns["max_ts"][positions], offsets)
        partition = self.state_partition(batch)[rows]
        return [stream(self.id, columns["ts"][closing], partition, result)]

    def _keep(
        self,
        batch: Batch,
        lay: Layout,
        flat: list[Record],
        columns: dict[str, Any],
        kept: list[list[Record]],
        size: int,
    ) -> None:
        """Store each group's last `size` tuples."""
        length = np.minimum(lay.ends - lay.starts, size)
        tail, _ = runs(lay.ends - length, lay.ends - 1)
        fields: list[list[Any]] = []
        for name in self.record_fields:
            if name == "identity":
                fields.append(self._identities(batch, lay, flat, tail))
            else:
                fields.append(columns[name][tail].tolist())
        records = list(zip(*fields, strict=True))
        bounds = np.cumsum(length).tolist()
        for index, end in enumerate(bounds):
            kept[index][:] = records[end - int(length[index]) : end]
