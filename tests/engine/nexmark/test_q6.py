"""Nexmark q6 (Beam's Query6: per seller, the rounded mean of its last 10 winning bids by bid time)
against a brute-force reading of Beam's `WinningBids` and `MovingMeanSellingPrice`, on random
inputs and on generated events, across a snapshot and restore; and the boundary cases."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import Plan, parse_plan
from streamshift_engine.plan.nexmark_queries import SELLER_AUCTIONS, nexmark_plan, q6

from engine.harness import Record, Run, canonical
from engine.nexmark.auctions import (
    PARTITIONS,
    SMALL_INPUTS,
    Row,
    auctions_and_bids,
    generated_records,
    winners,
)


def small_plan() -> Plan:
    return parse_plan({**q6(), "inputs": SMALL_INPUTS})


def seller_rows(records: Sequence[Record]) -> list[Row]:
    """Per seller and close time: the last 10 winning bids closed by then, latest by (bid time,
    price), and `Math.round` of their mean."""
    won: dict[int, list[tuple[Record, Record]]] = defaultdict(list)
    for auction, bid in winners(records, beam=True):
        won[auction.fields["seller"]].append((auction, bid))
    rows = []
    for seller, pairs in won.items():
        for at in sorted({a.fields["expires"] for a, _ in pairs}):
            closed = [(a, b) for a, b in pairs if a.fields["expires"] <= at]
            closed.sort(
                key=lambda p: (
                    p[1].ts,
                    p[1].fields["price"],
                    p[0].fields["expires"],
                    p[0].fields["id"],
                )
            )
            kept = closed[-SELLER_AUCTIONS:]
            total, count = sum(b.fields["price"] for _, b in kept), len(kept)
            values = {"seller": seller, "at": at, "price": (2 * total + count) // (2 * count)}
            low, high = min(a.ts for a, _ in kept), max(b.ts for _, b in kept)
            row_id = f"nexmark-q6|-1|-1|{seller}:{at}"
            rows.append((row_id, -1, -1, low, high, tuple(sorted(values.items()))))
    return sorted(rows)


@settings(max_examples=60, deadline=None)
@given(records=auctions_and_bids(), chunk=st.integers(1, 6), cut=st.integers(0, 6))
def test_q6_matches_beams_query6(records: list[Record], chunk: int, cut: int) -> None:
    run = Run(small_plan(), records, chunk, range(PARTITIONS))
    expected = seller_rows(records)
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected


@settings(max_examples=6, deadline=None)
@given(chunk=st.integers(20, 200), cut=st.integers(0, 12))
def test_q6_on_generated_events(generated: list[Record], chunk: int, cut: int) -> None:
    expected = seller_rows(generated)
    assert len(expected) > 50
    assert any(dict(row[5])["price"] for row in expected)
    run = Run(nexmark_plan("nexmark-q6"), generated, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected


def _auction(auction_id: int, opened: int, expires: int, reserve: int = 0) -> Record:
    fields = {"id": auction_id, "date_time": opened, "expires": expires, "reserve": reserve}
    return Record("auction", 0, auction_id, opened, {**fields, "seller": 7, "category": 1})


def _bid(offset: int, auction: int, ts: int, price: int, partition: int = 0) -> Record:
    fields = {"auction": auction, "bidder": offset, "price": price, "date_time": ts}
    return Record("bid", partition, offset, ts, fields)


def _prices(records: list[Record]) -> list[tuple[int, int]]:
    records = sorted(records, key=lambda r: r.ts)
    rows = canonical(Run(small_plan(), records, 3, range(PARTITIONS)).straight())
    assert rows == seller_rows(records)
    return [(dict(row[5])["at"], dict(row[5])["price"]) for row in rows]


def test_q6_leaves_out_a_bid_exactly_at_expires_and_below_the_reserve() -> None:
    records = [_auction(1, 100, 500, reserve=5), _bid(0, 1, 200, 6), _bid(1, 1, 500, 90)]
    records += [_bid(2, 1, 300, 4)]
    assert _prices(records) == [(500, 6)]


def test_q6_ties_at_the_top_go_to_the_earliest_bid() -> None:
    records = [_auction(1, 100, 500), _bid(0, 1, 400, 9), _bid(1, 1, 200, 9, partition=1)]
    rows = canonical(Run(small_plan(), records, 1, range(PARTITIONS)).straight())
    assert [(row[3], row[4]) for row in rows] == [(100, 200)]


def test_q6_keeps_the_last_ten_by_bid_time_not_by_close() -> None:
    """Eleven auctions; the last to close has the oldest winning bid, so it drops out at once."""
    records = [_auction(i, 100 + i, 1_000 + i) for i in range(10)]
    records += [_bid(i, i, 500 + i, 10) for i in range(10)]
    records += [_auction(10, 110, 2_000), _bid(10, 10, 120, 1_000)]
    prices = _prices(records)
    assert prices[-2:] == [(1_009, 10), (2_000, 10)]


def test_q6_rounds_half_up() -> None:
    records = [_auction(1, 100, 500), _auction(2, 100, 600), _bid(0, 1, 200, 2), _bid(1, 2, 300, 3)]
    assert _prices(records) == [(500, 2), (600, 3)]


@pytest.fixture(scope="module")
def generated() -> list[Record]:
    return generated_records()
