"""The marker actions of the state-moving protocols, and the worker's status.

State-transfer and savepoint-restart (seeds 003, 004: Kafka is the upstream buffer): the origin
pauses the moving partitions at marker positions, commits, snapshots them for the migration and
releases them; the target (started with `STREAMSHIFT_START=hold`) begins by adopting them, which
restores that snapshot and replays up to the positions the origin committed. `stop` commits and
ends the worker after a final snapshot (savepoint-restart's origin).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future, wait
from typing import Any

from streamshift_engine.runtime import recovery
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.manifest import Manifest
from streamshift_engine.runtime.source import Position


def positions_of(worker: Worker, partitions: Collection[int]) -> list[Position]:
    return [(spec.name, p) for spec in worker.config.plan.inputs for p in sorted(partitions)]


def pause(
    worker: Worker, partitions: Collection[int], marker: Mapping[Position, int] | None
) -> dict[str, Any]:
    """Stop feeding `partitions` at `marker` (default: where they are now); report progress.
    Repeating the call with the same migration reports whether every marker is reached."""
    for position in positions_of(worker, partitions):
        if position not in worker.consumed:
            raise ValueError(f"partition {position[1]} is not held by this worker")
        if position not in worker.markers:
            at = worker.consumed[position] if marker is None else marker.get(position)
            worker.markers[position] = worker.consumed[position] if at is None else at
    reached = all(worker.consumed[p] >= worker.markers[p] for p in positions_of(worker, partitions))
    worker.phase = "paused" if reached else "pausing"
    return {
        "paused": reached,
        "positions": _table(worker.markers, partitions),
        "again": not reached,
    }


def snapshot(
    worker: Worker, partitions: Collection[int] | None, migration: str | None
) -> Future[Manifest]:
    """Commit, then snapshot (the upload finishes in the background; await the future). A
    periodic upload still running is waited for first, whatever its outcome."""
    worker.commit()
    if worker.upload is not None:
        wait([worker.upload])
    return worker.snapshot_async(partitions, migration)


def release(worker: Worker, partitions: Collection[int]) -> dict[str, Any]:
    """Hand `partitions` over: commit, then forget their state, positions and markers."""
    worker.release(partitions)
    return {"released": sorted(partitions)}


def begin_target(worker: Worker, partitions: Collection[int]) -> dict[str, Any]:
    return recovery.adopt(worker, partitions)


def stop(worker: Worker) -> Future[Manifest]:
    """Final commit and snapshot; the loop ends once the upload is done."""
    future = snapshot(worker, None, None)
    worker.stopping = True
    worker.phase = "stopped"
    return future


def status(worker: Worker) -> dict[str, Any]:
    elapsed = max(time_since(worker.started), 1e-9)
    last = worker.last_snapshot
    return {
        "pod": worker.config.pod_name,
        "phase": worker.phase,
        "partitions": sorted(worker.instance.assigned or ()),
        "offsets": _table(worker.consumed, None),
        "watermark": worker.instance.watermark(),
        "committed_watermark": worker.committed_watermark,
        "throughput": round(worker.counts["events_in"] / elapsed, 1),
        "lag": worker.lag,
        "state_bytes": worker.instance.state_bytes(),
        "counts": dict(worker.counts),
        "roles": {migration: role.report() for migration, role in worker.roles.items()},
        "last_snapshot": None
        if last is None
        else {"key": last.object_key, "bytes": last.size, "created": last.created},
    }


def time_since(start: float) -> float:
    return time.time() - start


def _table(table: Mapping[Position, int], partitions: Collection[int] | None) -> dict[str, int]:
    return {
        f"{name}:{p}": offset
        for (name, p), offset in sorted(table.items())
        if partitions is None or p in partitions
    }
