"""The Spark generator gives exactly the engine generator's events and bytes."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import decode_columnar, encode_columnar, encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.spark.events import kind_frame
from streamshift_engine.spark.generator import DEFAULT_TOPICS, GenerateSpec, Wire, records_frame

EVENTS = 100_000


def _by_kind_partition(frame: Any) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Records grouped by (event kind, partition), in the order Spark produced them."""
    kinds = {topic: kind for kind, topic in DEFAULT_TOPICS.items()}
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in frame.toArrow().to_pylist():
        grouped[(kinds[row["topic"]], row["partition"])].append(row)
    return grouped


@pytest.mark.parametrize("seed", [7, 20261122])
def test_json_records_equal_engine_bytes_for_100k_events(spark: Any, seed: int) -> None:
    spec = GenerateSpec(seed=seed, start_index=0, count=EVENTS, wire="json", tasks=2)
    got = _by_kind_partition(records_frame(spark, spec))
    expected: dict[tuple[str, int], list[bytes]] = {}
    keys: dict[tuple[str, int], list[bytes]] = {}
    key_field = {"person": "id", "auction": "seller", "bid": "auction"}
    for kind, batch in generate(seed, 0, EVENTS).items():
        for p in np.unique(batch.partition).tolist():
            part = batch.take(batch.partition == p)
            expected[(kind, p)] = encode_json(part)
            keys[(kind, p)] = [str(k).encode() for k in part.columns[key_field[kind]].tolist()]
    assert sorted(got) == sorted(expected)
    assert sum(len(v) for v in got.values()) == EVENTS
    for where, rows in got.items():
        assert [r["value"] for r in rows] == expected[where], where
        assert [r["key"] for r in rows] == keys[where], where


@pytest.mark.parametrize("seed", [7, 20261122])
def test_columnar_records_decode_to_engine_events_for_100k_events(spark: Any, seed: int) -> None:
    spec = GenerateSpec(seed, 0, EVENTS, "columnar", tasks=2, chunk=30_000)
    got = _by_kind_partition(records_frame(spark, spec))
    for kind, batch in generate(seed, 0, EVENTS).items():
        for p in np.unique(batch.partition).tolist():
            decoded = [decode_columnar(r["value"]) for r in got[(kind, p)]]
            assert all(b.source == kind for b in decoded)
            assert [r["key"] for r in got[(kind, p)]] == [str(p).encode()] * len(decoded)
            _assert_same_events(Batch.concat(decoded), batch.take(batch.partition == p))


def _assert_same_events(got: Batch, expected: Batch) -> None:
    np.testing.assert_array_equal(got.ts, expected.ts)
    np.testing.assert_array_equal(got.partition, expected.partition)
    assert list(got.columns) == list(expected.columns)
    for name, column in expected.columns.items():
        np.testing.assert_array_equal(got.columns[name], column, err_msg=name)


def test_each_chunk_is_the_engine_columnar_encoding_of_that_chunk(spark: Any) -> None:
    spec = GenerateSpec(seed=3, start_index=5_000, count=4_000, wire="columnar", chunk=2_000)
    frame = records_frame(spark, spec).filter("topic = 'nexmark-bid' and partition = 5")
    rows = frame.toArrow().to_pylist()
    expected = []
    for start in (5_000, 7_000):
        bids = generate(3, start, 2_000)["bid"]
        expected.append(encode_columnar(bids.take(bids.partition == 5)))
    assert [r["value"] for r in rows] == expected


DISORDERED = GeneratorConfig(out_of_order_group_size=500, late_per_million=20_000, late_delay_ms=2)
"""Reference out-of-order groups of 500 and 2% late events (2 ms = 20 indices at the default
rate), so late events and shuffled groups straddle the chunks below."""


@pytest.mark.parametrize("wire", ["json", "columnar"])
def test_disordered_records_equal_engine_events_in_arrival_order(spark: Any, wire: Wire) -> None:
    spec = GenerateSpec(7, 1_234, 30_000, wire, DISORDERED, tasks=2, chunk=7_001)
    got = _by_kind_partition(records_frame(spark, spec))
    disordered = 0
    for kind, batch in generate(7, 1_234, 30_000, DISORDERED).items():
        for p in np.unique(batch.partition).tolist():
            part = batch.take(batch.partition == p)
            disordered += int(np.any(np.diff(part.ts) < 0))
            if wire == "json":
                assert [r["value"] for r in got[(kind, p)]] == encode_json(part), (kind, p)
            else:
                decoded = Batch.concat([decode_columnar(r["value"]) for r in got[(kind, p)]])
                _assert_same_events(decoded, part)
    assert disordered > 0


def test_disordered_event_frames_carry_the_engine_offsets(spark: Any) -> None:
    frame = kind_frame(spark, 5, 777, 20_000, "bid", ["price"], DISORDERED, with_offsets=True)
    rows = sorted(frame.toArrow().to_pylist(), key=lambda r: (r["partition"], r["offset"]))
    bids = generate(5, 777, 20_000, DISORDERED)["bid"]
    order = np.lexsort((bids.offset, bids.partition))
    assert [r["price"] for r in rows] == bids.columns["price"][order].tolist()
    assert [r["offset"] for r in rows] == bids.offset[order].tolist()
