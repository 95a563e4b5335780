"""Parameters of the Nexmark generator, with the reference defaults.

The defaults are those of the Nexmark reference generator (Apache Beam's and the Flink
nexmark suite's `GeneratorConfig` / `NexmarkConfiguration`): events cycle through a block of
`person + auction + bid = 1 + 3 + 46 = 50` indices, 100 auctions in flight, 1,000 active people,
hot ratios 2 (auctions), 4 (bidders) and 4 (sellers), average sizes 200 / 500 / 100 bytes, and a
first-event rate of 10,000 events per second. By default events arrive in index (event-time)
order; `out_of_order_group_size` and the late-event settings make them arrive out of order
(`nexmark.arrival`).
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
    out_of_order_group_size: int = 1
    """Reference `outOfOrderGroupSize`: events arrive shuffled within aligned groups of this
    many indices (1: in order). Must not be a multiple of 953 (the reference's shuffle)."""
    late_per_million: int = 0
    """Events, per million, that arrive late: `late_delay_ms` of event time after their
    group's slot (an integer, so that every machine picks the same events)."""
    late_delay_ms: int = 0

    def __post_init__(self) -> None:
        counts = (self.person_proportion, self.auction_proportion, self.bid_proportion)
        if min(counts) < 1:
            raise ValueError("every event proportion must be at least 1")
        if self.events_per_second < 1 or self.partitions < 1:
            raise ValueError("events_per_second and partitions must be at least 1")
        if self.out_of_order_group_size < 1 or self.out_of_order_group_size % 953 == 0:
            raise ValueError("out_of_order_group_size must be at least 1 and not a multiple of 953")
        if not 0 <= self.late_per_million <= 1_000_000 or self.late_delay_ms < 0:
            raise ValueError("late_per_million must be in [0, 1e6] and late_delay_ms >= 0")
        if self.late_per_million and not self.late_delay_ms:
            raise ValueError("late events need a late_delay_ms above 0")
        if 2 * (self.auction_horizon_ms() + 1) >= 1 << 32:
            raise ValueError("auction horizon too long: lower num_in_flight_auctions or raise rate")

    @property
    def in_order(self) -> bool:
        """Whether events arrive in index order."""
        return self.out_of_order_group_size == 1 and self.late_per_million == 0

    @property
    def late_slots(self) -> int:
        """How many arrival slots (event indices) a late event arrives after its own: the
        indices `late_delay_ms` of event time span, rounded up."""
        return -(-self.late_delay_ms * self.events_per_second // 1000)

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
