"""UniMiCo's equations against the worked examples of seed 000 (Pham et al.), figures 2 and 3."""

from streamshift_engine.migration.timestamps import (
    activation_timestamp,
    last_fired_window_start,
    origin_keeps_join_result,
    slide_delta,
    time_migration_timestamp,
    tuple_delta,
    tuple_discard,
    tuple_migration_timestamp,
)


def test_figure_2_time_window_size_4_slide_2() -> None:
    # last window w1 starts at 1, the target first reads ts 4: the origin ends with w2 (start 3)
    # and the target starts at w3, tuples from ts 5 on.
    ts_mi = time_migration_timestamp(4, 1, 2)
    assert ts_mi == 3
    assert activation_timestamp(ts_mi, 2) == 5


def test_equation_1_when_target_starts_behind_the_origin() -> None:
    assert time_migration_timestamp(0, 6, 2) == 6
    assert time_migration_timestamp(6, 6, 2) == 6


def test_equation_1_on_the_grid_uses_a_full_slide() -> None:
    assert slide_delta(4, 2) == 2
    assert time_migration_timestamp(5, 1, 2) == 3
    assert time_migration_timestamp(10, 0, 5) == 5


def test_multiple_inputs_use_the_latest_start() -> None:
    assert time_migration_timestamp([2, 5, 4], 1, 2) == 3
    assert tuple_delta([1, 3, 2], 2) == 2


def test_figure_3_tuple_window_slide_2() -> None:
    # N = 3 tuples between ts_last_w = 1 and ts_start = 5 before t (ts 7): (N + 1) % 2 = 0 so
    # delta = s = 2 by equation (2). (The figure's text names the tuple right before t; equation
    # (2) with N = 3 gives the second one, which is the window-aligned one and what we implement.)
    assert tuple_delta(3, 2) == 2
    assert tuple_migration_timestamp([1, 2, 3, 4], 3, 2) == 3
    assert tuple_discard(2, 2) == 0


def test_tuple_discard_aligns_the_target_on_the_next_window() -> None:
    # slide 3, last window starts at index 0; t is index 5 (N = 4): delta = 5 % 3 = 2, so the
    # origin's last window starts at index 3 and the target, starting at t, drops 3 - 2 = 1 tuple
    # and starts its first window at index 6 = 3 + slide.
    delta = tuple_delta(4, 3)
    assert delta == 2
    assert tuple_migration_timestamp([10, 11, 12, 13, 14], 4, 3) == 13
    assert 5 + tuple_discard(3, delta) == 3 + 3


def test_origin_suppresses_join_results_inside_the_overlap() -> None:
    assert origin_keeps_join_result(min_ts=4, activation=5)
    assert not origin_keeps_join_result(min_ts=5, activation=5)


def test_last_fired_window_start() -> None:
    assert last_fired_window_start(watermark=10, size=4, slide=2) == 6
    assert last_fired_window_start(watermark=9, size=4, slide=2) == 4
