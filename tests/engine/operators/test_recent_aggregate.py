"""`recent_aggregate` takes a batch's records in rounds of vectors (`_Tops`), and must give what
its definition gives, the per-record loop written out here: the same output batch (values and
dtypes) and the same kept lists after every batch, whatever the batches hold: groups with more
records than a round, orders that tie, records older than every kept one, float inputs and
values near int64's range (which take the loop)."""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.operators import recent_aggregate
from streamshift_engine.operators.recent_aggregate import RecentAggregate
from streamshift_engine.operators.stream import MAX_TS, MIN_TS
from streamshift_engine.windows.aggregates import AggregateSpec
from streamshift_engine.windows.record_windows import python_column

ROWS = 3
AGGREGATES = (
    AggregateSpec("total", "sum", "price"),
    AggregateSpec("bids", "count", None),
    AggregateSpec("low", "min", "price"),
    AggregateSpec("high", "max", "price"),
)


def reference(
    kept: dict[Any, list[Any]], batch: Batch, keyed: bool
) -> tuple[list[int], list[tuple[Any, ...]]]:
    """The definition: records in `(ts, partition, offset)` order, each inserted into its
    group's sorted kept list, the oldest beyond `ROWS` dropped, the totals after the last record
    of each (group, ts): the emitted rows and their (count, low ts, high ts, sum, min, max)."""
    order = np.lexsort((batch.offset, batch.partition, batch.ts)).tolist()
    low, high = batch.columns.get(MIN_TS, batch.ts), batch.columns.get(MAX_TS, batch.ts)
    price = batch.columns["price"]
    emitted: dict[Any, tuple[int, tuple[Any, ...]]] = {}
    for index in order:
        key = (batch.columns["seller"][index].item(),)
        group_key = (batch.partition[index].item() if keyed else 0, key)
        record_order = tuple(
            c[index].item() for c in (high, price, batch.ts, batch.partition, batch.offset)
        )
        value = (1, low[index].item(), high[index].item(), *[price[index].item()] * 3)
        group = kept.setdefault(group_key, [])
        bisect.insort(group, (record_order, value))
        if len(group) > ROWS:
            del group[0]
        values = list(zip(*[v for _, v in group], strict=True))
        totals = (sum(values[0]), min(values[1]), max(values[2]), sum(values[3]))
        totals += (min(values[4]), max(values[5]))
        emitted[(group_key, batch.ts[index].item())] = (order.index(index), totals)
    last = sorted(emitted.values())
    return [order[position] for position, _ in last], [totals for _, totals in last]


def batches(draw: Any, count: int, dtype: str, large: bool) -> list[Batch]:
    found = []
    offset = 0
    for _ in range(count):
        size = draw(st.integers(1, 120))
        sellers = draw(st.integers(1, 4))
        spread = draw(st.integers(1, 30))  # small: orders tie more often

        def column(lo: int, hi: int, size: int = size) -> Any:
            return np.array(draw(st.lists(st.integers(lo, hi), min_size=size, max_size=size)))

        ts = np.sort(column(0, 40))
        prices = column(-spread, spread).astype(dtype) + (2**62 if large else 0)
        columns = {
            "seller": column(0, sellers),
            "price": prices,
            MIN_TS: ts - column(0, 5),
            MAX_TS: ts - column(0, spread),
        }
        partition = column(0, 1).astype(np.int32)
        offsets = np.arange(offset, offset + size, dtype=np.int64) // draw(st.integers(1, 3))
        offset += size
        found.append(Batch("winning", ts.astype(np.int64), partition, offsets, columns))
    return found


@st.composite
def inputs(draw: Any) -> tuple[list[Batch], int, bool]:
    dtype = draw(st.sampled_from(["int64", "int64", "float64"]))
    large = draw(st.booleans()) and dtype == "int64" and draw(st.booleans())
    found = batches(draw, draw(st.integers(1, 4)), dtype, large)
    return found, draw(st.sampled_from([2, 5, 32])), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(drawn=inputs())
def test_rounds_give_the_per_record_loop(drawn: tuple[list[Batch], int, bool]) -> None:
    found, size, keyed = drawn
    recent_aggregate.VECTOR_RECORDS = size
    try:
        op = RecentAggregate("recent", ["seller"], AGGREGATES, keyed, ROWS, ["price"])
        kept: dict[Any, list[Any]] = {}
        for batch in found:
            (out,) = op.process(0, batch)
            rows, totals = reference(kept, batch, keyed)
            assert out.columns["seller"].tolist() == batch.columns["seller"][rows].tolist()
            assert out.columns["at"].tolist() == batch.ts[rows].tolist()
            expected = list(zip(*totals, strict=True))
            assert out.columns["bids"].tolist() == list(expected[0])
            assert out.columns[MIN_TS].tolist() == list(expected[1])
            assert out.columns[MAX_TS].tolist() == list(expected[2])
            for name, column in zip(("total", "low", "high"), expected[3:], strict=True):
                want = np.asarray(list(column))
                assert out.columns[name].dtype == want.dtype
                assert out.columns[name].tolist() == want.tolist()
                assert list(map(type, out.columns[name].tolist())) == list(map(type, want.tolist()))
            assert op.kept.groups == kept
    finally:
        recent_aggregate.VECTOR_RECORDS = 32


def test_rounds_beyond_int64_give_the_loops_dtype(monkeypatch: Any) -> None:
    """Rounds of sums within int64 and past it: the output is one column as the loop makes it
    (`python_column` of all the sums)."""
    monkeypatch.setattr(recent_aggregate, "VECTOR_RECORDS", 2)
    prices = np.array([1, 2, 2**62, 2**62, 2**62, -1, -2], np.int64)
    ts = np.arange(len(prices), dtype=np.int64)
    columns = {"seller": np.zeros(len(prices), np.int64), "price": prices}
    batch = Batch("winning", ts, np.zeros(len(prices), np.int32), ts.copy(), columns)
    (out,) = RecentAggregate("recent", ["seller"], AGGREGATES, False, ROWS, []).process(0, batch)
    sums = [sum(prices[max(0, i - ROWS + 1) : i + 1].tolist()) for i in range(len(prices))]
    want = python_column(sums)
    assert out.columns["total"].dtype == want.dtype
    assert out.columns["total"].tolist() == want.tolist()


def one_group(prices: list[int], ts: list[int], highs: list[int], lows: list[int]) -> Batch:
    columns = {
        "seller": np.zeros(len(prices), np.int64),
        "price": np.array(prices, np.int64),
        MIN_TS: np.array(lows, np.int64),
        MAX_TS: np.array(highs, np.int64),
    }
    zeros = np.zeros(len(prices), np.int64)
    return Batch("winning", np.array(ts, np.int64), zeros.astype(np.int32), zeros, columns)


def test_a_record_tied_with_a_kept_one_in_order_goes_by_its_inputs() -> None:
    """The same order as the kept record (operator outputs number their offsets from 0 in each
    batch) but a smaller input: `bisect.insort` puts it first, so it is the one dropped."""
    op = RecentAggregate("recent", ["seller"], AGGREGATES, False, 1, ["price"])
    op.process(0, one_group([1], [5], [5], [3]))
    (out,) = op.process(0, one_group([1], [5], [5], [0]))
    assert out.columns[MIN_TS].tolist() == [3]


def test_a_round_left_without_results_does_not_set_the_dtype(monkeypatch: Any) -> None:
    """A first round past int64 (its sums a float column) whose records all share their ts with
    the second round's: only the second round's last record is emitted, as an int64."""
    monkeypatch.setattr(recent_aggregate, "VECTOR_RECORDS", 2)
    op = RecentAggregate("recent", ["seller"], AGGREGATES, False, 2, [])
    big = 3 * 2**61
    (out,) = op.process(0, one_group([big, big, 1, 1], [3] * 4, [0, 1, 2, 3], [0] * 4))
    assert out.columns["total"].dtype == np.int64
    assert out.columns["total"].tolist() == [2]
