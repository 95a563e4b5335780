"""Parallel track's roles (seed 001 (Zhu et al., Dynamic Plan Migration), section 4.2, Algorithm 3),
written once for both drivers: the old/new split of `marking`, the old-box check of `monitor`
(`Monitor_Old_Box`, 4.2.4) and the `TupleGate` of a new plan's `ROWS` window.

1. Origin `split` (`TrackOrigin`): the tuples it has released into its plan (event time before
   its watermark `A`) are old. From then on it emits, for the moving partitions, only results
   that combine an old tuple (`min_ts < A`), and it reports `A` with the positions from which
   the target must read: the start of the fetched batch holding the first tuple at or after
   `A - readback(plan)` (windows straddling `A` must be seen whole to be recognised as old:
   `InstancePort.read_back_offsets`), and whether its `ROWS` window has counted a tuple.
2. Target `begin` (`TrackTarget`, with `split`, `offsets` and `rows_counted`): it reads the
   moving partitions from those positions with empty state, drops input before `A - readback`,
   emits only results of new tuples alone (`min_ts >= A`; a `ROWS` window counts from `A` and
   suppresses its first `n - 1` windows when the old one had counted tuples, 4.2.1) and holds
   them and its dead letters.
3. The origin hands over (committing) once its plan holds no old tuple
   (`monitor.old_box_finished`); then `release-output` on the target makes its held results
   visible after the origin's last one, with the dead letters of records the origin never read.

The seed holds the new box's results until the old box is gone, to keep the output in timestamp
order (4.2.3). That old box lives until the origin's watermark passes the last window holding
an old tuple, about one window after `A`, while the target's first results are due a slide
after `A`: on a sliding window the output would pause for nearly a window. So, while it holds,
`release-until` with the origin's watermark `W` makes the held results that are due by `W`
visible at once, and those the target computes later that are due by `W` go out with its next
output: the origin has emitted every result of a window ending by `W`, so the output stays in
window order, and no result moves between sides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration import capability, marking, monitor
from streamshift_engine.migration.port import InstancePort, Position, positions_of
from streamshift_engine.migration.role import (
    HoldingTarget,
    Role,
    RoleAction,
    parse_positions,
    partitions_of,
    position_key,
    release_output_of,
    role_of,
)
from streamshift_engine.migration.split import keep_own_side
from streamshift_engine.migration.tuple_gate import TupleGate


class NoWatermark(ValueError):
    """The origin has read no tuple of some partition yet: nothing is old, nothing to split
    (ask again once input arrived)."""


class TrackOrigin(Role):
    protocol = "parallel-track"
    side = "origin"

    def __init__(self, migration: str, partitions: frozenset[int], port: InstancePort) -> None:
        super().__init__(migration, partitions)
        plan = port.plan
        if refusal := capability.refusal(self.protocol, plan):
            raise ValueError(refusal)
        split = port.watermark()
        if split is None:
            raise NoWatermark("the origin has no watermark yet: nothing is old, nothing to split")
        self.split = split
        floor = split - marking.readback(plan)
        offsets = port.read_back_offsets(positions_of(plan, partitions), floor)
        self.offsets = {position_key(p): o for p, o in offsets.items()}
        window = marking.rows_window(plan)
        self.rows_counted = window is not None and any(
            op.id == window and op.partitions() for op in port.pipeline.operators
        )
        self.handed_over_at: dict[Position, int] = {}

    def on_output(self, port: InstancePort, results: list[ResultBatch]) -> list[ResultBatch]:
        if self.done:
            return results
        split = self.split
        return keep_own_side(results, self.partitions, lambda b: b.min_ts < split, "origin")

    def after_output(self, port: InstancePort) -> None:
        if not self.done and monitor.old_box_finished(port, self.split):
            read = port.positions_read()
            self.handed_over_at = {
                p: read[p] for p in positions_of(port.plan, self.partitions) if p in read
            }
            port.hand_over(self.partitions)
            self.done = True

    def splitting_output(self) -> frozenset[int]:
        """Results of new tuples alone are the targets'."""
        return frozenset() if self.done else self.partitions

    def prompt_commits(self) -> bool:
        return not self.done

    def phase(self) -> str:
        return "released" if self.done else "parallel-track"

    def report(self) -> dict[str, Any]:
        return {
            **super().report(),
            "split": self.split,
            "offsets": self.offsets,
            "rows_counted": self.rows_counted,
            "handed_over_at": {position_key(p): o for p, o in self.handed_over_at.items()},
        }


class TrackTarget(HoldingTarget):
    protocol = "parallel-track"

    def __init__(
        self, migration: str, partitions: frozenset[int], port: InstancePort, body: dict[str, Any]
    ) -> None:
        super().__init__(migration, partitions)
        if port.owned():
            raise ValueError("a parallel-track target must hold no partitions yet")
        positions = parse_positions(dict(body["offsets"]))
        if set(positions) != set(positions_of(port.plan, partitions)):
            raise ValueError("'offsets' must name every input of every moving partition")
        self.split = int(body["split"])
        self.floor = self.split - marking.readback(port.plan)
        window = marking.rows_window(port.plan)
        if window is not None:
            gate = TupleGate.install(port.pipeline, window)
            gate.open(self.split, 0, history_complete=not bool(body.get("rows_counted", True)))
        self.until: int | None = None  # the origin's watermark last given to `release_until`
        port.read_from(positions)

    def on_input(self, port: InstancePort, batches: dict[Position, Batch]) -> dict[Position, Batch]:
        return self.from_floor(batches, self.floor)  # no window of a tuple before it reaches `A`

    def on_output(self, port: InstancePort, results: list[ResultBatch]) -> list[ResultBatch]:
        split = self.split
        kept = keep_own_side(results, self.partitions, lambda b: b.min_ts < split, "target")
        if self.done:
            return kept
        if self.until is None:
            self.held += kept
            return []
        kept, later = due_by(kept, self.until)  # due already: out with this step's output
        self.held += later
        return kept

    def release_until(self, port: InstancePort, until: int) -> dict[str, Any]:
        """Emit and commit the held results due by the origin's watermark `until`."""
        if not self.done:
            self.until = max(until, self.until if self.until is not None else until)
            now, self.held = due_by(self.held, self.until)
            if now:
                port.emit(now)
        return self.report()

    def phase(self) -> str:
        return "running" if self.done else "holding-output"

    def report(self) -> dict[str, Any]:
        return {**super().report(), "split": self.split}


def due_by(held: list[ResultBatch], until: int) -> tuple[list[ResultBatch], list[ResultBatch]]:
    """The held results due by watermark `until` (at their window's end, or after their newest
    tuple without a window) and the rest, in their order."""
    due = [np.maximum(b.window_end, b.max_ts + 1) <= until for b in held]
    now = [r for b, d in zip(held, due, strict=True) if len(r := b.take(d))]
    later = [r for b, d in zip(held, due, strict=True) if len(r := b.take(~d))]
    return now, later


def _split(
    roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
) -> dict[str, Any]:
    if migration not in roles:
        roles[migration] = TrackOrigin(migration, partitions_of(body), port)
    return role_of(roles, migration, TrackOrigin).report()


def _begin(
    roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
) -> dict[str, Any]:
    if migration not in roles:
        roles[migration] = TrackTarget(migration, partitions_of(body), port, body)
    return role_of(roles, migration, TrackTarget).report()


def _release_until(
    roles: dict[str, Role], port: InstancePort, migration: str, body: dict[str, Any]
) -> dict[str, Any]:
    report = role_of(roles, migration, TrackTarget).release_until(port, int(body["until"]))
    return {**report, "again": True}


ACTIONS: dict[str, RoleAction] = {
    "split": _split,
    "begin": _begin,
    "release-until": _release_until,
    "release-output": release_output_of(TrackTarget),
}
"""The control actions of parallel track's roles (the worker's control API runs them by name)."""
