"""The join's vectorised helpers against the numpy calls they stand for: `_sorted_search`, the
range join's lookup of its arriving rows' time bounds, gives `np.searchsorted`'s answer whatever
the needles' order (and a join gives the same results with its needles looked up sorted, as
from `SORTED_SEARCH_FROM` needles, or as they come); `_pair_order` is `np.lexsort`'s order."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.operators import joins

from engine.harness import Record
from engine.operators.test_join_slicing import PLANS, records, run

VALUES = st.lists(st.integers(-(2**40), 2**40), max_size=60)


@settings(max_examples=200, deadline=None)
@given(haystack=VALUES, needles=VALUES, codes=st.lists(st.integers(0, 5), max_size=60))
def test_sorted_search_finds_what_searchsorted_finds(
    haystack: list[int], needles: list[int], codes: list[int]
) -> None:
    count = min(len(needles), len(codes))
    sorted_haystack = np.sort(np.array(haystack, np.int64))
    wanted = np.array(needles[:count], np.int64)
    code = np.array(codes[:count], np.int64)
    expected = np.searchsorted(sorted_haystack, wanted)
    for threshold in (0, joins.SORTED_SEARCH_FROM):
        with patch.object(joins, "SORTED_SEARCH_FROM", threshold):
            found = joins._sorted_search(sorted_haystack, wanted, code)
        assert found.tolist() == expected.tolist()


@settings(max_examples=40, deadline=None)
@given(records=records, plan=st.sampled_from(["range", "seed-q3", "tree"]))
def test_joins_give_the_same_results_with_their_lookups_sorted(
    records: list[Record], plan: str
) -> None:
    names = {spec.name for spec in PLANS[plan].inputs}
    mine = [r for r in records if r.source in names]
    as_they_come = run(PLANS[plan], mine, [10_000])
    with patch.object(joins, "SORTED_SEARCH_FROM", 0):
        assert run(PLANS[plan], mine, [10_000]) == as_they_come
        assert run(PLANS[plan], mine, [3]) == as_they_come


@settings(max_examples=300, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(-(2**40), 2**40), st.integers(0, 2**40)), max_size=60),
    runs=st.integers(1, 4),
    small=st.booleans(),
)
def test_pair_order_is_lexsorts_order(pairs: list[tuple[int, int]], runs: int, small: bool) -> None:
    """Random pairs, or a few sorted runs of small values as the join makes them, ties
    included; values too wide to combine take `lexsort` itself."""
    if small:
        pairs = [(rank % 7, later % 5) for rank, later in pairs]
        size = -(-len(pairs) // runs) if pairs else 1
        pairs = [p for at in range(0, len(pairs), size) for p in sorted(pairs[at : at + size])]
    rank = np.array([r for r, _ in pairs], np.int64)
    later = np.array([later for _, later in pairs], np.int64)
    expected = np.lexsort((later, rank))
    assert joins._pair_order(rank, later).tolist() == expected.tolist()
