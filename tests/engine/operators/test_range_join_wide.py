"""A range join whose `W` covers every time distance it meets (q3's never expires) skips the
lookups that only prune: its arriving rows meet every arriving partner ahead of them
(`RangeJoin._candidates`) and lemma 2.2 purges nothing (`RangeJoin._kept`). Against brute force
over the same records with every `W`, wide or not: the same pairs, and the same keep masks as
lemma 2.2 row by row."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.operators.joins import RangeJoin

from engine import references
from engine.harness import Record, Run, canonical, partitioned_records
from engine.plans import join_plan

PARTITIONS = 2
WIDTHS = st.sampled_from([1, 1_000, 20_000, 10**9, 1 << 40, 1 << 60])
"""From narrower than the records' spread to wider than any distance (`joins.WIDE_MS` and up)."""

records = partitioned_records(
    ["S", "T"], PARTITIONS, {"k": st.integers(0, 2), "v": st.integers(0, 9)}, max_records=15
)


@settings(max_examples=60, deadline=None)
@given(records=records, size=WIDTHS, chunk=st.integers(1, 8))
def test_every_pair_within_the_range_once_wide_or_not(
    records: list[Record], size: int, chunk: int
) -> None:
    plan = join_plan({"kind": "range", "size": size})
    expected = references.join("join", records, "k", lambda a, b: abs(a.ts - b.ts) <= size)
    assert canonical(Run(plan, records, chunk, range(PARTITIONS)).straight()) == expected


def _side(draw: st.DrawFn, rows: int, scale: int) -> dict[str, Any]:
    times = draw(st.lists(st.integers(0, 50_000), min_size=rows, max_size=rows))
    low = [t * scale for t in times]
    spread = draw(st.lists(st.integers(0, 3_000), min_size=rows, max_size=rows))
    high = np.array([a + b for a, b in zip(low, spread, strict=True)], np.int64)
    return {"ts": high, "min_ts": np.array(low, np.int64), "max_ts": high}


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int], list[Any]]:
    """Two sides' rows, held ones first, then arriving ones (at least one), with their key
    codes."""
    sides, counts, codes = [], [], []
    scale = draw(st.sampled_from([1, 1 << 26]))  # times over 50 s, or over a century
    for _ in (0, 1):
        held, arriving = draw(st.integers(0, 8)), draw(st.integers(1, 8))
        sides.append(_side(draw, held + arriving, scale))
        counts.append(held)
        keys = draw(st.lists(st.integers(0, 3), min_size=held + arriving, max_size=held + arriving))
        codes.append(np.array(keys, np.int64))
    return sides, counts, codes


@settings(max_examples=400, deadline=None)
@given(drawn=tables(), size=WIDTHS)
def test_rows_go_as_lemma_2_2_says_wide_or_not(
    drawn: tuple[list[dict[str, Any]], list[int], list[Any]], size: int
) -> None:
    """A row goes iff a tuple of its key arriving on the other side has `min_ts` more than `W`
    past its `max_ts` (no mask: every row stays)."""
    sides, counts, codes = drawn
    join = RangeJoin("j", ["S", "T"], [("k", "k")], size, [["k"], ["k"]], [[], []], True)
    kept = join._kept([sides[0], sides[1]], counts, codes)
    for side in (0, 1):
        other = 1 - side
        later = range(counts[other], len(codes[other]))
        expected = [
            not any(
                codes[other][j] == codes[side][i]
                and sides[other]["min_ts"][j] - size > sides[side]["max_ts"][i]
                for j in later
            )
            for i in range(len(codes[side]))
        ]
        found = [True] * len(expected) if kept[side] is None else kept[side].tolist()
        assert found == expected
