"""Parallel track (seed 001) between worker processes, with the old/new split of
`migration.marking` and the old-box check of `migration.monitor`.

1. Origin `split`: the tuples it has released into its plan (event time before its watermark
   `A`) are old. From then on it emits, for the moving partitions, only results that combine an
   old tuple (`min_ts < A`), and it reports `A` with the positions from which the target must
   read: the start of the fetched batch holding the first tuple at or after `A - readback(plan)`
   (windows straddling `A` must be seen whole to be recognised as old; `Worker.starts` indexes
   where each fetched batch began).
2. Target `begin` (protocol `parallel-track`, with `split` and `offsets`): it reads the moving
   partitions from those positions with empty state, drops input before `A - readback`, emits
   only results of new tuples alone (`min_ts >= A`) and holds them.
3. The origin releases (committing) the moving partitions once its plan holds no old tuple
   (`monitor.old_box_finished`); then `release-output` on the target makes its held results
   visible after the origin's last one.

The seed holds the new box's results until the old box is gone, to keep the output in timestamp
order (4.2.3). That old box lives until the origin's watermark passes the last window holding an
old tuple, about one window after `A`, while the target's first results are due a slide after
`A`: on a sliding window the output would pause for nearly a window. So, while it holds,
`release-until` with the origin's watermark `W` makes the held results that are due by `W`
visible at once, and those the target computes later that are due by `W` go out with its next
output: the origin has emitted every result of a window ending by `W`, so the output stays in
window order (by the origin's commit interval at most, none when `W` is the watermark its last
commit carried: `track_follow`), and no result moves between sides.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration import marking, monitor
from streamshift_engine.runtime.output_split import keep_own_side, release_held
from streamshift_engine.runtime.source import Position

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker


@dataclass
class Track:
    """One parallel-track migration as seen by one worker (origin or target)."""

    migration: str
    role: str
    partitions: frozenset[int]
    split: int
    holding: bool = False
    held: list[ResultBatch] = field(default_factory=list)
    done: bool = False
    until: int | None = None  # the origin's watermark last given to `release_until`

    def report(self) -> dict[str, Any]:
        return {
            "migration": self.migration,
            "role": self.role,
            "split": self.split,
            "held": sum(len(r) for r in self.held),
            "done": self.done,
        }


def split_origin(worker: Worker, migration: str, partitions: Collection[int]) -> dict[str, Any]:
    plan = worker.config.plan
    refusal = marking.refusal(plan)
    if refusal:
        raise ValueError(f"parallel-track cannot move this plan: {refusal}")
    split = worker.instance.watermark()
    if split is None:
        raise ValueError("the origin has no watermark yet: nothing is old, nothing to split")
    floor = split - marking.readback(plan)
    offsets = {}
    for name in [spec.name for spec in plan.inputs]:
        for p in sorted(partitions):
            offsets[f"{name}:{p}"] = start_offset(worker.starts.get((name, p), []), floor)
    worker.track = Track(migration, "origin", frozenset(partitions), split)
    worker.phase = "parallel-track"
    return {**worker.track.report(), "offsets": offsets}


def start_offset(starts: list[tuple[int, int]], floor: int) -> int:
    """The start of the last indexed batch whose first tuple is before `floor` (0 when none:
    the partition is read from its beginning)."""
    index = bisect.bisect_left(starts, (floor, -1))
    return starts[index - 1][1] if index else 0


def begin_target(
    worker: Worker,
    migration: str,
    partitions: Collection[int],
    split: int,
    offsets: Mapping[str, int],
) -> dict[str, Any]:
    if worker.instance.assigned:
        raise ValueError("a parallel-track target must hold no partitions yet")
    positions: dict[Position, int] = {}
    for key, offset in offsets.items():
        name, _, partition = key.rpartition(":")
        positions[(name, int(partition))] = int(offset)
    wanted = {(s.name, p) for s in worker.config.plan.inputs for p in partitions}
    if set(positions) != wanted:
        raise ValueError("'offsets' must name every input of every moving partition")
    worker.instance.assigned = set(partitions)
    worker.consumed.update(positions)
    worker.source.seek(positions)
    worker.track = Track(migration, "target", frozenset(partitions), split, holding=True)
    worker.phase = "holding-output"
    return worker.track.report()


def release_output(worker: Worker) -> dict[str, Any]:
    state = _target(worker)
    release_held(worker, state)
    return state.report()


def release_until(worker: Worker, until: int) -> dict[str, Any]:
    """Emit and commit the held results due by the origin's watermark `until`; hold the rest."""
    state = _target(worker)
    if state.holding:
        state.until = max(until, state.until if state.until is not None else until)
        now, state.held = due_by(state.held, state.until)
        if now:
            worker.emit_results(now)
            worker.commit()
    return state.report()


def _target(worker: Worker) -> Track:
    state = worker.track
    if state is None or state.role != "target":
        raise ValueError("this worker is not a parallel-track target")
    return state


def due_by(held: list[ResultBatch], until: int) -> tuple[list[ResultBatch], list[ResultBatch]]:
    """The held results due by watermark `until` (at their window's end, or after their newest
    tuple without a window) and the rest, in their order."""
    due = [np.maximum(b.window_end, b.max_ts + 1) <= until for b in held]
    now = [r for b, d in zip(held, due, strict=True) if len(r := b.take(d))]
    later = [r for b, d in zip(held, due, strict=True) if len(r := b.take(~d))]
    return now, later


def intercept(worker: Worker, batches: dict[Position, Batch]) -> dict[Position, Batch]:
    """Target input: drop what precedes `A - readback` (no window holding it reaches `A`)."""
    state = worker.track
    if state is None or state.role != "target" or state.done:
        return batches
    floor = state.split - marking.readback(worker.config.plan)
    return {p: b.take(b.ts >= floor) if p[1] in state.partitions else b for p, b in batches.items()}


def output(worker: Worker, results: list[ResultBatch]) -> list[ResultBatch]:
    """The origin keeps old results of the moving partitions, the target new ones (held)."""
    state = worker.track
    if state is None or (state.role == "origin" and state.done):
        return results
    split = state.split
    kept = keep_own_side(results, state.partitions, lambda b: b.min_ts < split, state.role)
    if state.role == "target" and state.holding:
        if state.until is None:
            state.held += kept
            return []
        kept, later = due_by(kept, state.until)  # due already: out with this step's output
        state.held += later
    return kept


def after_emit(worker: Worker) -> None:
    """The origin hands the moving partitions over once its plan holds no old tuple."""
    state = worker.track
    if state is None or state.role != "origin" or state.done:
        return
    if monitor.old_box_finished(worker.instance, state.split):
        worker.release(state.partitions)
        state.done = True
