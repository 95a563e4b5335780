"""The worker's status and its commands outside any migration: a snapshot now, stop.

The protocols' actions are their roles' (`migration.*_roles`, registered in `actions`); the
state-moving ones reach the worker through its port (`runtime.port`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any

from streamshift_engine.runtime import port
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.manifest import Manifest
from streamshift_engine.runtime.source import Position


def snapshot(
    worker: Worker, partitions: Collection[int] | None, migration: str | None
) -> Future[Manifest]:
    """Commit, then snapshot (`POST /v1/snapshot`; the upload finishes in the background)."""
    return port.save(worker, partitions, migration)


def stop(worker: Worker) -> Future[Manifest] | None:
    """Final commit and snapshot; the loop ends once the upload is done (SIGTERM)."""
    return port.stop(worker)


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
        "load": worker.load.report(),
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
