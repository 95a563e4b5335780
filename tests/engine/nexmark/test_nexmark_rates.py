"""The generator's rate shapes: the events' timestamps follow the shape (events per event-time
second), `events_before` inverts them, and a constant rate is the reference's formula."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.rates import event_times, events_before


def per_second(config: GeneratorConfig, seconds: int) -> list[int]:
    """Events whose event time falls in each second from index 0 on."""
    end = events_before(config, seconds * 1000)
    offsets = event_times(np.arange(end, dtype=np.int64), config) - config.base_time_ms
    return np.bincount(offsets // 1000, minlength=seconds).tolist()


def test_a_constant_rate_is_the_reference_formula() -> None:
    config = GeneratorConfig(events_per_second=7_000)
    indices = np.arange(0, 100_000, 7, dtype=np.int64)
    assert (event_times(indices, config) == config.base_time_ms + indices * 1000 // 7000).all()
    assert per_second(config, 5) == [7000] * 5


def test_a_step_up_and_back_changes_the_events_per_second_at_its_seconds() -> None:
    config = GeneratorConfig(
        events_per_second=1000,
        rate_shape="step",
        next_events_per_second=3000,
        step_at_s=3,
        step_until_s=5,
    )
    assert per_second(config, 8) == [1000, 1000, 1000, 3000, 3000, 1000, 1000, 1000]


def test_a_sine_follows_the_sine_second_by_second() -> None:
    config = GeneratorConfig(
        events_per_second=2000, rate_shape="sine", next_events_per_second=3000, period_s=10
    )
    counts = per_second(config, 20)
    expected = [round(2000 + 1000 * math.sin(2 * math.pi * (k + 0.5) / 10)) for k in range(10)]
    assert counts == expected * 2
    assert sum(counts[:10]) == 20_000  # a whole period averages the base rate


def test_the_generated_events_carry_the_shaped_timestamps() -> None:
    config = GeneratorConfig(
        events_per_second=500, rate_shape="step", next_events_per_second=2000, step_at_s=2
    )
    batches = generate(1, 0, 5000, config)
    ts = np.sort(np.concatenate([b.ts for b in batches.values()])) - config.base_time_ms
    assert np.bincount(ts // 1000).tolist() == [500, 500, 2000, 2000]


shapes = st.one_of(
    st.builds(
        lambda r, h, at, span: GeneratorConfig(
            events_per_second=r,
            rate_shape="step",
            next_events_per_second=h,
            step_at_s=at,
            step_until_s=0 if span == 0 else at + span,
        ),
        st.integers(1, 5000),
        st.integers(1, 5000),
        st.integers(0, 20),
        st.integers(0, 20),
    ),
    st.builds(
        lambda r, share, period: GeneratorConfig(
            events_per_second=r,
            rate_shape="sine",
            next_events_per_second=r + (r - 1) * share // 100,
            period_s=period,
        ),
        st.integers(2, 5000),
        st.integers(1, 99),
        st.integers(2, 30),
    ),
)


@settings(max_examples=200, deadline=None)
@given(shapes, st.integers(0, 200_000))
def test_events_before_inverts_the_timestamps(config: GeneratorConfig, t_ms: int) -> None:
    n = events_before(config, t_ms)
    around = np.arange(max(0, n - 3), n + 3, dtype=np.int64)
    times = event_times(around, config) - config.base_time_ms
    assert ((times < t_ms) == (around < n)).all()
    assert (np.diff(event_times(np.arange(0, n + 50, dtype=np.int64), config)) >= 0).all()
