"""Each Nexmark query's pipeline against a brute-force pure-Python reference on generated input."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import compile as compile_plan
from streamshift_engine.plan.nexmark_queries import DOCUMENTS, nexmark_plan

WINDOW = 100
EVENTS = 6000
CONFIG = GeneratorConfig(partitions=4)
Row = dict[str, Any]


@pytest.fixture(scope="module")
def events() -> dict[str, Batch]:
    return generate(77, 0, EVENTS, CONFIG)


def _run(query: str, inputs: dict[str, Batch], step: int = 37) -> list[tuple[int, int, Row]]:
    """Feed the inputs in event-time slices of `step` ms (inputs in plan order within a slice),
    advancing the watermark after each; results as (window_start, window_end, row)."""
    plan = nexmark_plan(query, WINDOW)
    pipeline = compile_plan(plan)
    names = [spec.name for spec in plan.inputs]
    first = min(int(inputs[n].ts.min()) for n in names)
    last = max(int(inputs[n].ts.max()) for n in names)
    out: list[ResultBatch] = []
    for start in range(first, last + 1, step):
        for name in names:
            batch = inputs[name]
            out += pipeline.process(batch.take((batch.ts >= start) & (batch.ts < start + step)))
        out += pipeline.advance(start + step)
    out += pipeline.flush()
    rows = []
    for result in out:
        bounds = zip(result.window_start.tolist(), result.window_end.tolist(), strict=True)
        rows += [(s, e, row) for (s, e), row in zip(bounds, result.rows(), strict=True)]
    return rows


def test_every_query_parses_and_compiles() -> None:
    for name in DOCUMENTS:
        assert compile_plan(nexmark_plan(name)).query == name


def test_q0_passes_every_bid_through(events: dict[str, Batch]) -> None:
    rows = [_without_id(row) for _, _, row in _run("nexmark-q0", events)]
    assert sorted(rows, key=_bid_order) == sorted(events["bid"].rows(), key=_bid_order)


def test_q1_converts_prices_to_euro(events: dict[str, Batch]) -> None:
    rows = [_without_id(row) for _, _, row in _run("nexmark-q1", events)]
    expected = [{**bid, "price": bid["price"] * 0.908} for bid in events["bid"].rows()]
    assert sorted(rows, key=_bid_order) == sorted(expected, key=_bid_order)


def test_q2_selects_auctions_divisible_by_123(events: dict[str, Batch]) -> None:
    rows = sorted((r["auction"], r["price"]) for _, _, r in _run("nexmark-q2", events))
    expected = sorted(
        (b["auction"], b["price"]) for b in events["bid"].rows() if b["auction"] % 123 == 0
    )
    assert rows == expected and expected


def test_q3_joins_local_sellers_with_category_ten_auctions(events: dict[str, Batch]) -> None:
    rows = sorted(
        (r["auction"], r["name"], r["city"], r["state"]) for _, _, r in _run("nexmark-q3", events)
    )
    people = [p for p in events["person"].rows() if p["state"] in ("OR", "ID", "CA")]
    expected = sorted(
        (a["id"], p["name"], p["city"], p["state"])
        for a in events["auction"].rows()
        if a["category"] == 10
        for p in people
        if p["id"] == a["seller"]
    )
    assert rows == expected and expected


def _windows_of(ts: int, size: int, slide: int) -> list[int]:
    return [s for s in range(ts - ts % slide - size + slide, ts + 1, slide) if s <= ts < s + size]


def test_q5_reports_the_auctions_with_most_bids_per_sliding_window(
    events: dict[str, Batch],
) -> None:
    slide = WINDOW // 5
    counts: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for bid in events["bid"].rows():
        for start in _windows_of(bid["date_time"], WINDOW, slide):
            counts[start][bid["auction"]] += 1
    expected = set()
    for start, per_auction in counts.items():
        top = max(per_auction.values())
        expected |= {(start, a, n) for a, n in per_auction.items() if n == top}
    rows = {(s, r["auction"], r["bids"]) for s, e, r in _run("nexmark-q5", events)}
    assert rows == expected


def test_q7_reports_the_highest_bids_per_tumbling_window(events: dict[str, Batch]) -> None:
    best: dict[int, list[Row]] = defaultdict(list)
    for bid in events["bid"].rows():
        start = bid["date_time"] - bid["date_time"] % WINDOW
        if not best[start] or bid["price"] > best[start][0]["price"]:
            best[start] = [bid]
        elif bid["price"] == best[start][0]["price"]:
            best[start].append(bid)
    expected = {
        (s, b["auction"], b["bidder"], b["price"]) for s, bids in best.items() for b in bids
    }
    rows = {(s, r["auction"], r["bidder"], r["price"]) for s, e, r in _run("nexmark-q7", events)}
    assert rows == expected


def test_q8_reports_people_who_sell_in_the_window_they_registered(
    events: dict[str, Batch],
) -> None:
    sellers = {
        (a["date_time"] - a["date_time"] % WINDOW, a["seller"]) for a in events["auction"].rows()
    }
    expected = set()
    for person in events["person"].rows():
        start = person["date_time"] - person["date_time"] % WINDOW
        if (start, person["id"]) in sellers:
            expected.add((start, person["id"], person["name"]))
    rows = {(s, r["people.id"], r["people.name"]) for s, e, r in _run("nexmark-q8", events)}
    assert rows == expected and expected


def test_keyed_queries_give_the_same_results_per_partition_subset(
    events: dict[str, Batch],
) -> None:
    """A keyed query run on each partition alone gives, together, the results of one run."""
    whole = {(s, r["people.id"]) for s, _, r in _run("nexmark-q8", events)}
    pieces: set[tuple[int, Any]] = set()
    for partition in range(CONFIG.partitions):
        subset = {k: b.take(b.partition == partition) for k, b in events.items()}
        if all(len(b) for b in subset.values()):
            pieces |= {(s, r["people.id"]) for s, _, r in _run("nexmark-q8", subset)}
    assert pieces == whole
    assert np.unique(events["auction"].partition).size == CONFIG.partitions


def _bid_order(row: Row) -> tuple[Any, ...]:
    return (row["date_time"], row["auction"], row["bidder"], row["price"], row["extra"])


def _without_id(row: Row) -> Row:
    """The payload of a pass-through result (its `id` names the input record)."""
    assert isinstance(row.pop("id"), str)
    return row
