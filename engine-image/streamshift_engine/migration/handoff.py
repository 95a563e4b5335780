"""Where origin output ends and target output begins, for the protocols that move no state.

UniMiCo (seed 000, 3.2) and parallel track (seed 001, 4.2) both split the results of a moving
partition group at an event time `A`: the origin keeps every result whose *split time* is below
`A`, the target every result at or after it. The split time of a windowed result is its window
start (a window starting at `A` or later holds only tuples from `A` on); of a window-less join
result it is `min_ts`, the earliest tuple it combines (seed 000 3.2.1: the origin suppresses
joins whose tuples are all in the overlap; seed 001 4.2.2: the old root skips new-new joins).
`A` lies on the controlling window's grid (`align`), and the origin has emitted all its results
once its watermark passes `A + horizon(plan)`: the event time every window on the plan's path
spans (seed 001 5.2: `W`, or `2W` for stacked joins).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration.group import OutputFilter
from streamshift_engine.plan.model import Plan, WindowSpec


def split_time(results: ResultBatch) -> npt.NDArray[np.int64]:
    """Per result: its window start, or `min_ts` when it has no window."""
    return np.where(results.window_start >= 0, results.window_start, results.min_ts)


def before(activation: int) -> OutputFilter:
    return lambda results: split_time(results) < activation


def from_(activation: int) -> OutputFilter:
    return lambda results: split_time(results) >= activation


def windows(plan: Plan) -> list[WindowSpec]:
    return [w for op in plan.operators if (w := plan.nodes[op.id].window) is not None]


def grid_slide(plan: Plan) -> int:
    """The slide of the controlling window's grid (1 ms for a window-less or range join)."""
    window = plan.controlling_window
    if window is None or window.kind != "time":
        return 1
    return window.slide


def align(plan: Plan, ts: int) -> int:
    """The first window start of the controlling window at or after `ts`."""
    slide = grid_slide(plan)
    return -(-ts // slide) * slide


def horizon(plan: Plan) -> int:
    """Event time after `A` by which every result with a split time below `A` is complete."""
    return sum(w.size for w in windows(plan)) + 1


def time_bounded_refusal(plan: Plan) -> str | None:
    """Why a split at an event time cannot be exact for this plan, or None when it can."""
    if plan.unbounded_state:
        return "its state is unbounded (a per-key counter): no window boundary ends the old state"
    kinds = {w.kind for w in windows(plan)}
    if kinds - {"time", "range"}:
        found = ", ".join(sorted(kinds - {"time", "range"}))
        return f"it has {found} windows: their boundaries are tuple counts or gaps, not event times"
    return None
