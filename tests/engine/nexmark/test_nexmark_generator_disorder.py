"""The Nexmark generator out of order: the reference's shuffled groups, late events, both pure in
(seed, index), and a range generated window by window in arrival slots equal to the whole."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.nexmark import arrival
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate, generate_arriving

SMALL = {"events_per_second": 1000, "base_time_ms": 0, "partitions": 4}


def _rows(batch: Batch) -> list[tuple[object, ...]]:
    """The events of a batch as sortable tuples (time, partition, every field)."""
    columns = [batch.columns[name].tolist() for name in batch.columns]
    return sorted(zip(batch.ts.tolist(), batch.partition.tolist(), *columns, strict=True))


def test_the_slot_of_an_event_is_where_the_reference_emits_it() -> None:
    config = GeneratorConfig(out_of_order_group_size=50, **SMALL)
    indices = np.arange(0, 500, dtype=np.int64)
    slot, late = arrival.slots(7, indices, config)
    assert not late.any()
    # reference nextAdjustedEventNumber: slot s emits event (s // n) * n + (s * 953) % n
    emitted = (slot // 50) * 50 + (slot * 953) % 50
    np.testing.assert_array_equal(emitted, indices)
    assert sorted(slot.tolist()) == indices.tolist()


def test_out_of_order_groups_shuffle_the_same_events() -> None:
    ordered = generate(3, 0, 2000, GeneratorConfig(**SMALL))
    shuffled_config = GeneratorConfig(out_of_order_group_size=100, **SMALL)
    shuffled = generate(3, 0, 2000, shuffled_config)
    for kind, batch in shuffled.items():
        assert _rows(batch) == _rows(ordered[kind])
        if kind == "bid":  # (a group of 100 holds only 2 persons and 6 auctions)
            assert np.any(np.diff(batch.ts) < 0)
        assert int(np.max(np.maximum.accumulate(batch.ts) - batch.ts)) < 100  # within a group
        for p in range(4):  # offsets: arrival rank within the partition
            mine = batch.offset[batch.partition == p]
            np.testing.assert_array_equal(mine, np.arange(len(mine)))


def test_late_events_arrive_late_delay_after_their_slot_and_depend_on_the_seed() -> None:
    config = GeneratorConfig(late_per_million=50_000, late_delay_ms=3000, **SMALL)
    bids = generate(11, 0, 20_000, config)["bid"]
    behind = np.maximum.accumulate(bids.ts) - bids.ts
    late = behind > 0
    assert 0.03 < late.mean() < 0.07  # 5% of events
    inside = late & (bids.ts < bids.ts.max() - 3000)  # (those near the end arrive at its end)
    assert behind[inside].min() >= 2990 and behind.max() <= 3000  # 3000 ms of bids passed them
    again = generate(11, 0, 20_000, config)["bid"]
    np.testing.assert_array_equal(bids.ts, again.ts)
    other = generate(12, 0, 20_000, config)["bid"]
    assert not np.array_equal(bids.ts, other.ts)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    start=st.integers(0, 3000),
    count=st.integers(0, 3000),
    chunk=st.integers(1, 1500),
    group=st.sampled_from([1, 7, 100]),
    late=st.sampled_from([0, 100_000]),
)
def test_windows_of_arrival_slots_one_after_the_other_are_the_whole_range(
    seed: int, start: int, count: int, chunk: int, group: int, late: int
) -> None:
    config = GeneratorConfig(
        out_of_order_group_size=group,
        late_per_million=late,
        late_delay_ms=400 if late else 0,
        **SMALL,
    )
    whole = generate(seed, start, count, config)
    windows = [
        generate_arriving(seed, start, count, first, min(first + chunk, start + count), config)
        for first in range(start, start + count, chunk)
    ]
    for kind, batch in whole.items():
        parts = [w[kind] for w in windows if len(w[kind])]
        joined = Batch.concat(parts) if parts else batch.take(slice(0, 0))
        np.testing.assert_array_equal(joined.ts, batch.ts)
        np.testing.assert_array_equal(joined.partition, batch.partition)
        for name, column in batch.columns.items():
            np.testing.assert_array_equal(joined.columns[name], column, err_msg=name)


def test_a_group_size_the_shuffle_cannot_permute_is_refused() -> None:
    with pytest.raises(ValueError, match="953"):
        GeneratorConfig(out_of_order_group_size=1906)
    with pytest.raises(ValueError, match="late_delay_ms"):
        GeneratorConfig(late_per_million=10)
