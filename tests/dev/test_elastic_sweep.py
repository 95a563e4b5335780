"""The sweep's verdicts (`streamshift_dev.elastic_sweep`): what keeps up, where the sweep
starts, which parallelism is the optimum, and how the low load is lowered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from streamshift_dev import elastic_sweep
from streamshift_dev.elastic_sweep import Point, first_parallelism, optimum


def point(parallelism: int, lag_start: int, lag_end: int, busy: float = 0.8) -> Point:
    return Point(parallelism, 10_000, 10_000, lag_start, lag_end, (busy,) * parallelism)


@pytest.mark.parametrize(
    ("lag_start", "lag_end", "kept"),
    [
        (5_000, 5_000, True),  # steady backlog
        (5_000, 15_000, True),  # grew by one second of input: the hold and sampling's jitter
        (5_000, 15_001, False),  # grew by more
        (90_000, 100_000, True),  # at the tolerance (10 s of input)
        (95_000, 100_001, False),  # beyond the tolerance, though barely growing
        (50_000, 2_000, True),  # draining
    ],
)
def test_keeps_up_when_the_backlog_neither_grows_nor_exceeds_the_tolerance(
    lag_start: int, lag_end: int, kept: bool
) -> None:
    assert point(2, lag_start, lag_end).keeps_up(lag_tolerance_s=10) is kept


@pytest.mark.parametrize(
    ("high", "capacity", "first"), [(60_000, 40_000, 2), (80_000, 40_000, 2), (100, 40_000, 1)]
)
def test_the_sweep_starts_at_the_fewest_instances_whose_capacity_holds_the_load(
    high: float, capacity: float, first: int
) -> None:
    assert first_parallelism(high, capacity) == first


def test_a_saturated_instance_does_not_keep_up_though_its_backlog_holds() -> None:
    assert point(2, 5_000, 5_000, busy=0.89).keeps_up(lag_tolerance_s=10)
    assert not point(2, 5_000, 5_000, busy=0.9).keeps_up(lag_tolerance_s=10)
    assert point(2, 5_000, 5_000, busy=0.95).line(lag_tolerance_s=10).endswith("or more)")


def test_the_optimum_is_the_smallest_parallelism_swept_that_keeps_up() -> None:
    behind, kept, also = point(2, 0, 50_000), point(3, 2_000, 1_000), point(4, 0, 0)
    assert optimum([behind, kept, also], lag_tolerance_s=10) == 3
    assert optimum([also, kept], lag_tolerance_s=10) == 3
    assert optimum([behind], lag_tolerance_s=10) is None


def test_a_point_says_its_verdict() -> None:
    line = point(2, 0, 50_000).line(lag_tolerance_s=10)
    assert "parallelism 2" in line and line.endswith("falls behind")


def _worker_busy_at(fixed: float, per_record: float) -> Callable[..., Point]:
    """`measure` of one worker whose busy ratio is a fixed part plus one per record/s."""

    def measured(s: Any, settings: Any, parallelism: int, rate: float, seconds: float) -> Point:
        return Point(parallelism, rate, rate, 0, 0, (fixed + rate * per_record,))

    return measured


@pytest.mark.parametrize(
    ("fixed", "low", "lowered"),
    [
        (0.2, 40_000, True),  # busy 1.0 where the flat-out rate says 0.5: lowered
        (0.0, 20_000, False),  # busy 0.5 already
        (0.0, 10_000, False),  # busy 0.25: kept, never raised
    ],
)
def test_the_low_load_is_lowered_until_one_worker_reads_about_half_busy(
    monkeypatch: pytest.MonkeyPatch, fixed: float, low: float, lowered: bool
) -> None:
    monkeypatch.setattr(elastic_sweep, "measure", _worker_busy_at(fixed, 1 / 40_000))
    lines: list[str] = []
    rate = elastic_sweep.low_load(Any, Any, low, 20, lines.append)  # type: ignore[arg-type]
    busy = fixed + rate / 40_000
    assert busy <= elastic_sweep.HALF_BUSY + 0.05
    assert (rate < low) is lowered and rate <= low
    assert len(lines) <= elastic_sweep.LOW_TRIES and "reads busy" in lines[0]
