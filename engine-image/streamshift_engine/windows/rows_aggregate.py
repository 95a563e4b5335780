"""Tuple-based window aggregation (`ROWS size`, sliding by `slide` tuples), per record.

Per group, the window holds the last `size` tuples in the deterministic merge order; after
every `slide`-th tuple of the group it emits the aggregate over the window (fewer than `size`
tuples while the group fills up, as CQL's `[Rows n]` does). A result's `row` key is the identity
of the tuple that closed the window; `window_start`/`window_end` are the event time of the
window's oldest tuple and one past its newest, the bounds seed 000's equation (2) works with.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamshift_engine.events.batch import Batch
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import AggregateSpec
from streamshift_engine.windows.assigners import RowsWindows
from streamshift_engine.windows.record_windows import RecordWindowOperator


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
        super().__init__(node_id, group_by, aggregates, upstream_keys, keyed)
        self.windows = windows
        self.window = KeyedRecordStore(self.record_fields)
        self.seen = KeyedRecordStore(("count",))
        self.stores = {"window": self.window, "seen": self.seen}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        size, slide = self.windows.size, self.windows.slide
        for partition, group, record in self.records_of(batch):
            records = self.window.records(partition, group)
            records.append(record)
            if len(records) > size:
                del records[0]
            seen = self.seen.records(partition, group)
            count = (seen.pop()[0] if seen else 0) + 1
            seen.append((count,))
            if count % slide == 0:
                self.emit(partition, group, records, records[0][0], record[0] + 1)
        return self.take_results("row")
