"""The paced loop writes, in consecutive index ranges, the events whose event time is due, so
they arrive at the rate their timestamps follow; and it ends."""

from __future__ import annotations

import pytest
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.spark.generator import GenerateSpec
from streamshift_engine.spark.pacing import paced


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


CONSTANT = GeneratorConfig(events_per_second=1000)
STEP = GeneratorConfig(
    events_per_second=1000, rate_shape="step", next_events_per_second=3000, step_at_s=4
)
SINE = GeneratorConfig(
    events_per_second=1000, rate_shape="sine", next_events_per_second=1500, period_s=5
)


@pytest.mark.parametrize(
    ("config", "per_second"),
    [
        (CONSTANT, [1000] * 10),
        (STEP, [1000] * 4 + [3000] * 6),
        (SINE, [1294, 1476, 1000, 524, 706] * 2),
    ],
    ids=["constant", "step", "sine"],
)
def test_paced_writes_what_the_shape_owes_each_second_in_consecutive_ranges(
    config: GeneratorConfig, per_second: list[int]
) -> None:
    clock = FakeClock()
    writes: list[GenerateSpec] = []
    base = GenerateSpec(seed=1, start_index=0, count=0, config=config)
    log = paced(base, 10.0, writes.append, clock=clock, sleep=clock.sleep)
    assert [n for _, n in log] == [w.count for w in writes] == per_second
    assert [w.start_index for w in writes] == [sum(per_second[:i]) for i in range(10)]
    assert clock.now == pytest.approx(9.0)


def test_paced_from_a_later_index_starts_at_that_index_event_time() -> None:
    clock = FakeClock()
    writes: list[GenerateSpec] = []
    base = GenerateSpec(seed=1, start_index=3500, count=0, config=STEP)  # 3.5 s of event time
    paced(base, 2.0, writes.append, clock=clock, sleep=clock.sleep)
    assert [(w.start_index, w.count) for w in writes] == [(3500, 500 + 1500), (5500, 3000)]


def test_paced_without_an_end_writes_until_stopped() -> None:
    clock = FakeClock()
    writes: list[GenerateSpec] = []
    base = GenerateSpec(seed=1, start_index=0, count=0, config=STEP)
    log = paced(
        base,
        float("inf"),
        writes.append,
        clock=clock,
        sleep=clock.sleep,
        stop=lambda: len(writes) == 6,
    )
    assert [n for _, n in log] == [w.count for w in writes] == [1000] * 4 + [3000] * 2
    assert writes[-1].start_index == 7000
