"""The figures of `make bench-autoscaler` from a run's samples and rescales
(`streamshift_dev.elastic_timeline`)."""

from __future__ import annotations

import dataclasses

import pytest
from streamshift_dev.elastic_timeline import (
    Rescale,
    Sample,
    chosen,
    final_line,
    gap_ratio_max,
    max_lag_after,
    recover_seconds,
    workers_at_target,
)


def sample(t: float, lag_s: float, parallelism: int) -> Sample:
    return Sample(t, 1000.0, 0, int(lag_s * 1000), lag_s, parallelism)


def rescale(
    started: float, ended: float | None, to: int, gap: float | None = 10.5, before: float = 10.0
) -> Rescale:
    return Rescale(
        f"q-autoscale-p{to}",
        started,
        ended,
        3 if to == 1 else 1,
        to,
        "unimico",
        "Succeeded",
        gap,
        before,
        True,
    )


# the step up at 40 s; lag grows beyond 10 s until the scale-up (48-70 s) drains it
SAMPLES = [
    sample(30, 0.2, 1),
    sample(40, 0.3, 1),
    sample(55, 14.0, 1),
    sample(70, 12.0, 3),
    sample(74, 9.0, 3),
    sample(80, 0.5, 3),
    sample(160, 0.4, 3),
    sample(200, 0.2, 1),
]
UP, DOWN = rescale(48, 70, 3), rescale(175, 190, 1, gap=11.0)


def test_recovery_ends_at_the_first_sample_under_the_tolerance_after_the_scale_up_ended() -> None:
    assert recover_seconds(SAMPLES, 40, [UP, DOWN], 10) == 34


def test_lag_under_the_tolerance_before_the_scale_up_ended_is_no_recovery() -> None:
    calm = [sample(t, 1.0, 1 if t < 70 else 3) for t in range(40, 90, 5)]
    assert recover_seconds(calm, 40, [UP], 10) == 30


def test_recovery_counts_from_the_hand_off_not_the_end_of_the_verification() -> None:
    handed_over = dataclasses.replace(UP, ended=150, handed_over=70)
    assert recover_seconds(SAMPLES, 40, [handed_over, DOWN], 10) == 34


def test_recovery_is_the_lag_under_the_tolerance_for_the_rest_of_the_high_load() -> None:
    relapse = [*SAMPLES[:6], sample(100, 11.0, 3), sample(110, 2.0, 3), *SAMPLES[6:]]
    assert recover_seconds(relapse, 40, [UP, DOWN], 10, until=170) == 70
    after_the_step_down = [*relapse[:-2], sample(175, 12.0, 3), sample(200, 0.2, 1)]
    assert recover_seconds(after_the_step_down, 40, [UP, DOWN], 10, until=170) == 70


def test_no_recovery_without_a_scale_up_or_while_it_runs() -> None:
    assert recover_seconds(SAMPLES, 40, [DOWN], 10) is None
    assert recover_seconds(SAMPLES, 40, [rescale(48, None, 3)], 10) is None
    assert recover_seconds(SAMPLES, 40, [rescale(20, 30, 3)], 10) is None  # before the step
    rolled_back = dataclasses.replace(UP, phase="RolledBack")
    assert recover_seconds(SAMPLES, 40, [rolled_back], 10) is None


@pytest.mark.parametrize(
    ("high", "capacity", "target", "partitions", "expected"),
    [
        (7800, 5000, 0.6, 12, 3),
        (9000, 5000, 0.6, 12, 3),
        (9001, 5000, 0.6, 12, 4),
        (100, 5000, 0.6, 12, 1),
        (7800, 5000, 0.6, 4, 4),  # 3 of 4 partitions: the busiest reads 2, as with 2
        (6000, 5000, 0.6, 4, 2),
    ],
)
def test_workers_at_target_keep_every_worker_at_or_under_the_target(
    high: float, capacity: float, target: float, partitions: int, expected: int
) -> None:
    assert workers_at_target(high, capacity, target, partitions) == expected


def test_chosen_is_the_target_of_the_scale_ups_begun_during_the_high_load() -> None:
    assert chosen(SAMPLES, [UP, DOWN], 40, 170) == 3
    assert chosen(SAMPLES, [UP, DOWN], 40, 60) == 3  # begun at 48 s, ended after the step down
    assert chosen(SAMPLES, [DOWN], 40, 60) == 1  # none: the parallelism while it lasted


def test_the_gap_ratio_is_the_largest_gap_over_the_rhythm_before_it() -> None:
    assert gap_ratio_max([UP, DOWN]) == pytest.approx(1.1)
    assert gap_ratio_max([rescale(1, 2, 3, gap=None), rescale(1, 2, 3, before=0.0)]) is None


def test_the_lag_after_the_step_down() -> None:
    assert max_lag_after(SAMPLES, 150) == 0.4


def test_the_final_line() -> None:
    line = final_line(34.4, [UP, DOWN], 3, 3, 1.1, True)
    assert line == (
        "autoscaler recover-s=34 rescales-up=1 rescales-down=1 chosen=3 optimum=3 "
        "gap-ratio-max=1.10 exact=true"
    )
    assert final_line(None, [], 1, 3, None, False) == (
        "autoscaler recover-s=-1 rescales-up=0 rescales-down=0 chosen=1 optimum=3 "
        "gap-ratio-max=nan exact=false"
    )
