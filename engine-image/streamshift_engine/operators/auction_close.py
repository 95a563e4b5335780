"""Auction close: the winning bid of each auction, emitted when the auction closes (Nexmark q4).

Two inputs: auctions (port 0: `id`, `expires`, `reserve` and the `carry` fields, event time the
opening `date_time`) and bids (port 1: `auction`, `price`, `bidder`). The winning bid of an
auction is the highest bid with `auction.date_time <= bid.date_time <= auction.expires`
(`until="expires"`, Flink SQL's `BETWEEN`) or `< auction.expires` (`until="before_expires"`,
Beam's `WinningBids`), and, with `reserve`, `price >= reserve` (Beam); among equal prices the
earliest bid wins (Beam's `PRICE_THEN_DESCENDING_TIME`), then the first in `(partition,
offset)` order, so the winner does not depend on the order across partitions. Auctions without
such a bid produce nothing (docs/nexmark.md).

An auction closes once the watermark is past `expires` (every bid at `expires` has then been
released), or at end of input; its record carries `ts = expires`, `_min_ts` the auction's
opening time and `_max_ts` the winning bid's time, and records of one firing come out in
`(expires, id)` order. Auctions and bids are not co-partitioned (auctions are keyed by seller),
so the operator is global: its state lives under partition 0 and the plan runs at parallelism 1.
Bids are matched to open auctions vectorised (a sorted id lookup per batch); the merge order puts
an input's auctions before bids of the same release, so a bid always finds its open auction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.stream import MAX_TS, MIN_TS, stream
from streamshift_engine.state.stores import TableStore

_STATE = ("id", "opened", "expires", "reserve", "price", "bidder", "bid_ts", "bid_partition")
_BID_ORDER = "bid_offset"


class AuctionClose(Operator):
    """Holds open auctions with their best bid so far; fires them at `expires`."""

    def __init__(
        self,
        node_id: str,
        carry: Sequence[str],
        carry_dtypes: Mapping[str, Any],
        reserve: bool = True,
        until: str = "expires",
    ) -> None:
        super().__init__(node_id, keyed=False)
        self.carry = tuple(carry)
        self.reserve = reserve
        self.inclusive = until == "expires"
        dtypes = {**dict.fromkeys((*_STATE, _BID_ORDER), np.int64), "won": np.bool_, **carry_dtypes}
        self.open = TableStore(dtypes)
        self.stores = {"open": self.open}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        if port == 0:
            self._open(batch)
        else:
            self._bid(batch)
        return []

    def _open(self, batch: Batch) -> None:
        n = len(batch)
        columns = batch.columns
        rows = {
            "partition": np.zeros(n, np.int32),
            "id": columns["id"],
            "opened": batch.ts,
            "expires": columns["expires"],
            "reserve": columns["reserve"],
            **{name: np.zeros(n, np.int64) for name in (*_STATE[4:], _BID_ORDER)},
            "won": np.zeros(n, dtype=bool),
            **{name: columns[name] for name in self.carry},
        }
        self.open.append(rows)

    def _bid(self, batch: Batch) -> None:
        table = self.open.columns
        if len(self.open) == 0:
            return
        by_id = np.argsort(table["id"], kind="stable")
        ids = table["id"][by_id]
        auction = batch.columns["auction"]
        place = np.minimum(np.searchsorted(ids, auction), len(ids) - 1)
        row = by_id[place]
        price = batch.columns["price"]
        valid = (ids[place] == auction) & (batch.ts >= table["opened"][row])
        expires = table["expires"][row]
        valid &= (batch.ts <= expires) if self.inclusive else (batch.ts < expires)
        if self.reserve:
            valid &= price >= table["reserve"][row]
        if not valid.any():
            return
        bids = np.flatnonzero(valid)
        row, price, ts = row[bids], price[bids], batch.ts[bids]
        partition, offset = batch.partition[bids].astype(np.int64), batch.offset[bids]
        order = np.lexsort((offset, partition, ts, -price, row))
        first = np.ones(len(order), dtype=bool)
        first[1:] = row[order][1:] != row[order][:-1]
        best = order[first]
        row, price, ts = row[best], price[best], ts[best]
        partition, offset, bidder = (
            partition[best],
            offset[best],
            batch.columns["bidder"][bids][best],
        )
        held = (table["price"][row], -table["bid_ts"][row], -table["bid_partition"][row])
        better = ~table["won"][row] | _lexicographic_greater(
            (price, -ts, -partition, -offset), (*held, -table[_BID_ORDER][row])
        )
        row = row[better]
        table["won"][row] = True
        table["price"][row] = price[better]
        table["bidder"][row] = bidder[better]
        table["bid_ts"][row] = ts[better]
        table["bid_partition"][row] = partition[better]
        table[_BID_ORDER][row] = offset[better]

    def advance(self, watermark: int) -> list[Batch]:
        table = self.open.columns
        due = table["expires"] < watermark
        if not due.any():
            return []
        fired = {name: column[due] for name, column in table.items()}
        self.open.keep(~due)
        won = fired["won"]
        order = np.lexsort((fired["id"][won], fired["expires"][won]))
        fired = {name: column[won][order] for name, column in fired.items()}
        columns = {
            "auction": fired["id"],
            **{name: fired[name] for name in self.carry},
            "price": fired["price"],
            "bidder": fired["bidder"],
            MIN_TS: fired["opened"],
            MAX_TS: fired["bid_ts"],
        }
        return [stream(self.id, fired["expires"], fired["partition"], columns)]


def _lexicographic_greater(
    left: Sequence[np.ndarray[Any, Any]], right: Sequence[np.ndarray[Any, Any]]
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Per row, whether the tuple of `left` values is greater than that of `right`."""
    greater = np.zeros(len(left[0]), dtype=bool)
    equal = np.ones(len(left[0]), dtype=bool)
    for a, b in zip(left, right, strict=True):
        greater |= equal & (a > b)
        equal &= a == b
    return greater
