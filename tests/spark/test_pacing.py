"""The paced loop writes what the rate shape owes, in consecutive index ranges, and ends."""

from __future__ import annotations

import pytest
from streamshift_engine.spark.generator import GenerateSpec
from streamshift_engine.spark.pacing import RateShape, paced


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(
    ("shape", "expected_total"),
    [
        (RateShape("constant", 1000.0), 10_000),
        (RateShape("step", 1000.0, high=3000.0, step_at_s=4.0), 4000 + 6 * 3000),
        (RateShape("sine", 1000.0, high=1500.0, period_s=5.0), 10_000),
    ],
)
def test_paced_writes_the_shape_in_consecutive_ranges(
    shape: RateShape, expected_total: int
) -> None:
    clock = FakeClock()
    writes: list[GenerateSpec] = []
    base = GenerateSpec(seed=1, start_index=500, count=0)
    log = paced(base, shape, 10.0, writes.append, clock=clock, sleep=clock.sleep)
    assert sum(n for _, n in log) == sum(w.count for w in writes) == expected_total
    assert [w.start_index for w in writes] == [
        500 + sum(w.count for w in writes[:i]) for i in range(len(writes))
    ]
    assert len(writes) == 10
    assert clock.now == pytest.approx(9.0)


def test_step_and_sine_rates_follow_their_shape() -> None:
    step = RateShape("step", 100.0, high=400.0, step_at_s=2.0)
    assert [step.total(t) for t in (1, 2, 3)] == [100.0, 200.0, 600.0]
    sine = RateShape("sine", 100.0, high=150.0, period_s=4.0)
    per_second = [sine.total(t + 1) - sine.total(t) for t in range(4)]
    assert per_second[0] > 100 > per_second[2]
    assert sum(per_second) == pytest.approx(400.0)
    with pytest.raises(ValueError, match="unknown rate shape"):
        RateShape("square", 1.0)
