"""Session-window aggregation: per group, a session closes after `gap` ms without records.

A session spans `[first ts, last ts + gap)`. It fires when the watermark reaches its end, or
earlier when the group's next record (in merge order) arrives at or after that end. Per record,
which is fine for the sessions' use (no Nexmark query the benchmark runs needs them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamshift_engine.events.batch import Batch
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import AggregateSpec
from streamshift_engine.windows.assigners import SessionWindows
from streamshift_engine.windows.record_windows import Record, RecordWindowOperator


class SessionWindowAggregate(RecordWindowOperator):
    """`window_aggregate` over `session` windows."""

    def __init__(
        self,
        node_id: str,
        windows: SessionWindows,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, group_by, aggregates, (), keyed)
        self.gap = windows.gap
        self.sessions = KeyedRecordStore(self.record_fields)
        self.stores = {"sessions": self.sessions}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        for partition, group, record in self.records_of(batch):
            records = self.sessions.records(partition, group)
            if records and record[0] >= records[-1][0] + self.gap:
                self._close(partition, group, records)
            records.append(record)
        return self.take_results(None)

    def advance(self, watermark: int) -> list[Batch]:
        for (partition, group), records in sorted(self.sessions.groups.items(), key=_order):
            if records and records[-1][0] + self.gap <= watermark:
                self._close(partition, group, records)
                del self.sessions.groups[(partition, group)]
        return self.take_results(None)

    def _close(self, partition: int, group: tuple[Any, ...], records: list[Record]) -> None:
        start = int(records[0][0])
        end = int(records[-1][0]) + self.gap
        self.emit(partition, group, records, start, end)
        records.clear()


def _order(item: tuple[tuple[int, Any], list[Record]]) -> tuple[int, int, str]:
    """Close sessions by start time, then partition and group: the same order on any instance."""
    (partition, group), records = item
    return (int(records[0][0]) if records else 0, partition, repr(group))
