"""`Chained`: several lists read as one collection, in order, none of them copied."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from streamshift_engine.events.chained import Chained

PARTS = st.lists(st.lists(st.integers(0, 20), max_size=5), max_size=5)


@given(parts=PARTS, item=st.integers(0, 20))
def test_the_items_of_the_parts_part_after_part(parts: list[list[int]], item: int) -> None:
    chained = Chained(parts)
    joined = [value for part in parts for value in part]
    assert list(chained) == joined and list(chained) == joined  # iterated again, anew
    assert len(chained) == len(joined) and bool(chained) == bool(joined)
    assert (item in chained) == (item in joined)


def test_the_parts_are_the_lists_given() -> None:
    first, second = [1, 2], [3]
    chained = Chained([first, second])
    first.append(9)
    assert list(chained) == [1, 2, 9, 3]
