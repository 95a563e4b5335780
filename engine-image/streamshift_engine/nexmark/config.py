"""Parameters of the Nexmark generator, with the reference defaults.

The defaults are those of the Nexmark reference generator (Apache Beam's and the Flink
nexmark suite's `GeneratorConfig` / `NexmarkConfiguration`): events cycle through a block of
`person + auction + bid = 1 + 3 + 46 = 50` indices, 100 auctions in flight, 1,000 active people,
hot ratios 2 (auctions), 4 (bidders) and 4 (sellers), average sizes 200 / 500 / 100 bytes, and a
first-event rate of 10,000 events per second.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
HOT_GROUP = 100
"""Hot auctions, sellers and bidders are the first of the last group of this many ids."""


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    """What the generator needs besides `(seed, event index)`; equal configs give equal events."""

    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    hot_auction_ratio: int = 2
    hot_bidder_ratio: int = 4
    hot_seller_ratio: int = 4
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    events_per_second: int = 10_000
    base_time_ms: int = 1_704_067_200_000
    """Event time of index 0: 2024-01-01T00:00:00Z."""
    partitions: int = 8

    def __post_init__(self) -> None:
        counts = (self.person_proportion, self.auction_proportion, self.bid_proportion)
        if min(counts) < 1:
            raise ValueError("every event proportion must be at least 1")
        if self.events_per_second < 1 or self.partitions < 1:
            raise ValueError("events_per_second and partitions must be at least 1")
        if 2 * (self.auction_horizon_ms() + 1) >= 1 << 32:
            raise ValueError("auction horizon too long: lower num_in_flight_auctions or raise rate")

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def auction_events_ahead(self) -> int:
        """Events until `num_in_flight_auctions` more auctions exist (reference
        `nextAuctionLengthMs`): an auction's length is drawn in `[1, 2 * horizon]` where the
        horizon is the event-time distance to the event this many indices later."""
        return self.num_in_flight_auctions * self.total_proportion // self.auction_proportion

    def auction_horizon_ms(self) -> int:
        """The horizon rounded down (the per-event horizon is this or one more)."""
        return self.auction_events_ahead() * 1000 // self.events_per_second

    def event_time_ms(self, index: int) -> int:
        """Event time of one index: `base_time_ms + index * 1000 // events_per_second`."""
        return self.base_time_ms + index * 1000 // self.events_per_second
