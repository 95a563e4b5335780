"""Where origin output ends and target output begins, for the protocols that move no state.

UniMiCo (seed 000 (Pham et al.), 3.2) and parallel track (seed 001 (Zhu et al., Dynamic
Plan Migration), 4.2) both split the results of a moving partition group at an event time `A`: the
origin keeps every result whose *split time* is below `A`, the target every result at or after it.
The split time of a windowed result is its window start (a window starting at `A` or later holds
only tuples from `A` on); of a window-less join result it is `min_ts`, the earliest tuple it
combines (seed 000 3.2.1: the origin suppresses joins whose tuples are all in the overlap; seed 001
4.2.2: the old root skips new-new joins). `A` lies on the controlling window's grid (`align`), and
the origin has emitted all its results once its watermark passes `A + horizon(plan)`: the event time
every window opened on the plan's path spans (seed 001 5.2: `W`, or `2W` for stacked joins; an
operator aligned to its input's windows, such as q5's top-k, opens none).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration import marking
from streamshift_engine.migration.group import OutputFilter
from streamshift_engine.plan.model import Plan, WindowSpec


def split_time(results: ResultBatch) -> npt.NDArray[np.int64]:
    """Per result: its window start, or `min_ts` when it has no window (a window-less result
    carries `-1` as both bounds; a window, even one starting before 0, ends after it starts)."""
    windowed = results.window_end > results.window_start
    return np.where(windowed, results.window_start, results.min_ts)


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


def opened_windows(plan: Plan) -> list[WindowSpec]:
    """The windows of the operators that group their input into windows of their own (window
    aggregates, window joins, a top-k with its own `window`: `marking.own_windows`).

    An operator that carries its input's window instead (filter, map, project, and a top-k
    ranking the results of a window aggregate or join per the window they are stamped with,
    Nexmark q5) opens none: its result for the window starting at `A` is computed from the
    upstream results of that same window only, and so from the same input tuples. Seed 000
    3.1.1 ("Multiple window operators") ties the controlling window to its input through the
    timestamps preceding window operators stamp on their outputs; these results are stamped
    with their window itself, so the window they are aligned to adds no event time to the
    path. A top-k with its own `window` over windowed results opens one even on the same grid:
    it assigns each upstream result by its timestamp (its window's end), so its window starting
    at `A` ranks upstream windows that started up to a window size before `A`."""
    return [window for _, window in marking.own_windows(plan)]


def upstream_horizon(plan: Plan) -> int:
    """Event time before a result's split time that its inputs may reach back (seed 000 3.1.1,
    "Multiple window operators"): the engine stamps a window's output with its end and a join's
    with its latest tuple, so a result of the controlling window starting at `A` combines
    upstream results whose own inputs start at `A` minus the sizes of the windows opened below
    it (`opened_windows`: an operator aligned to its input's windows, such as q5's top-k over
    the sliding counts, opens none and adds nothing). A target fed from there on rebuilds every
    upstream result the controlling window needs."""
    return sum(w.size for w in opened_windows(plan)[:-1])


def horizon(plan: Plan) -> int:
    """Event time after `A` by which every result with a split time below `A` is complete: the
    sizes of the windows opened on the plan's path (`opened_windows`), plus one."""
    return sum(w.size for w in opened_windows(plan)) + 1


def controlling_node(plan: Plan) -> str:
    """The id of the controlling window operator (seed 000 3.1.1: the last window operator)."""
    return [op.id for op in plan.operators if plan.nodes[op.id].window is not None][-1]


def tuple_controlled(plan: Plan) -> bool:
    window = plan.controlling_window
    return window is not None and window.kind == "rows"


def tuple_refusal(plan: Plan) -> str | None:
    """Why UniMiCo's tuple-based hand-off (equation (2)) cannot be exact for this plan."""
    node = next(op for op in plan.operators if op.id == controlling_node(plan))
    if plan.unbounded_state:
        return "its state is unbounded (a per-key counter): no window boundary ends the old state"
    if node.type != "window_aggregate" or node.params.get("group_by"):
        return (
            f"its controlling ROWS window {node.id} counts per key: a key's last tuples may be "
            "arbitrarily old, so no boundary is common to all keys"
        )
    below = {w.kind for w in windows(plan)[:-1]} - {"time", "range"}
    if below:
        return f"windows below its controlling ROWS window are {', '.join(sorted(below))}"
    return None


def time_bounded_refusal(plan: Plan) -> str | None:
    """Why a split at an event time cannot be exact for this plan, or None when it can."""
    if plan.unbounded_state:
        return "its state is unbounded (a per-key counter): no window boundary ends the old state"
    kinds = {w.kind for w in windows(plan)}
    if kinds - {"time", "range"}:
        found = ", ".join(sorted(kinds - {"time", "range"}))
        return f"it has {found} windows: their boundaries are tuple counts or gaps, not event times"
    return None


def finish_horizon(plan: Plan) -> int:
    """Event time after `A` by which the origin has emitted every result with a split time below
    `A`. When every window is a time window: the end of the controlling window that starts last
    before `A` (the pipeline fires windows in plan order on each watermark, upstream results
    reaching the controlling window in the same advance, so that window fires once the watermark
    reaches its end); otherwise `horizon`, every window's size on the path."""
    found = windows(plan)
    control = plan.controlling_window
    if control is None or not found or any(w.kind != "time" for w in found):
        return horizon(plan)
    return control.size - control.slide + 1


def last_window_start(plan: Plan, watermark: int | None) -> int:
    """`ts_last_w` of seed 000 equation (1): the start of the last controlling window fired at
    `watermark` (grid-aligned; before the first window when nothing fired yet)."""
    window = plan.controlling_window
    size, slide = (window.size, window.slide) if window and window.kind == "time" else (1, 1)
    if watermark is None:
        return align(plan, -size - slide)
    return ((watermark - size) // slide) * slide
