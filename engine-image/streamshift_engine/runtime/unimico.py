"""UniMiCo (seed 000) between worker processes, with the arithmetic of `migration.timestamps`
and the output split of `migration.handoff` (time-controlled plans; tuple-controlled ones are
refused here).

1. Target `begin` (protocol `unimico`): it reads the moving partitions from the log end,
   remembers those connect offsets, and probes the first event time on each (input, partition)
   without feeding it; `ts_start` is their maximum (seed 000 3.1.1, multiple inputs).
2. Origin `handoff` with `ts_start`: it computes the migration timestamp (equation 1) and the
   activation `A`, keeps only results of the moving partitions whose split time is below `A`,
   and releases those partitions once its watermark passes the end of its last window before
   `A` (`finish_horizon`).
3. Target `activate` with `A`: it re-reads from the connect offsets (Kafka is the buffer), drops
   input older than `A - upstream_horizon`, keeps only results with split time from `A` on and
   holds them until `release-output`, sent once the origin has committed its last result.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration import handoff, timestamps
from streamshift_engine.plan.model import Plan
from streamshift_engine.runtime.output_split import keep_own_side, release_held
from streamshift_engine.runtime.source import Position

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker


@dataclass
class Handoff:
    """One UniMiCo hand-off as seen by one worker (origin or target)."""

    migration: str
    role: str
    partitions: frozenset[int]
    activation: int | None = None
    probe: dict[Position, int | None] = field(default_factory=dict)
    connect: dict[Position, int] = field(default_factory=dict)
    holding: bool = False
    held: list[ResultBatch] = field(default_factory=list)
    done: bool = False

    def ts_start(self) -> int | None:
        values = list(self.probe.values())
        if not values or any(v is None for v in values):
            return None
        return max(v for v in values if v is not None)

    def report(self) -> dict[str, Any]:
        return {
            "migration": self.migration,
            "role": self.role,
            "ts_start": self.ts_start(),
            "activation": self.activation,
            "held": sum(len(r) for r in self.held),
            "done": self.done,
        }


def begin_target(worker: Worker, migration: str, partitions: Collection[int]) -> dict[str, Any]:
    refusal = handoff.time_bounded_refusal(worker.config.plan)
    if refusal or handoff.tuple_controlled(worker.config.plan):
        raise ValueError(f"unimico cannot move this plan: {refusal or 'tuple-controlled'}")
    if worker.instance.assigned:
        raise ValueError("a unimico target must hold no partitions yet")
    positions = [(s.name, p) for s in worker.config.plan.inputs for p in sorted(partitions)]
    ends = worker.source.end_offsets(positions)
    worker.instance.assigned = set(partitions)
    worker.consumed.update(ends)
    worker.source.seek(ends)
    worker.handoff = Handoff(
        migration, "target", frozenset(partitions), probe=dict.fromkeys(ends), connect=ends
    )
    worker.phase = "probing"
    return worker.handoff.report()


def handoff_origin(
    worker: Worker, migration: str, partitions: Collection[int], ts_start: int
) -> dict[str, Any]:
    plan = worker.config.plan
    start = ts_start + handoff.upstream_horizon(plan)
    slide = handoff.grid_slide(plan)
    window = plan.controlling_window
    size = window.size if window is not None and window.kind == "time" else 1
    watermark = worker.instance.watermark()
    if watermark is None:
        last = handoff.align(plan, -size - slide)
    else:
        last = timestamps.last_fired_window_start(watermark, size, slide)
    ts_mi = timestamps.time_migration_timestamp(start, last, slide)
    activation = timestamps.activation_timestamp(ts_mi, slide)
    worker.handoff = Handoff(migration, "origin", frozenset(partitions), activation=activation)
    worker.phase = "handing-off"
    return {**worker.handoff.report(), "ts_mi": ts_mi}


def activate(worker: Worker, activation: int) -> dict[str, Any]:
    state = _mine(worker, "target")
    if state.activation is None:
        state.activation = activation
        state.holding = True
        worker.consumed.update(state.connect)
        worker.source.seek(state.connect)
        worker.phase = "holding-output"
    return state.report()


def release_output(worker: Worker) -> dict[str, Any]:
    state = _mine(worker, "target")
    release_held(worker, state)
    return state.report()


def _mine(worker: Worker, role: str) -> Handoff:
    if worker.handoff is None or worker.handoff.role != role:
        raise ValueError(f"this worker is not a unimico {role}")
    return worker.handoff


def intercept(worker: Worker, batches: dict[Position, Batch]) -> dict[Position, Batch]:
    """Target input: probe first event times (nothing fed), later drop what precedes the
    upstream horizon of the activation."""
    state = worker.handoff
    if state is None or state.role != "target" or state.done:
        return batches
    if state.activation is None:
        for position, batch in batches.items():
            if position in state.probe and state.probe[position] is None and len(batch):
                state.probe[position] = int(batch.ts[0])
        if state.ts_start() is not None:
            worker.source.pause(state.probe)
        return {}
    floor = state.activation - handoff.upstream_horizon(worker.config.plan)
    return {p: b.take(b.ts >= floor) if p[1] in state.partitions else b for p, b in batches.items()}


def output(worker: Worker, results: list[ResultBatch]) -> list[ResultBatch]:
    """Split the moving partitions' results at the activation; a target holds its share."""
    state = worker.handoff
    if state is None or state.activation is None:
        return results
    activation = state.activation
    kept = keep_own_side(
        results, state.partitions, lambda b: handoff.split_time(b) < activation, state.role
    )
    if state.role == "target" and state.holding:
        state.held += kept
        return []
    return kept


def after_emit(worker: Worker) -> None:
    """The origin releases (committing) the moving partitions once every result before `A`
    is out."""
    state = worker.handoff
    if state is None or state.role != "origin" or state.done or state.activation is None:
        return
    watermark = worker.instance.watermark()
    if watermark is not None and watermark > state.activation + finish_horizon(worker.config.plan):
        worker.release(state.partitions)
        state.done = True


def finish_horizon(plan: Plan) -> int:
    """Event time after `A` by which the origin has emitted every result with a split time below
    `A`. When every window is a time window: the end of the controlling window that starts last
    before `A` (the pipeline fires windows in plan order on each watermark, upstream results
    reaching the controlling window in the same advance, so that window fires once the watermark
    reaches its end); otherwise `handoff.horizon`, every window's size on the path."""
    found = handoff.windows(plan)
    control = plan.controlling_window
    if control is None or not found or any(w.kind != "time" for w in found):
        return handoff.horizon(plan)
    return control.size - control.slide + 1
