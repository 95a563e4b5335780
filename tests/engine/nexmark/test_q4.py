"""Nexmark q4 (Flink SQL's: highest bid per auction with `date_time BETWEEN opening AND expires`,
no reserve; running average per category at each close) against brute force, on random inputs
(ties, reserves, boundary times) and on generated Nexmark events, each also across a snapshot and
restore at a random point; and the boundary cases spelled out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import Plan, PlanError, parse_plan
from streamshift_engine.plan.nexmark_queries import nexmark_plan, q4

from engine.harness import Record, Run, canonical
from engine.nexmark.auctions import (
    PARTITIONS,
    SMALL_INPUTS,
    Row,
    auctions_and_bids,
    generated_records,
    winners,
)


def small_plan(output: str) -> Plan:
    return parse_plan({**q4(), "inputs": SMALL_INPUTS, "output": output})


def winning_rows(records: Sequence[Record]) -> list[Row]:
    rows = []
    for auction, bid in winners(records):
        a = auction.fields
        values = {"auction": a["id"], "category": a["category"], "price": bid.fields["price"]}
        values["bidder"] = bid.fields["bidder"]
        rows.append((f"nexmark-q4|-1|-1|{a['id']}", -1, -1, auction.ts, bid.ts, values))
    return sorted((*row[:5], tuple(sorted(row[5].items()))) for row in rows)


def average_rows(records: Sequence[Record]) -> list[Row]:
    closes: dict[int, list[tuple[int, Record, Record]]] = defaultdict(list)
    for auction, bid in winners(records):
        closes[auction.fields["category"]].append((auction.fields["expires"], auction, bid))
    rows = []
    for category, closed in closes.items():
        for at in sorted({expires for expires, _, _ in closed}):
            upto = [(a, b) for expires, a, b in closed if expires <= at]
            prices = [b.fields["price"] for _, b in upto]
            values = {"category": category, "at": at, "auctions": len(prices)}
            values["average"] = round(sum(prices) / len(prices), 6)
            low, high = min(a.ts for a, _ in upto), max(b.ts for _, b in upto)
            row_id = f"nexmark-q4|-1|-1|{category}:{at}"
            rows.append((row_id, -1, -1, low, high, tuple(sorted(values.items()))))
    return sorted(rows)


@settings(max_examples=60, deadline=None)
@given(records=auctions_and_bids(), chunk=st.integers(1, 6), cut=st.integers(0, 6))
def test_winning_bids_close_at_expiry(records: list[Record], chunk: int, cut: int) -> None:
    run = Run(small_plan("winning"), records, chunk, range(PARTITIONS))
    expected = winning_rows(records)
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected


@settings(max_examples=60, deadline=None)
@given(records=auctions_and_bids(), chunk=st.integers(1, 6), cut=st.integers(0, 6))
def test_running_average_per_category_at_each_close(
    records: list[Record], chunk: int, cut: int
) -> None:
    run = Run(small_plan("averages"), records, chunk, range(PARTITIONS))
    expected = average_rows(records)
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected


@pytest.fixture(scope="module")
def generated() -> list[Record]:
    return generated_records()


@settings(max_examples=8, deadline=None)
@given(chunk=st.integers(20, 200), cut=st.integers(0, 12))
def test_q4_on_generated_events(generated: list[Record], chunk: int, cut: int) -> None:
    plan = nexmark_plan("nexmark-q4")
    expected = average_rows(generated)
    assert len(expected) > 50
    run = Run(plan, generated, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected


def test_q4_runs_global_with_state_that_never_expires() -> None:
    plan = nexmark_plan("nexmark-q4")
    assert not plan.keyed and plan.unbounded_state
    assert plan.result_keys == ("category", "at")


def _boundary(bids: list[tuple[int, int, int]], reserve: int = 0) -> list[Record]:
    """One auction (id 1, category 1, open 100 to 500, `reserve`) and bids `(ts, price,
    partition)`."""
    auction = {"id": 1, "date_time": 100, "expires": 500, "reserve": reserve, "seller": 3}
    records = [Record("auction", 0, 0, 100, {**auction, "category": 1})]
    for offset, (ts, price, partition) in enumerate(bids):
        fields = {"auction": 1, "bidder": offset, "price": price, "date_time": ts}
        records.append(Record("bid", partition, offset, ts, fields))
    return sorted(records, key=lambda r: r.ts)


def _winning(records: list[Record]) -> list[dict[str, Any]]:
    rows = canonical(Run(small_plan("winning"), records, 2, range(PARTITIONS)).straight())
    return [dict(row[5]) for row in rows]


def test_q4_counts_a_bid_exactly_at_expires_and_at_the_opening() -> None:
    at_expires = _winning(_boundary([(300, 5, 0), (500, 9, 1)]))
    assert [(r["price"], r["bidder"]) for r in at_expires] == [(9, 1)]
    at_opening = _winning(_boundary([(100, 7, 0), (99, 8, 1), (501, 9, 2)]))
    assert [(r["price"], r["bidder"]) for r in at_opening] == [(7, 0)]


def test_q4_has_no_reserve_filter() -> None:
    below = _winning(_boundary([(200, 3, 0)], reserve=10))
    assert [(r["price"], r["bidder"]) for r in below] == [(3, 0)]


def test_q4_ties_at_the_top_go_to_the_earliest_bid_then_the_first_place() -> None:
    earliest = _winning(_boundary([(400, 9, 0), (200, 9, 1), (300, 4, 2)]))
    assert [(r["price"], r["bidder"]) for r in earliest] == [(9, 1)]
    same_time = _winning(_boundary([(200, 9, 2), (200, 9, 1), (200, 9, 0)]))
    assert [(r["price"], r["bidder"]) for r in same_time] == [(9, 2)]


def test_auction_close_names_the_missing_field() -> None:
    inputs = [
        SMALL_INPUTS[0],
        {**SMALL_INPUTS[1], "schema": {"auction": "int", "date_time": "int"}},
    ]
    with pytest.raises(PlanError, match="bid needs an int field 'price'"):
        parse_plan({**q4(), "inputs": inputs})
    with pytest.raises(PlanError, match="no window"):
        document = q4()
        document["operators"][1]["params"]["window"] = {"kind": "time", "size": 5}
        parse_plan({**document, "inputs": SMALL_INPUTS})
