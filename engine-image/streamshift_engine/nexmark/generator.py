"""The deterministic Nexmark generator: a pure, vectorised function of (seed, event index).

`generate(seed, start_index, count, config)` returns the persons, auctions and bids among the
event indices `[start_index, start_index + count)` as three `Batch`es. Every field of event `i`
is computed from `(seed, i)` alone (counter-based draws, see `draws`), so any index range can be
generated independently (a Spark partition generates a range) and gives the same events on any
machine. The semantics follow the Nexmark reference generator (Beam / Flink nexmark
`PersonGenerator`, `AuctionGenerator`, `BidGenerator`); the reference's random stream is
replaced by draws, so the values differ from Java's while the distributions are the same.

Order: each kind's events come in arrival order (`nexmark.arrival`): index order unless the
config shuffles them in out-of-order groups or makes some late; an event's fields and time are
those of its own index either way. Partitions and offsets: each event's `partition` is
`mix64(key) % config.partitions` with the key of its kind (`model.KEY_FIELDS`: persons by id,
auctions by seller, bids by auction). Its `offset` is its position among the events of the same
kind and partition *within the generated range*, starting at 0, in arrival order. For
`start_index > 0` offsets therefore restart at 0: they are range-local positions, and Kafka
assigns the real offsets when the range is produced.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.nexmark import arrival, draws, ids, strings
from streamshift_engine.nexmark.config import (
    FIRST_AUCTION_ID,
    FIRST_CATEGORY_ID,
    FIRST_PERSON_ID,
    HOT_GROUP,
    NUM_CATEGORIES,
    GeneratorConfig,
)
from streamshift_engine.nexmark.model import (
    FIRST_NAMES,
    KEY_FIELDS,
    LAST_NAMES,
    SCHEMAS,
    US_CITIES,
    US_STATES,
)

I64 = npt.NDArray[np.int64]
Columns = dict[str, npt.NDArray[np.generic]]

# One salt per random field: the stream of draws that field reads.
(
    FIRST_NAME,
    LAST_NAME,
    EMAIL_LOCAL_LENGTH,
    EMAIL_LOCAL,
    EMAIL_DOMAIN_LENGTH,
    EMAIL_DOMAIN,
    CARD_GROUP,
    CITY,
    STATE,
    PERSON_EXTRA_LENGTH,
    PERSON_EXTRA,
    HOT_SELLER,
    SELLER,
    CATEGORY,
    INITIAL_BID,
    AUCTION_LENGTH,
    ITEM_NAME_LENGTH,
    ITEM_NAME,
    DESCRIPTION_LENGTH,
    DESCRIPTION,
    RESERVE,
    AUCTION_EXTRA_LENGTH,
    AUCTION_EXTRA,
    HOT_AUCTION,
    AUCTION,
    HOT_BIDDER,
    BIDDER,
    PRICE,
    BID_EXTRA_LENGTH,
    BID_EXTRA,
) = range(1, 31)
CARD_GROUPS = 4


def generate(
    seed: int, start_index: int, count: int, config: GeneratorConfig | None = None
) -> dict[str, Batch]:
    """Persons, auctions and bids among indices `[start_index, start_index + count)`."""
    if start_index < 0 or count < 0:
        raise ValueError("start_index and count must not be negative")
    config = config or GeneratorConfig()
    indices = np.arange(start_index, start_index + count, dtype=np.int64)
    return _build(seed, _by_kind(seed, indices, config), config)


def generate_arriving(
    seed: int,
    start_index: int,
    count: int,
    first_slot: int,
    stop_slot: int,
    config: GeneratorConfig,
) -> dict[str, Batch]:
    """The events of `generate(seed, start_index, count, config)` that arrive in the slots
    `[first_slot, stop_slot)` (`nexmark.arrival`; a slot before the range counts as its first,
    one after it as its last), in arrival order, offsets counted from the first of them:
    consecutive slot windows give, one after the other, the events of the whole range in its
    order, so a range can be generated window by window."""
    end = start_index + count
    group, late = config.out_of_order_group_size, config.late_slots
    low, high = max(start_index, first_slot - late - group), min(end, stop_slot + group)
    indices = np.arange(low, max(low, high), dtype=np.int64)
    chosen = {}
    for kind, kind_indices in _by_kind(seed, indices, config).items():
        slot, _ = arrival.slots(seed, kind_indices, config)
        slot = np.clip(slot, start_index, end - 1)
        chosen[kind] = kind_indices[(slot >= first_slot) & (slot < stop_slot)]
    return _build(seed, chosen, config)


def _by_kind(seed: int, indices: I64, config: GeneratorConfig) -> dict[str, I64]:
    """The indices of each kind, in arrival order."""
    within = indices % config.total_proportion
    first_auction = config.person_proportion
    first_bid = first_auction + config.auction_proportion
    kinds = {
        "person": indices[within < first_auction],
        "auction": indices[(within >= first_auction) & (within < first_bid)],
        "bid": indices[within >= first_bid],
    }
    return {kind: i[arrival.arrival_order(seed, i, config)] for kind, i in kinds.items()}


def _build(seed: int, kinds: dict[str, I64], config: GeneratorConfig) -> dict[str, Batch]:
    builders = {"person": _persons, "auction": _auctions, "bid": _bids}
    batches = {}
    for kind, kind_indices in kinds.items():
        times = ids.event_times(kind_indices, config)
        columns = builders[kind](seed, kind_indices, times, config)
        ordered = {name: columns[name] for name in SCHEMAS[kind].names}
        keys = columns[KEY_FIELDS[kind]].astype(np.int64)
        partition, offset = _placement(keys, config.partitions)
        batches[kind] = Batch(kind, times, partition, offset, ordered)
    return batches


def _placement(keys: I64, partitions: int) -> tuple[npt.NDArray[np.int32], I64]:
    """Partition by key hash, and each event's rank within its partition (in the given order)."""
    partition = (draws.mix64(keys.astype(np.uint64)) % np.uint64(partitions)).astype(np.int32)
    order = np.argsort(partition, kind="stable")
    sizes = np.bincount(partition, minlength=partitions)
    firsts = np.cumsum(sizes) - sizes
    offset = np.empty(len(keys), dtype=np.int64)
    offset[order] = np.arange(len(keys), dtype=np.int64) - firsts[partition[order]]
    return partition, offset


def _persons(seed: int, idx: I64, times: I64, config: GeneratorConfig) -> Columns:
    """Reference `PersonGenerator.nextPerson`."""
    first = draws.below(seed, FIRST_NAME, idx, len(FIRST_NAMES))
    last = draws.below(seed, LAST_NAME, idx, len(LAST_NAMES))
    name = strings.pick(FIRST_NAMES, first) + " " + strings.pick(LAST_NAMES, last)
    local_length = strings.random_lengths(seed, EMAIL_LOCAL_LENGTH, idx, 7)
    domain_length = strings.random_lengths(seed, EMAIL_DOMAIN_LENGTH, idx, 5)
    local = strings.random_text(seed, EMAIL_LOCAL, idx, local_length)
    domain = strings.random_text(seed, EMAIL_DOMAIN, idx, domain_length)
    groups = [draws.below(seed, CARD_GROUP * 100 + g, idx, 10_000) for g in range(CARD_GROUPS)]
    card = [" ".join(f"{g:04d}" for g in parts) for parts in zip(*map(list, groups), strict=True)]
    city = draws.below(seed, CITY, idx, len(US_CITIES))
    state = draws.below(seed, STATE, idx, len(US_STATES))
    name_length = strings.lengths_of(FIRST_NAMES, first) + 1 + strings.lengths_of(LAST_NAMES, last)
    email_length = local_length + 1 + domain_length + 4
    card_length = 5 * CARD_GROUPS - 1
    size = 8 + name_length + email_length + card_length + strings.lengths_of(US_CITIES, city) + 2
    extra_length = strings.extra_lengths(
        seed, PERSON_EXTRA_LENGTH, idx, size, config.avg_person_bytes
    )
    return {
        "id": ids.last_person(idx, config) + FIRST_PERSON_ID,
        "name": name,
        "email_address": local + "@" + domain + ".com",
        "credit_card": strings.as_strings(card),
        "city": strings.pick(US_CITIES, city),
        "state": strings.pick(US_STATES, state),
        "date_time": times,
        "extra": strings.random_text(seed, PERSON_EXTRA, idx, extra_length),
    }


def _auctions(seed: int, idx: I64, times: I64, config: GeneratorConfig) -> Columns:
    """Reference `AuctionGenerator.nextAuction` (sellers and categories drawn at random)."""
    hot = draws.below(seed, HOT_SELLER, idx, config.hot_seller_ratio) > 0
    hot_seller = ids.last_person(idx, config) // HOT_GROUP * HOT_GROUP
    seller = np.where(hot, hot_seller, ids.some_person(seed, SELLER, idx, config))
    initial_bid = ids.prices(seed, INITIAL_BID, idx)
    ahead = ids.event_times(idx + config.auction_events_ahead(), config)
    horizon = ahead - times
    length = 1 + draws.below(seed, AUCTION_LENGTH, idx, np.maximum(2 * horizon, 1))
    name_length = strings.random_lengths(seed, ITEM_NAME_LENGTH, idx, 20)
    description_length = strings.random_lengths(seed, DESCRIPTION_LENGTH, idx, 100)
    size = 8 + name_length + description_length + 8 * 5
    extra_length = strings.extra_lengths(
        seed, AUCTION_EXTRA_LENGTH, idx, size, config.avg_auction_bytes
    )
    return {
        "id": ids.last_auction(idx, config) + FIRST_AUCTION_ID,
        "item_name": strings.random_text(seed, ITEM_NAME, idx, name_length),
        "description": strings.random_text(seed, DESCRIPTION, idx, description_length),
        "initial_bid": initial_bid,
        "reserve": initial_bid + ids.prices(seed, RESERVE, idx),
        "date_time": times,
        "expires": times + length,
        "seller": seller + FIRST_PERSON_ID,
        "category": FIRST_CATEGORY_ID + draws.below(seed, CATEGORY, idx, NUM_CATEGORIES),
        "extra": strings.random_text(seed, AUCTION_EXTRA, idx, extra_length),
    }


def _bids(seed: int, idx: I64, times: I64, config: GeneratorConfig) -> Columns:
    """Reference `BidGenerator.nextBid`: mostly hot auctions and hot bidders."""
    hot_auction = draws.below(seed, HOT_AUCTION, idx, config.hot_auction_ratio) > 0
    hot_auction_id = ids.last_auction(idx, config) // HOT_GROUP * HOT_GROUP
    auction = np.where(hot_auction, hot_auction_id, ids.some_auction(seed, AUCTION, idx, config))
    hot_bidder = draws.below(seed, HOT_BIDDER, idx, config.hot_bidder_ratio) > 0
    hot_bidder_id = ids.last_person(idx, config) // HOT_GROUP * HOT_GROUP + 1
    bidder = np.where(hot_bidder, hot_bidder_id, ids.some_person(seed, BIDDER, idx, config))
    size = np.full(len(idx), 8 * 4, dtype=np.int64)
    extra_length = strings.extra_lengths(seed, BID_EXTRA_LENGTH, idx, size, config.avg_bid_bytes)
    return {
        "auction": auction + FIRST_AUCTION_ID,
        "bidder": bidder + FIRST_PERSON_ID,
        "price": ids.prices(seed, PRICE, idx),
        "date_time": times,
        "extra": strings.random_text(seed, BID_EXTRA, idx, extra_length),
    }
