"""The ids of join results whose parts are input places: formatted by Python (few pairs) or by
Arrow (many; the partitions' texts from a table when they are few), all give `joins.combined`
of the two parts' `source@partition:offset`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.operators import joins

PLACES = st.lists(
    st.tuples(
        st.integers(0, 2**31 - 1), st.integers(0, 2**62), st.integers(0, 7), st.integers(0, 2**62)
    ),
    max_size=40,
) | st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 2**62), st.integers(0, 7), st.integers(0, 2**62)),
    max_size=40,
)
"""Partitions beyond `joins.PARTITION_TEXTS` (their texts formatted) or all below it (taken
from a table)."""


@settings(max_examples=80, deadline=None)
@given(pairs=PLACES, sources=st.sampled_from([("S", "T"), ("auction", "person"), ("a", "ab")]))
def test_place_pair_ids_are_the_combined_ids_on_either_path(
    pairs: list[tuple[int, int, int, int]], sources: tuple[str, str]
) -> None:
    one, two = sources
    columns = [np.array([pair[i] for pair in pairs], np.int64) for i in range(4)]
    first = (one, columns[0], columns[1])
    second = (two, columns[2], columns[3])
    expected = [joins.combined(f"{one}@{a}:{b}", f"{two}@{c}:{d}") for a, b, c, d in pairs]
    for small in (0, 10**6):
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(joins, "SMALL_IDS", small)
            ids = joins._place_pair_ids(first, second)
        assert ids.dtype == object and ids.tolist() == expected
