"""The auctions and bids the q4 and q6 tests share: a small two-input schema, random inputs with
ties and boundary times, generated Nexmark auctions and bids, and each auction's winning bid by
brute force."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate

from engine.harness import Record

Row = tuple[Any, ...]
PARTITIONS = 3
SMALL_INPUTS = [
    {
        "name": "auction",
        "time_field": "date_time",
        "key_field": "seller",
        "schema": {
            n: "int" for n in ("id", "date_time", "expires", "reserve", "seller", "category")
        },
    },
    {
        "name": "bid",
        "time_field": "date_time",
        "key_field": "auction",
        "schema": {n: "int" for n in ("auction", "bidder", "price", "date_time")},
    },
]


def winners(records: Sequence[Record], beam: bool = False) -> list[tuple[Record, Record]]:
    """Per auction with a winning bid: (auction, bid); highest price, then earliest, then the
    first in (partition, offset) order. Flink SQL's q4 (default): bids at the opening up to and
    including `expires`, any price. Beam's `WinningBids`: bids before `expires`, at least the
    reserve."""
    auctions = [r for r in records if r.source == "auction"]
    bids = [r for r in records if r.source == "bid"]
    won = []
    for auction in auctions:
        a = auction.fields
        valid = [
            b
            for b in bids
            if b.fields["auction"] == a["id"]
            and auction.ts <= b.ts
            and (b.ts < a["expires"] if beam else b.ts <= a["expires"])
            and (b.fields["price"] >= a["reserve"] or not beam)
        ]
        if valid:
            best = min(valid, key=lambda b: (-b.fields["price"], b.ts, b.partition, b.offset))
            won.append((auction, best))
    return won


@st.composite
def auctions_and_bids(draw: st.DrawFn) -> list[Record]:
    """Auctions with distinct ids (some bid on ids no auction has), bids with few prices (ties),
    and times on a coarse grid (bids at the opening and closing instants)."""
    count = draw(st.integers(0, 8))
    records: list[tuple[int, int, str, dict[str, int]]] = []
    for auction_id in range(count):
        opened = draw(st.integers(0, 10)) * 100
        fields = {"id": auction_id, "date_time": opened, "seller": draw(st.integers(0, 5))}
        fields["expires"] = opened + draw(st.integers(0, 6)) * 100
        fields.update(reserve=draw(st.integers(0, 4)), category=draw(st.integers(1, 2)))
        records.append((opened, fields["seller"], "auction", fields))
    for _ in range(draw(st.integers(0, 40))):
        ts = draw(st.integers(0, 16)) * 100
        auction = draw(st.integers(0, count))
        fields = {"auction": auction, "bidder": draw(st.integers(0, 9)), "date_time": ts}
        fields["price"] = draw(st.integers(0, 5))
        records.append((ts, auction, "bid", fields))
    placed: list[Record] = []
    offsets: dict[tuple[str, int], int] = defaultdict(int)
    for ts, key, source, fields in sorted(records, key=lambda r: r[0]):
        place = (source, key % PARTITIONS)
        placed.append(Record(source, place[1], offsets[place], ts, fields))
        offsets[place] += 1
    return placed


def generated_records() -> list[Record]:
    """4,000 generated Nexmark events' auctions and bids."""
    config = GeneratorConfig(partitions=PARTITIONS, events_per_second=2_000)
    events = generate(9, 0, 4_000, config)
    records = []
    for source in ("auction", "bid"):
        batch = events[source]
        places = zip(
            batch.partition.tolist(), batch.offset.tolist(), batch.ts.tolist(), strict=True
        )
        for (partition, offset, ts), fields in zip(places, batch.rows(), strict=True):
            records.append(Record(source, partition, offset, ts, fields))
    return records
