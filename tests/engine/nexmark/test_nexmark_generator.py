"""The Nexmark generator: pure in (seed, index), reference proportions, ids and distributions."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import KEY_FIELDS, SCHEMAS


def _payload_equal(left: Batch, right: Batch) -> bool:
    same = np.array_equal(left.ts, right.ts) and np.array_equal(left.partition, right.partition)
    names = list(left.columns) == list(right.columns)
    return (
        same
        and names
        and all(np.array_equal(left.columns[n], right.columns[n]) for n in left.columns)
    )


def test_same_arguments_give_the_same_events() -> None:
    first, second = generate(42, 1000, 3000), generate(42, 1000, 3000)
    for kind in first:
        assert _payload_equal(first[kind], second[kind])
        assert np.array_equal(first[kind].offset, second[kind].offset)


def test_seeds_give_different_events() -> None:
    prices = [generate(seed, 0, 500)["bid"].columns["price"] for seed in (1, 2)]
    assert not np.array_equal(*prices)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**63 - 1),
    start=st.integers(0, 10**12),
    cuts=st.lists(st.integers(0, 400), min_size=1, max_size=4),
)
def test_any_index_range_generates_independently(seed: int, start: int, cuts: list[int]) -> None:
    whole = generate(seed, start, sum(cuts))
    pieces = []
    position = start
    for size in cuts:
        pieces.append(generate(seed, position, size))
        position += size
    for kind, batch in whole.items():
        joined = Batch.concat([piece[kind] for piece in pieces])
        assert _payload_equal(batch, joined)


def test_kinds_follow_the_one_three_forty_six_cycle() -> None:
    events = generate(3, 0, 5000)
    assert [len(events[k]) for k in ("person", "auction", "bid")] == [100, 300, 4600]
    base = GeneratorConfig().base_time_ms
    assert events["person"].ts[:3].tolist() == [base, base + 5, base + 10]
    assert events["auction"].ts[:4].tolist() == [base, base, base, base + 5]
    assert events["person"].columns["id"][:3].tolist() == [1000, 1001, 1002]
    assert events["auction"].columns["id"][:4].tolist() == [1000, 1001, 1002, 1003]


def test_event_time_follows_the_configured_rate() -> None:
    config = GeneratorConfig(events_per_second=3, base_time_ms=0)
    bids = generate(0, 0, 300, config)["bid"]
    within_block = np.arange(300)[np.arange(300) % 50 >= 4]
    assert bids.ts.tolist() == (within_block * 1000 // 3).tolist()
    assert np.array_equal(bids.ts, bids.columns["date_time"])


def test_bids_and_auctions_refer_to_existing_or_leading_ids() -> None:
    events = generate(5, 0, 20_000)
    bids, auctions = events["bid"], events["auction"]
    index = np.arange(20_000)
    bid_index = index[index % 50 >= 4]
    newest_auction = 1000 + (bid_index // 50) * 3 + 2
    newest_person = 1000 + bid_index // 50
    assert np.all(bids.columns["auction"] <= newest_auction + 10)
    assert np.all(bids.columns["auction"] >= np.maximum(newest_auction - 100, 1000))
    assert np.all(bids.columns["bidder"] <= newest_person + 10)
    hot = np.mean(bids.columns["auction"] % 100 == 0)
    assert 0.45 < hot < 0.60
    assert np.all(auctions.columns["seller"] >= 1000)
    assert set(auctions.columns["category"].tolist()) == {10, 11, 12, 13, 14}
    assert np.all(auctions.columns["expires"] > auctions.ts)
    assert np.all(auctions.columns["reserve"] > auctions.columns["initial_bid"])


def test_prices_are_log_uniform_cents_between_one_and_a_million_dollars() -> None:
    prices = generate(9, 0, 100_000)["bid"].columns["price"]
    assert prices.min() >= 100 and prices.max() <= 100_000_000
    decades = np.bincount(np.floor(np.log10(prices / 100)).astype(int), minlength=6)
    assert np.all(np.abs(decades[:6] / len(prices) - 1 / 6) < 0.01)


def test_average_sizes_match_the_reference() -> None:
    events = generate(11, 0, 50_000)
    averages = {"person": 200, "auction": 500, "bid": 100}
    for kind, batch in events.items():
        sizes = [len(encode_json(batch.take(slice(i, i + 1)))[0]) for i in range(50)]
        payload = np.mean(sizes)
        assert averages[kind] * 0.8 < payload < averages[kind] * 1.6, (kind, payload)
        assert list(batch.columns) == list(SCHEMAS[kind].names)


def test_partitions_hash_the_key_and_offsets_count_within_partitions() -> None:
    config = GeneratorConfig(partitions=5)
    for kind, batch in generate(13, 777, 6000, config).items():
        keys = batch.columns[KEY_FIELDS[kind]].tolist()
        by_key: dict[int, int] = {}
        for key, partition in zip(keys, batch.partition.tolist(), strict=True):
            assert by_key.setdefault(key, partition) == partition
        expected_offsets: list[int] = []
        seen = [0] * 5
        for partition in batch.partition.tolist():
            expected_offsets.append(seen[partition])
            seen[partition] += 1
        assert batch.offset.tolist() == expected_offsets


def test_generated_bytes_are_pinned() -> None:
    """The Spark generator reproduces these events; any change here breaks it on purpose."""
    digest = hashlib.sha256()
    for kind, batch in generate(2024, 0, 2000).items():
        digest.update(kind.encode())
        digest.update(b"\n".join(encode_json(batch)))
        digest.update(batch.partition.tobytes() + batch.offset.tobytes())
    assert digest.hexdigest() == PINNED_DIGEST


PINNED_DIGEST = "e90d3586f274a9f6d034a522394d87958090a09d761838a4b21c20105a77327c"
