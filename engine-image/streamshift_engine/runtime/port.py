"""The worker's side of the protocols' port (`migration.port.InstancePort`, and `StatePort` for
the state-moving protocols): their roles, written once, run here on Kafka and S3 exactly as they
run in process on the in-memory log. A saved state goes to S3 through the worker's snapshots and
is adopted through `recovery`, which also serves the worker's own (re)start.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Any

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.migration.port import Position
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.runtime import recovery
from streamshift_engine.runtime.manifest import Manifest

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker


class WorkerPort:
    """`InstancePort` and `StatePort` over a worker: its instance, Kafka source and sink, and
    its snapshots in S3."""

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

    # `StatePort`: the state-moving protocols.

    @property
    def query(self) -> str:
        return self.worker.config.query

    def stop_at(self, offsets: Mapping[Position, int]) -> None:
        """The loop feeds nothing at or past a marker (`Worker.markers`) and pauses there."""
        self.worker.markers.update(offsets)

    def state_covers(self, partitions: Collection[int]) -> dict[Position, int]:
        return recovery.covered(self.worker, partitions)

    def save_state(self, partitions: Collection[int], migration: str) -> Future[Manifest]:
        return save(self.worker, partitions, migration)

    def export_state(self, partitions: Collection[int]) -> list[bytes | memoryview]:
        return self.worker.instance.snapshot_parts(partitions)

    def restore_saved(
        self, partitions: Collection[int], migration: str, saved: Any
    ) -> tuple[dict[Position, int], dict[str, Any]]:
        """The partitions' snapshots in S3 (`saved` is the origin's: the target finds them by
        partition, `manifest.choose`), unless the origin saved them for `migration` under
        another plan version."""
        return recovery.restore_saved(self.worker, partitions, migration)

    def fresh_instance(self, partitions: Collection[int]) -> Instance:
        """A new instance (built off the worker thread: the loop's own is in use), for a
        worker that holds no partitions (a target's replay suppresses all its output)."""
        held = self.worker.instance.assigned
        if held:
            raise ValueError(f"worker already holds partitions {sorted(held)}")
        return Instance(self.plan, partitions)

    def install(self, instance: Instance) -> None:
        worker = self.worker
        if worker.instance.assigned:
            raise ValueError(f"worker already holds partitions {sorted(worker.instance.assigned)}")
        worker.instance = instance

    def resume_from(self, offsets: Mapping[Position, int]) -> dict[Position, int]:
        return recovery.resume(self.worker, offsets)

    def stop(self) -> Future[Manifest] | None:
        return stop(self.worker)


def save(
    worker: Worker, partitions: Collection[int] | None, migration: str | None
) -> Future[Manifest]:
    """Commit, then snapshot (the upload finishes in the background; await the future). A
    periodic upload still running is waited for first, whatever its outcome."""
    worker.commit()
    if worker.upload is not None:
        wait([worker.upload])
    return worker.snapshot_async(partitions, migration)


def stop(worker: Worker) -> Future[Manifest] | None:
    """Final commit and snapshot; the loop ends once the upload is done. The snapshot leaves
    out the partitions a hand-off's target does not own yet (their origin's snapshots are
    theirs: a target's would be restored by a rolled-back origin as covering the most input)
    and those whose output a hand-off splits (`published`)."""
    held = set(worker.instance.assigned or ())
    kept = held - worker.taking_over() - worker.splitting()
    if kept:
        future: Future[Manifest] | None = save(worker, None if kept == held else kept, None)
    else:
        worker.commit()
        future = None
    worker.stopping = True
    worker.phase = "stopped"
    return future
