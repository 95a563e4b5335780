"""Which event an index is, and the person and auction ids it can refer to (reference semantics).

Indices cycle through blocks of `total_proportion` events: the first `person_proportion` of a
block are persons, the next `auction_proportion` auctions, the rest bids (1:3:46 by default). So
the ids of persons and auctions follow from the index alone, as in the reference's
`lastBase0PersonId`, `lastBase0AuctionId`, `nextBase0PersonId` and `nextBase0AuctionId`: an
event refers to people and auctions that exist, or to a few (`*_ID_LEAD`) about to exist.
All ids here are base 0; the generator adds `FIRST_PERSON_ID` / `FIRST_AUCTION_ID`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamshift_engine.nexmark import draws, rates
from streamshift_engine.nexmark.config import AUCTION_ID_LEAD, PERSON_ID_LEAD, GeneratorConfig

I64 = npt.NDArray[np.int64]


def event_times(indices: I64, config: GeneratorConfig) -> I64:
    """Event time of each index: `base_time_ms + index * 1000 // events_per_second` at a
    constant rate, the rate shape's otherwise (`rates`; integer: exact everywhere)."""
    return rates.event_times(indices, config)


def last_person(indices: I64, config: GeneratorConfig) -> I64:
    """The newest person id at each index (the person's own id at a person index)."""
    block, within = np.divmod(indices, config.total_proportion)
    within = np.minimum(within, config.person_proportion - 1)
    return block * config.person_proportion + within


def last_auction(indices: I64, config: GeneratorConfig) -> I64:
    """The newest auction id at each index (the auction's own id at an auction index; -1 before
    the first auction)."""
    people, auctions = config.person_proportion, config.auction_proportion
    block, within = np.divmod(indices, config.total_proportion)
    before_auctions = within < people
    block = np.where(before_auctions, block - 1, block)
    slot = np.where(before_auctions | (within >= people + auctions), auctions - 1, within - people)
    return block * auctions + slot


def some_person(seed: int, salt: int, indices: I64, config: GeneratorConfig) -> I64:
    """A person among the `num_active_people` newest, or one of the next `PERSON_ID_LEAD`."""
    count = last_person(indices, config) + 1
    active = np.minimum(count, config.num_active_people)
    return count - active + draws.below(seed, salt, indices, active + PERSON_ID_LEAD)


def some_auction(seed: int, salt: int, indices: I64, config: GeneratorConfig) -> I64:
    """An auction among the `num_in_flight_auctions` newest, or one of the next
    `AUCTION_ID_LEAD`."""
    newest = last_auction(indices, config)
    oldest = np.maximum(newest - config.num_in_flight_auctions, 0)
    return oldest + draws.below(seed, salt, indices, newest - oldest + 1 + AUCTION_ID_LEAD)


def prices(seed: int, salt: int, indices: I64) -> I64:
    """Reference `PriceGenerator.nextPrice`: `round(10 ** (6u) * 100)` cents, u uniform in [0,1),
    rounded half up; log-uniform between 1 and 1,000,000 dollars."""
    exponents = draws.unit_interval(seed, salt, indices) * 6.0
    return np.floor(draws.pow10(exponents) * 100.0 + 0.5).astype(np.int64)
