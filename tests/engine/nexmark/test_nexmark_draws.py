"""Counter-based draws: splitmix64 values, uniform bounds, and the portable power of ten."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.nexmark import draws


def test_mix64_matches_the_splitmix64_reference_values() -> None:
    # Java SplittableRandom(0).nextLong() == mix64(0 + GAMMA) == -2152535657050944081.
    first = draws.mix64(np.array([draws.GAMMA], dtype=np.uint64))[0]
    assert int(first) == (-2152535657050944081) % (1 << 64)
    assert int(first) == draws.mix64_int(draws.GAMMA)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=20))
def test_array_and_integer_mix_agree(values: list[int]) -> None:
    mixed = draws.mix64(np.array(values, dtype=np.uint64)).tolist()
    assert mixed == [draws.mix64_int(v) for v in values]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), bound=st.integers(1, 2**32 - 1))
def test_below_stays_in_bounds(seed: int, bound: int) -> None:
    values = draws.below(seed, 1, np.arange(2000, dtype=np.int64), bound)
    assert values.min() >= 0 and values.max() < bound


def test_below_is_uniform() -> None:
    counts = np.bincount(draws.below(1, 2, np.arange(60_000, dtype=np.int64), 6), minlength=6)
    assert np.all(np.abs(counts / 60_000 - 1 / 6) < 0.01)


def test_unit_interval_is_in_range_and_salts_are_independent() -> None:
    indices = np.arange(50_000, dtype=np.int64)
    first, second = draws.unit_interval(3, 1, indices), draws.unit_interval(3, 2, indices)
    assert first.min() >= 0.0 and first.max() < 1.0
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.02


def test_pow10_agrees_with_libm_to_fourteen_digits() -> None:
    exponents = np.linspace(0.0, 6.0, 100_001)[:-1]
    ours, libm = draws.pow10(exponents), np.power(10.0, exponents)
    assert np.all(np.abs(ours - libm) <= 1e-14 * libm)
    assert draws.pow10(np.array([0.0, 1.0, 2.0, 5.0])).tolist() == [1.0, 10.0, 100.0, 1e5]
