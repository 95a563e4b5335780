"""Parallel track's old/new split of the results (seed 001 (Zhu et al., Dynamic Plan Migration),
4.2.1 and 4.2.2), and the plans it fits.

With `A` the event time before which tuples are old (`monitor`), a result is old when it combines
an old tuple (`min_ts < A`, lemma 2.2's `TS_min`) and new otherwise. The old plan emits only old
results (4.2.2: its root skips new-new combinations) and the new plan only new ones, so every
result comes from exactly one of them (4.2.1's cases #1-#15 and #16).

The new plan starts with empty state. A join result is its tuples, so an all-new one is found
from the new tuples alone. A window aggregate over a window straddling `A` is not: the new plan
must also see the window's old tuples to know that its result is old. So the new plan reads the
log from `A - readback(plan)` (the event time every window on the plan's path spans) and its
results that combine a tuple before `A` are dropped as old.

A `ROWS` window is counted in tuples, not event time: a global `ROWS n` window sliding by one
tuple directly over an input holds no old tuple after `n` new ones, and its window closed by the
`k`-th new tuple is all new when `k >= n` (or when no old tuple came before): the new plan
counts from `A` and suppresses its first `n - 1` windows when the old plan had counted tuples
(`tuple_gate`). The plans this does not fit are refused with the reason (`refusal`), among
them a window over join results: there an old result can belong to a later window than a new
one, and the old plan would emit it first, out of the key's window order.
"""

from __future__ import annotations

from streamshift_engine.migration.group import OutputFilter
from streamshift_engine.plan.model import OperatorSpec, Plan, WindowSpec


def old_results(split: int) -> OutputFilter:
    return lambda results: results.min_ts < split


def new_results(split: int) -> OutputFilter:
    return lambda results: results.min_ts >= split


def own_windows(plan: Plan) -> list[tuple[OperatorSpec, WindowSpec]]:
    """The operators that define a window (not those that pass an upstream one on), with it."""
    found = []
    for op in plan.operators:
        window = plan.nodes[op.id].window
        defines = op.type in ("window_aggregate", "window_join") or (
            op.type == "topk" and "window" in op.params
        )
        if window is not None and defines:
            found.append((op, window))
    return found


def readback(plan: Plan) -> int:
    """Event time before `A` from which the new plan reads (0 when only joins keep state)."""
    windows = own_windows(plan)
    if all(op.type == "window_join" for op, _ in windows):
        return 0
    return sum(w.size for _, w in windows if w.kind in ("time", "range"))


def rows_window(plan: Plan) -> str | None:
    """The id of the plan's `ROWS` window aggregate, if it has one."""
    found = [op.id for op, w in own_windows(plan) if w.kind == "rows" and op.type != "window_join"]
    return found[0] if found else None


def refusal(plan: Plan) -> str | None:
    """Why the old/new split cannot be exact for this plan, or None when it can."""
    if plan.unbounded_state:
        return "its state is unbounded (a per-key counter): its old tuples are never purged"
    windows = own_windows(plan)
    for op, window in windows:
        join = _join_below(plan, op)
        if op.type != "window_join" and join and window.kind != "rows":
            return (
                f"its window {op.id} aggregates the results of join {join}: one combining an old "
                "tuple can fall in a later window than an all-new one, so the old plan would emit "
                "a key's later windows before the new plan's earlier ones (seed 001 4.2.3 keeps "
                "timestamp order, not window order)"
            )
        below = _window_below(plan, op)
        if op.type != "window_join" and below and window.kind != "rows":
            return (
                f"its window {op.id} assigns the results of window {below} by their timestamps: "
                "its result for a later window can combine an old one while an earlier window's "
                "combines only new ones, so the old plan would emit a key's later windows first"
            )
        if window.kind == "session":
            return (
                f"{op.id}'s session windows grow while tuples keep coming: a session begun by old "
                "tuples takes in new ones, so the new plan cannot tell a whole session from a part"
            )
        if window.kind != "rows":
            continue
        if op.type == "window_join":
            if any(other.type != "window_join" for other, _ in windows):
                return (
                    f"its ROWS join {op.id} feeds a window aggregate: the new plan's join results "
                    "before its window fills are not the old plan's, so no read-back is exact"
                )
            continue
        reason = _rows_aggregate_refusal(plan, op, window)
        if reason:
            return reason
    return None


def _window_below(plan: Plan, op: OperatorSpec) -> str | None:
    """The id of an operator upstream of `op` that defines a window (`own_windows`), if any."""
    defining = {spec.id for spec, _ in own_windows(plan)}
    specs = {spec.id: spec for spec in plan.operators}
    pending = list(op.inputs)
    while pending:
        node = specs.get(pending.pop())
        if node is not None and node.id in defining:
            return node.id
        pending += node.inputs if node is not None else ()
    return None


def _join_below(plan: Plan, op: OperatorSpec) -> str | None:
    """The id of a join upstream of `op`, if any."""
    specs = {spec.id: spec for spec in plan.operators}
    pending = list(op.inputs)
    while pending:
        node = specs.get(pending.pop())
        if node is not None and node.type == "window_join":
            return node.id
        pending += node.inputs if node is not None else ()
    return None


def _rows_aggregate_refusal(plan: Plan, op: OperatorSpec, window: WindowSpec) -> str | None:
    if op.params.get("group_by"):
        return (
            f"its ROWS window {op.id} counts per key: whether a key's first windows after the "
            "split are all new depends on the key's old tuples, which only the old plan holds"
        )
    if window.slide != 1:
        return (
            f"its ROWS window {op.id} fires once every {window.slide} tuples counted since the "
            "stream began: the new plan, started empty at the split, cannot know that phase"
        )
    upstream = op.inputs[0]
    if any(other.id == upstream and other.type == "window_join" for other in plan.operators):
        return (
            f"its ROWS window {op.id} counts the results of join {upstream}: results combining "
            "an old tuple keep arriving among new ones during the migration, so the new plan's "
            "windows of n tuples are not the old plan's"
        )
    if upstream not in {spec.name for spec in plan.inputs}:
        return (
            f"its ROWS window {op.id} counts the output of {upstream}, not an input: only the "
            "old plan knows whether old tuples reached it, so whether its next windows are new"
        )
    if len(own_windows(plan)) > 1:
        return f"its ROWS window {op.id} shares the plan with other windows"
    return None
