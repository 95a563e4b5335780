"""The cost model of seed 001 (Zhu et al., Dynamic Plan Migration), section 5, computed by hand
on small join trees."""

import pytest
from streamshift_engine.migration.cost_model import (
    JoinNode,
    Stream,
    UnitCosts,
    height,
    moving_state_time,
    output_rate,
    parallel_track_join_cost,
    parallel_track_time,
    state_id,
    unmatched_states,
)

A, B, C, D = (Stream(n, 2.0) for n in "ABCD")
COSTS = UnitCosts(compare=1.0, cursor=10.0, join_pair=0.5, insert=0.25)


def left_deep() -> JoinNode:
    return JoinNode(JoinNode(JoinNode(A, B, 0.1), C, 0.1), D, 0.1)


def bc_first() -> JoinNode:
    return JoinNode(A, JoinNode(JoinNode(B, C, 0.1), D, 0.1), 0.1)


def test_figure_5_unmatched_states_are_bc_and_bcd() -> None:
    ids = {state_id(s) for s in unmatched_states(left_deep(), bc_first())}
    assert ids == {frozenset("BC"), frozenset("BCD")}


def test_equation_2_output_rate() -> None:
    assert output_rate(JoinNode(A, B, 0.1), window=3.0) == pytest.approx(2 * 2 * 2 * 3 * 0.1)


def test_equation_3_moving_state_time() -> None:
    window = 3.0
    match = 4 * 3 * 3 * 1.0
    move = 2 * 3 * 10.0
    bc = 2 * 2 * window**2 * (0.5 + 0.25 * 0.1)
    rate_bc = 2 * 2 * 2 * window * 0.1
    bcd = rate_bc * 2 * window**2 * (0.5 + 0.25 * 0.1)
    assert moving_state_time(left_deep(), bc_first(), window, COSTS) == pytest.approx(
        match + move + bc + bcd
    )


def test_same_plan_moves_without_recomputing() -> None:
    assert unmatched_states(left_deep(), left_deep()) == []
    assert moving_state_time(left_deep(), left_deep(), 3.0, COSTS) == pytest.approx(36 + 60)


def test_equation_4_parallel_track_is_w_or_2w() -> None:
    assert height(JoinNode(A, B, 0.1)) == 1
    assert parallel_track_time(JoinNode(A, B, 0.1), 5.0) == 5.0
    assert parallel_track_time(left_deep(), 5.0) == 10.0


def test_equation_5_old_box_join_cost() -> None:
    expected = 2 * 4.0 * (2 * 0.5 * 2 * 3 * 4.0 + 2 * 0.25 * (2 + 3))
    assert parallel_track_join_cost(2.0, 3.0, 4.0, COSTS) == pytest.approx(expected)
