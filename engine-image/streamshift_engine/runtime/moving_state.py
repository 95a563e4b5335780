"""Moving state (seed 001, 4.1, Algorithm 2) between worker processes: the worker-thread steps.

1. Origin `pause` (`roles.pause`): stop feeding the moving partitions at the marker positions and
   drain to them (`cleanAccumulatedTuples`): what the watermark released is in the state, the
   rest stays in the log, which is the upstream buffer.
2. Origin `export` (`export`): the partitions' states with the positions they cover, each state
   listed by its state id (4.1.1, `plan_change.slots`); then the origin releases them. The bytes
   are the instance snapshot as taken, behind a short metadata header: no second encoding, and
   no copy on the origin (parts that view the state's arrays, written out one after the other;
   the header padded so the arrays stay 8-byte aligned). The target reads them into one buffer
   and restores its arrays as views of it (`Instance.restore(..., adopt=True)`): the state is
   copied once between the two instances, by the kernel.
3. Target `begin` (`adopt_matched`): the exports restore an instance of the origin's plan; every
   state of the target's plan that matches one by state id takes it: the whole state for the
   same plan (restored once: the two instances are one), else shared or moved per state
   (`state_recompute.move_matched`).
4. Target `recompute` (`recompute`): Algorithm 1 fills each unmatched state from its join's two
   states, bottom up. Those hold every tuple of the window before the marker, so no input is
   read again for it. The old instance, with its unmatched states, is dropped: safe (4.1.3), as
   the origin processed every tuple below the marker. The target then reads from the positions
   the state covers, replaying to the origin's committed ones with committed output suppressed
   (`recovery.resume`): the output equals the output without migration.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from streamshift_engine.migration import plan_change, state_recompute
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.runtime import recovery, roles
from streamshift_engine.state import codec

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker

KIND = "moving-state"
_LENGTH = struct.Struct("<I")  # an export: this length, the metadata (JSON), the instance snapshot


@dataclass
class Move:
    """A target's moving-state migration between `begin` and `recompute`."""

    partitions: frozenset[int]
    old_plan: Plan
    old: Instance
    new: Instance
    report: dict[str, Any]


def state_ids(plan: Plan) -> list[dict[str, Any]]:
    """Every state of `plan` with its state id (as JSON)."""
    return [
        {"state": f"{s.operator}/{s.store}", "id": orjson.loads(orjson.dumps(s.state_id))}
        for s in plan_change.slots(plan)
    ]


def export(worker: Worker, partitions: Collection[int]) -> tuple[bytes | memoryview, ...]:
    """The paused partitions' states by state id, with the positions they cover; then the
    origin releases them (commit, forget; their state is dropped after the answer). The
    export's bytes in parts, sent one after the other (joining them would copy the state once
    more, on the worker thread); the parts view arrays of the snapshot, not of the live state."""
    positions = roles.positions_of(worker, partitions)
    waiting = [
        f"{name}:{p}"
        for name, p in positions
        if (name, p) not in worker.markers or worker.consumed[(name, p)] < worker.markers[(name, p)]
    ]
    if waiting:
        raise ValueError(f"pause {', '.join(waiting)} at a marker before exporting its state")
    begin = time.perf_counter()
    state = worker.instance.snapshot_parts(partitions)
    meta: dict[str, Any] = {
        "kind": KIND,
        "query": worker.config.query,
        "plan_version": worker.config.plan_version,
        "partitions": sorted(partitions),
        "states": state_ids(worker.config.plan),
    }
    worker.release(partitions)
    meta["export_s"] = round(time.perf_counter() - begin, 3)  # snapshot and release
    header = orjson.dumps(meta)
    header += b" " * (-(_LENGTH.size + len(header)) % codec.ALIGN)  # JSON allows the spaces
    return _LENGTH.pack(len(header)), header, *state


def unpack(data: bytes | bytearray) -> tuple[dict[str, Any], memoryview]:
    """An export's metadata and the instance snapshot it carries (a view: no copy)."""
    if len(data) < _LENGTH.size:
        raise ValueError("not a moving-state export: too short")
    (length,) = _LENGTH.unpack_from(data)
    end = _LENGTH.size + length
    meta: dict[str, Any] = orjson.loads(data[_LENGTH.size : end])
    return meta, memoryview(data)[end:]


def adopt_matched(
    worker: Worker, exports: list[bytearray], partitions: Collection[int], old_plan: Plan
) -> Move:
    """Restore the origins' exports into an instance of `old_plan`, then give each matched
    state of the worker's plan its old state. The exports are handed over for good: the
    restored arrays view them. It builds new instances and reads only the worker's
    configuration and assigned partitions (none: `recompute`, on the worker thread, checks
    again before it runs them), so it may run off the worker thread."""
    if worker.instance.assigned:
        raise ValueError(f"worker already holds partitions {sorted(worker.instance.assigned)}")
    plan = worker.config.plan
    reason = None if plan == old_plan else plan_change.refusal(old_plan, plan)
    if reason is not None:
        raise ValueError(f"moving-state cannot carry {old_plan.name}'s states: {reason}")
    new = Instance(plan, partitions)
    old = new if plan == old_plan else Instance(old_plan, partitions)  # the same plan: one copy
    got: set[int] = set()
    begin, export_s = time.perf_counter(), 0.0
    for data in exports:
        meta, state = unpack(data)
        if meta.get("kind") != KIND or meta.get("query") != worker.config.query:
            raise ValueError("not a moving-state export of this query")
        if meta["states"] != state_ids(old_plan):
            raise ValueError("the origin's states are not those of the origin plan given")
        old.restore(state, adopt=True)
        got |= set(meta["partitions"])
        export_s += float(meta.get("export_s", 0.0))
    if got != set(partitions):
        raise ValueError(f"the origins exported partitions {sorted(got)}, not {sorted(partitions)}")
    shared, moved = len(plan_change.slots(plan)), 0
    if plan != old_plan:
        shared, moved = state_recompute.move_matched(old_plan, old, plan, new)
    restore_s = time.perf_counter() - begin
    matched = plan_change.matches(old_plan, plan)
    new_ids = {s.state_id for s in plan_change.slots(plan)}
    report = {
        "role": "target",
        "partitions": sorted(partitions),
        "state_bytes": sum(len(data) for data in exports),
        "shared": shared,
        "moved_bytes": moved,
        "export_s": round(export_s, 3),
        "restore_s": round(restore_s, 3),
        "matched": sorted(f"{op}/{store}" for op, store in matched),
        "unmatched": sorted(
            f"{s.operator}/{s.store}"
            for s in plan_change.slots(plan)
            if (s.operator, s.store) not in matched
        ),
        "discarded": sorted(
            f"{s.operator}/{s.store}"
            for s in plan_change.slots(old_plan)
            if s.state_id not in new_ids
        ),
    }
    worker.phase = "moving-state"
    return Move(frozenset(partitions), old_plan, old, new, report)


def recompute(worker: Worker, move: Move) -> dict[str, Any]:
    """Algorithm 1 for the unmatched states, the old instance dropped, then run from the
    positions the state covers."""
    if worker.instance.assigned:
        raise ValueError(f"worker already holds partitions {sorted(worker.instance.assigned)}")
    plan = worker.config.plan
    recomputed = 0
    if plan != move.old_plan:
        recomputed = state_recompute.recompute_unmatched(move.old_plan, plan, move.new)
        move.new.carry_positions(move.old)
    worker.instance = move.new
    read_again = recovery.resume(worker, move.partitions)
    return {
        "role": "target",
        "partitions": sorted(move.partitions),
        "recomputed_tuples": recomputed,
        "read_again": sum(read_again.values()),
        "positions": {f"{n}:{p}": o for (n, p), o in sorted(worker.instance.covered().items())},
    }
