"""The Nexmark event model: Person, Auction and Bid as record schemas, their keys and word lists.

Field names are the reference ones in snake case (`date_time` is the event time in
milliseconds). Each kind travels on its own topic, partitioned by its key field: persons by `id`,
auctions by `seller`, bids by `auction`, so a person, the auctions they sell and the bids on those
auctions' ids meet in co-partitioned key groups where the queries join them.
"""

from __future__ import annotations

from streamshift_engine.events.wire import Schema

PERSON = Schema(
    source="person",
    fields=(
        ("id", "int"),
        ("name", "str"),
        ("email_address", "str"),
        ("credit_card", "str"),
        ("city", "str"),
        ("state", "str"),
        ("date_time", "int"),
        ("extra", "str"),
    ),
    time_field="date_time",
)

AUCTION = Schema(
    source="auction",
    fields=(
        ("id", "int"),
        ("item_name", "str"),
        ("description", "str"),
        ("initial_bid", "int"),
        ("reserve", "int"),
        ("date_time", "int"),
        ("expires", "int"),
        ("seller", "int"),
        ("category", "int"),
        ("extra", "str"),
    ),
    time_field="date_time",
)

BID = Schema(
    source="bid",
    fields=(
        ("auction", "int"),
        ("bidder", "int"),
        ("price", "int"),
        ("date_time", "int"),
        ("extra", "str"),
    ),
    time_field="date_time",
)

SCHEMAS: dict[str, Schema] = {"person": PERSON, "auction": AUCTION, "bid": BID}
KEY_FIELDS: dict[str, str] = {"person": "id", "auction": "seller", "bid": "auction"}

US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = (
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
)
FIRST_NAMES: tuple[str, ...] = tuple(
    ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
)
LAST_NAMES: tuple[str, ...] = tuple(
    ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
)
