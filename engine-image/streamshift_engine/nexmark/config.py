"""Parameters of the Nexmark generator, with the reference defaults.

The defaults are those of the Nexmark reference generator (Apache Beam's and the Flink
nexmark suite's `GeneratorConfig` / `NexmarkConfiguration`): events cycle through a block of
`person + auction + bid = 1 + 3 + 46 = 50` indices, 100 auctions in flight, 1,000 active people,
hot ratios 2 (auctions), 4 (bidders) and 4 (sellers), average sizes 200 / 500 / 100 bytes, and a
first-event rate of 10,000 events per second, constant unless `rate_shape` makes it a step or a
sine (`nexmark.rates`). By default events arrive in index (event-time) order;
`out_of_order_group_size` and the late-event settings make them arrive out of order
(`nexmark.arrival`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamshift_engine.nexmark import rates

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
    rate_shape: str = "constant"
    """How the event rate moves over event time (`nexmark.rates`): constant at
    `events_per_second`, a step to `next_events_per_second`, or a sine up to it."""
    next_events_per_second: int = 0
    """The rate after the step, or the sine's peak (below twice `events_per_second`)."""
    step_at_s: int = 0
    """Event-time seconds from index 0 to the step."""
    step_until_s: int = 0
    """Event-time seconds from index 0 to the step back (0: no step back)."""
    period_s: int = 60
    """The sine's period in seconds."""

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
        self._check_shape()
        if 2 * (self.auction_horizon_ms() + 1) >= 1 << 32:
            raise ValueError("auction horizon too long: lower num_in_flight_auctions or raise rate")

    def _check_shape(self) -> None:
        if self.rate_shape not in rates.SHAPES:
            raise ValueError(f"unknown rate shape {self.rate_shape!r}: constant, step or sine")
        if self.rate_shape == "constant":
            return
        if self.next_events_per_second < 1:
            raise ValueError("a step or a sine needs next_events_per_second of at least 1")
        if self.rate_shape == "step" and not (
            self.step_at_s >= 0 and (self.step_until_s == 0 or self.step_until_s > self.step_at_s)
        ):
            raise ValueError("step_at_s must be at least 0 and step_until_s 0 or after it")
        if self.rate_shape == "sine" and not (
            self.period_s >= 2 and self.next_events_per_second < 2 * self.events_per_second
        ):
            raise ValueError("a sine needs period_s >= 2 and a peak below twice the rate")

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
        """Event time of one index (`rates.event_times`)."""
        return int(rates.event_times(np.array([index], np.int64), self)[0])
