"""The Nexmark queries as plan documents, each true to one reference definition (Flink SQL's
nexmark or Beam's; docs/nexmark.md spells out which and how the others differ).

- q0 pass-through (Flink SQL): every bid unchanged.
- q1 currency conversion (Flink SQL): bids with `price` in euro, `0.908 * price`.
- q2 selection (Flink SQL): `auction` and `price` of bids with `auction % 123 == 0`.
- q3 local item suggestion (Flink SQL): persons in OR, ID or CA joined with the auctions they
  sell in category 10, on `auction.seller = person.id`; an incremental join whose state never
  expires (expressed as a range join wider than any event-time distance).
- q4 average price per category, after Flink SQL's nexmark q4 (`MAX(B.price)` per auction over
  the bids with `B.dateTime BETWEEN A.dateTime AND A.expires`, both bounds inclusive, no reserve
  filter; then `AVG` per category): each auction closes at its `expires` with its highest bid
  (auctions without a bid in range are left out), then per category the running average of
  those prices, updated at every close time. One result per category and close time, id
  `nexmark-q4|-1|-1|<category>:<close ts>`, with `average` and `auctions` (how many closed
  auctions it averages). Flink's changelog also updates as bids arrive; its final value per
  category is the last one here. Auctions are keyed by seller and bids by auction, so the close
  runs global: q4 runs at parallelism 1 and its state never expires (unbounded_state).
- q6 average selling price per seller, after Beam's nexmark Query6: the winning bids of Beam's
  `WinningBids` (highest price with `A.dateTime <= B.dateTime < A.expires` and `price >=
  reserve`, ties to the earliest bid), per seller the last 10 of them by (bid time, price)
  (`MovingMeanSellingPrice(10)`), and their mean rounded half up (`Math.round`). Beam updates on
  every winning bid; here one result per seller and close time, id
  `nexmark-q6|-1|-1|<seller>:<close ts>`, with `price`. Global, as q4.
- q5 hot items (Flink SQL): per sliding window (10 s, slide 2 s) the auction(s) with the most
  bids, every tie; global.
- q7 highest bid (Beam): per tumbling window (10 s) the bid(s) with the highest price in it,
  every tie; global.
- q8 monitor new users (Flink SQL): persons who created an auction in the tumbling window
  (10 s) in which they registered. As in the reference SQL each side is reduced per window
  first (persons to id and name; auctions to one row per seller and window, with their
  count), then the two are joined on `person.id = seller` in the same tumbling window; keyed
  by the person.

Inputs use the Nexmark record schemas (`nexmark.model`); bids are keyed by auction, auctions by
seller and persons by id, so q3 and q8 join co-partitioned inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamshift_engine.events.wire import Schema
from streamshift_engine.nexmark.model import AUCTION, BID, KEY_FIELDS, PERSON
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

WINDOW_MS = 10_000
HOT_ITEMS_SLIDE_MS = 2_000
EURO_PER_DOLLAR = 0.908
SELECTED_AUCTION_MODULUS = 123
SELLER_AUCTIONS = 10
"""q6 averages each seller's last 10 winning bids."""
UNBOUNDED_MS = 1 << 60
"""A join range wider than any event-time distance: the join state of q3 never expires."""

Document = dict[str, Any]


def _input(schema: Schema) -> dict[str, Any]:
    return {
        "name": schema.source,
        "topic": f"nexmark-{schema.source}",
        "time_field": schema.time_field,
        "key_field": KEY_FIELDS[schema.source],
        "schema": dict(schema.fields),
    }


def q0(window_ms: int = WINDOW_MS) -> Document:
    return {"name": "nexmark-q0", "inputs": [_input(BID)], "operators": [], "output": "bid"}


def q1(window_ms: int = WINDOW_MS) -> Document:
    convert = {"price": f"price * {EURO_PER_DOLLAR}"}
    operators = [{"id": "euro", "type": "map", "input": "bid", "params": {"fields": convert}}]
    return {"name": "nexmark-q1", "inputs": [_input(BID)], "operators": operators, "output": "euro"}


def q2(window_ms: int = WINDOW_MS) -> Document:
    predicate = f"auction % {SELECTED_AUCTION_MODULUS} == 0"
    operators = [
        {"id": "selected", "type": "filter", "input": "bid", "params": {"predicate": predicate}},
        {
            "id": "fields",
            "type": "project",
            "input": "selected",
            "params": {"fields": {"auction": "auction", "price": "price"}},
        },
    ]
    return {
        "name": "nexmark-q2",
        "inputs": [_input(BID)],
        "operators": operators,
        "output": "fields",
    }


def q3(window_ms: int = WINDOW_MS) -> Document:
    operators = [
        {
            "id": "local",
            "type": "filter",
            "input": "person",
            "params": {"predicate": "state in ['OR', 'ID', 'CA']"},
        },
        {
            "id": "category",
            "type": "filter",
            "input": "auction",
            "params": {"predicate": "category == 10"},
        },
        {
            "id": "joined",
            "type": "window_join",
            "inputs": ["category", "local"],
            "params": {"window": {"kind": "range", "size": UNBOUNDED_MS}, "on": [["seller", "id"]]},
        },
        {
            "id": "suggestion",
            "type": "project",
            "input": "joined",
            "params": {
                "fields": {
                    "id": "id",
                    "name": "local.name",
                    "city": "local.city",
                    "state": "local.state",
                    "auction": "category.id",
                }
            },
        },
    ]
    inputs = [_input(AUCTION), _input(PERSON)]
    return {"name": "nexmark-q3", "inputs": inputs, "operators": operators, "output": "suggestion"}


def q4(window_ms: int = WINDOW_MS) -> Document:
    aggregates = [
        {"name": "average", "fn": "avg", "field": "price"},
        {"name": "auctions", "fn": "count"},
    ]
    operators = [
        {
            "id": "winning",
            "type": "auction_close",
            "inputs": ["auction", "bid"],
            "params": {"carry": ["category"], "reserve": False, "until": "expires"},
        },
        {
            "id": "averages",
            "type": "running_aggregate",
            "input": "winning",
            "params": {"group_by": ["category"], "aggregates": aggregates},
        },
    ]
    inputs = [_input(AUCTION), _input(BID)]
    return {"name": "nexmark-q4", "inputs": inputs, "operators": operators, "output": "averages"}


def q6(window_ms: int = WINDOW_MS) -> Document:
    aggregates = [{"name": "total", "fn": "sum", "field": "price"}, {"name": "bids", "fn": "count"}]
    operators = [
        {
            "id": "winning",
            "type": "auction_close",
            "inputs": ["auction", "bid"],
            "params": {"carry": ["seller"], "reserve": True, "until": "before_expires"},
        },
        {
            "id": "recent",
            "type": "running_aggregate",
            "input": "winning",
            "params": {
                "group_by": ["seller"],
                "aggregates": aggregates,
                "last": {"rows": SELLER_AUCTIONS, "by": ["price"]},
            },
        },
        {
            "id": "average",
            "type": "project",
            "input": "recent",
            "params": {
                "fields": {
                    "seller": "seller",
                    "at": "at",
                    "price": "(2 * total + bids) // (2 * bids)",
                }
            },
        },
    ]
    inputs = [_input(AUCTION), _input(BID)]
    return {"name": "nexmark-q6", "inputs": inputs, "operators": operators, "output": "average"}


def q5(window_ms: int = WINDOW_MS) -> Document:
    slide = max(1, window_ms * HOT_ITEMS_SLIDE_MS // WINDOW_MS)
    operators = [
        {
            "id": "counts",
            "type": "window_aggregate",
            "input": "bid",
            "params": {
                "window": {"kind": "time", "size": window_ms, "slide": slide},
                "group_by": ["auction"],
                "aggregates": [{"name": "bids", "fn": "count"}],
            },
        },
        {"id": "hottest", "type": "topk", "input": "counts", "params": {"by": "bids", "k": 1}},
    ]
    return {
        "name": "nexmark-q5",
        "inputs": [_input(BID)],
        "operators": operators,
        "output": "hottest",
    }


def q7(window_ms: int = WINDOW_MS) -> Document:
    params = {"by": "price", "k": 1, "window": {"kind": "time", "size": window_ms}}
    operators = [{"id": "highest", "type": "topk", "input": "bid", "params": params}]
    return {
        "name": "nexmark-q7",
        "inputs": [_input(BID)],
        "operators": operators,
        "output": "highest",
    }


def q8(window_ms: int = WINDOW_MS) -> Document:
    window = {"kind": "time", "size": window_ms}
    people = {"id": "id", "name": "name"}
    operators = [
        {"id": "people", "type": "project", "input": "person", "params": {"fields": people}},
        {
            "id": "sellers",
            "type": "window_aggregate",
            "input": "auction",
            "params": {
                "window": window,
                "group_by": ["seller"],
                "aggregates": [{"name": "auctions", "fn": "count"}],
            },
        },
        {
            "id": "new_users",
            "type": "window_join",
            "inputs": ["people", "sellers"],
            "params": {"window": window, "on": [["id", "seller"]]},
        },
    ]
    inputs = [_input(PERSON), _input(AUCTION)]
    return {"name": "nexmark-q8", "inputs": inputs, "operators": operators, "output": "new_users"}


DOCUMENTS: dict[str, Callable[[int], Document]] = {
    "nexmark-q0": q0,
    "nexmark-q1": q1,
    "nexmark-q2": q2,
    "nexmark-q3": q3,
    "nexmark-q4": q4,
    "nexmark-q5": q5,
    "nexmark-q6": q6,
    "nexmark-q7": q7,
    "nexmark-q8": q8,
}


def nexmark_plan(name: str, window_ms: int = WINDOW_MS) -> Plan:
    """The validated plan of a Nexmark query (`nexmark-q0` ... `nexmark-q8`)."""
    if name not in DOCUMENTS:
        raise KeyError(f"unknown Nexmark query {name!r}; known: {', '.join(DOCUMENTS)}")
    return parse_plan(DOCUMENTS[name](window_ms))
