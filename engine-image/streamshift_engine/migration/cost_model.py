"""The cost model of seed 001 (Zhu et al., Dynamic Plan Migration), section 5: how long moving-state
and parallel-track migrate.

A join plan is a binary tree of `JoinNode`s over `Stream` leaves (section 2.1). Every input of a
join operator has a state whose id is the set of streams its tuples combine (section 4.1.1, the
state id is the tuple schema); states with the same id in the old and new plan match, the others
are recomputed (Algorithm 1).

- Moving state (5.1): `T_MS = T_match + T_move + T_S` (equation 3) with `T_match = 4 N M T_m`,
  `T_move = 2 min(N, M) T_c` and, per unmatched state `S_LR`, `T_S_LR = lambda_L lambda_R W^2
  (T_j + T_s sigma_LR)` (equation 1); an unmatched state above another is fed at the rate
  `lambda_LR = 2 lambda_L lambda_R W sigma_LR` (equation 2).
- Parallel track (5.2): `T_PT = W` for a plan of height 1 and `2W` above (equation 4), in event
  time; the processing cost of an old-box join during those `2W` is equation (5).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stream:
    """A leaf: one input stream and its average arrival rate (tuples per time unit)."""

    name: str
    rate: float


@dataclass(frozen=True)
class JoinNode:
    """A binary window join with its reduction factor (selectivity) sigma."""

    left: Plan
    right: Plan
    selectivity: float


Plan = Stream | JoinNode


@dataclass(frozen=True)
class UnitCosts:
    """Table 1's per-operation times (seconds): compare, new cursor, join a pair, insert."""

    compare: float
    cursor: float
    join_pair: float
    insert: float


def state_id(plan: Plan) -> frozenset[str]:
    """The id of the state that holds this sub-plan's output tuples: the streams they combine."""
    if isinstance(plan, Stream):
        return frozenset([plan.name])
    return state_id(plan.left) | state_id(plan.right)


def operators(plan: Plan) -> list[JoinNode]:
    if isinstance(plan, Stream):
        return []
    return [*operators(plan.left), *operators(plan.right), plan]


def states(plan: Plan) -> list[Plan]:
    """Sub-plans whose output is kept in a join state: both inputs of every join operator."""
    return [child for join in operators(plan) for child in (join.left, join.right)]


def height(plan: Plan) -> int:
    if isinstance(plan, Stream):
        return 0
    return 1 + max(height(plan.left), height(plan.right))


def output_rate(plan: Plan, window: float) -> float:
    """Equation (2): the tuple rate out of a sub-plan under the global window `window`."""
    if isinstance(plan, Stream):
        return plan.rate
    left, right = output_rate(plan.left, window), output_rate(plan.right, window)
    return 2 * left * right * window * plan.selectivity


def unmatched_states(old: Plan, new: Plan) -> list[JoinNode]:
    """New-plan states with no state of the same id in the old plan (section 4.1.1)."""
    old_ids = {state_id(s) for s in states(old)}
    return [s for s in states(new) if isinstance(s, JoinNode) and state_id(s) not in old_ids]


def recompute_time(state: JoinNode, window: float, costs: UnitCosts) -> float:
    """Equation (1): time to rebuild one state by joining its two child states."""
    left, right = output_rate(state.left, window), output_rate(state.right, window)
    return left * right * window**2 * (costs.join_pair + costs.insert * state.selectivity)


def moving_state_time(old: Plan, new: Plan, window: float, costs: UnitCosts) -> float:
    """Equation (3): `T_MS = T_match + T_move + T_S`, in seconds."""
    n, m = len(operators(old)), len(operators(new))
    match = 4 * n * m * costs.compare
    move = 2 * min(n, m) * costs.cursor
    recompute = sum(recompute_time(s, window, costs) for s in unmatched_states(old, new))
    return match + move + recompute


def parallel_track_time(old: Plan, window: float) -> float:
    """Equation (4): event time until the old plan holds no old tuple (W or 2W)."""
    return window if height(old) <= 1 else 2 * window


def parallel_track_join_cost(
    rate_a: float, rate_b: float, window: float, costs: UnitCosts
) -> float:
    """Equation (5): processing time of one old-box join over the `2W` migration stage."""
    join = 2 * costs.join_pair * rate_a * rate_b * window
    insert = 2 * costs.insert * (rate_a + rate_b)
    return 2 * window * (join + insert)
