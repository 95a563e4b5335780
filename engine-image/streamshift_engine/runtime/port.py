"""The worker's side of the protocols' port (`migration.port.InstancePort`): their roles, written
once, run here on Kafka and S3 exactly as they run in process on the in-memory log.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.migration.port import Position
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan.model import Plan

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker


class WorkerPort:
    """`InstancePort` over a worker: its instance, Kafka source and sink."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    @property
    def plan(self) -> Plan:
        return self.worker.config.plan

    @property
    def pipeline(self) -> Pipeline:
        return self.worker.instance.pipeline

    def owned(self) -> frozenset[int]:
        return frozenset(self.worker.instance.assigned or ())

    def watermark(self) -> int | None:
        return self.worker.instance.watermark()

    def read_back_offsets(self, positions: Collection[Position], ts: int) -> dict[Position, int]:
        """The start of the first fetched batch (`Worker.starts`, the largest event time read
        up to each batch's end) that reached `ts`; where none did, the position now; where the
        index no longer goes back that far, the partition's beginning."""
        worker = self.worker
        offsets = {}
        for position in positions:
            starts = worker.starts.get(position, [])
            index = bisect.bisect_left(starts, (ts, -1))
            if index < len(starts):
                offsets[position] = starts[index][1] if index else 0
            else:
                offsets[position] = worker.consumed.get(position, 0)
        return offsets

    def end_offsets(self, positions: Collection[Position]) -> dict[Position, int]:
        return self.worker.source.end_offsets(positions)

    def read_from(self, offsets: Mapping[Position, int]) -> None:
        worker = self.worker
        worker.instance.assigned = set(worker.instance.assigned or ()) | {p for _, p in offsets}
        worker.consumed.update(offsets)
        worker.source.seek(offsets)

    def stop_reading(self, positions: Collection[Position]) -> None:
        self.worker.source.pause(positions)

    def positions_read(self) -> dict[Position, int]:
        return dict(self.worker.consumed)

    def hand_over(self, partitions: Collection[int]) -> None:
        self.worker.release(partitions)

    def emit(self, results: list[ResultBatch]) -> None:
        self.worker.emit_results(results)
        self.worker.commit()

    def send_dead_letters(self, letters: list[DeadLetter]) -> None:
        self.worker.send_dead_letters(letters)
