"""Columnar (Arrow IPC) wire format: batches and results round trip, projection reads a subset."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch, results_from_mapping
from streamshift_engine.events.wire import (
    decode_columnar,
    decode_json,
    encode_columnar,
    encode_json,
    encode_results_columnar,
    encode_results_json,
    result_ids,
)
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import BID

INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(INT64, st.integers(0, 2**31 - 1), INT64, st.floats(allow_nan=False), st.text()),
        max_size=30,
    )
)
def test_columnar_round_trip(rows: list[tuple[int, int, int, float, str]]) -> None:
    ts, partition, offset = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    value, name = [r[3] for r in rows], [r[4] for r in rows]
    names = np.empty(len(rows), dtype=object)
    names[:] = name
    batch = Batch(
        "src",
        np.array(ts, dtype=np.int64),
        np.array(partition, dtype=np.int32),
        np.array(offset, dtype=np.int64),
        {"value": np.array(value, dtype=np.float64), "name": names},
    )
    decoded = decode_columnar(encode_columnar(batch))
    assert decoded.source == "src"
    assert decoded.ts.tolist() == ts and decoded.ts.dtype == np.int64
    assert decoded.partition.tolist() == partition and decoded.partition.dtype == np.int32
    assert decoded.offset.tolist() == offset
    assert list(decoded.rows()) == list(batch.rows())


def test_nexmark_batches_round_trip_and_project() -> None:
    for batch in generate(4, 0, 3000).values():
        decoded = decode_columnar(encode_columnar(batch))
        assert list(decoded.rows()) == list(batch.rows())
        assert np.array_equal(decoded.offset, batch.offset)
    bids = generate(4, 0, 3000)["bid"]
    projected = decode_columnar(encode_columnar(bids), columns={"auction", "price"})
    assert list(projected.columns) == ["auction", "price"]
    assert np.array_equal(projected.columns["price"], bids.columns["price"])
    assert np.array_equal(projected.ts, bids.ts)


def test_results_encode_with_their_ids() -> None:
    results = results_from_mapping(
        "q7",
        {
            "partition": [0, 1],
            "window_start": [0, 10],
            "window_end": [10, 20],
            "min_ts": [1, 11],
            "max_ts": [9, 19],
            "keys": {"auction": [5, 6]},
            "values": {"price": [100, 200]},
        },
    )
    records = [r.decode() for r in encode_results_json(results)]
    assert records[0] == (
        '{"id":"q7|0|10|5","window_start":0,"window_end":10,"auction":5,"price":100}'
    )
    table = pa.ipc.open_stream(encode_results_columnar(results)).read_all()
    assert table.column("id").to_pylist() == ["q7|0|10|5", "q7|10|20|6"]
    assert table.column("price").to_pylist() == [100, 200]
    assert table.column("max_ts").to_pylist() == [9, 19]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(INT64, INT64, INT64, st.text(), st.booleans() | st.floats(allow_nan=False)),
        max_size=20,
    )
)
def test_arrow_result_ids_equal_python_ids(rows: list[tuple[int, int, int, str, Any]]) -> None:
    def results(keys: dict[str, list[Any]]) -> ResultBatch:
        zeros = [0] * len(rows)
        columns = {"partition": zeros, "min_ts": zeros, "max_ts": zeros, "values": {}}
        bounds = {"window_start": [r[0] for r in rows], "window_end": [r[1] for r in rows]}
        return results_from_mapping("q", {**columns, **bounds, "keys": keys})

    names = np.empty(len(rows), dtype=object)
    names[:] = [r[3] for r in rows]
    cases = [
        {"k": [r[2] for r in rows]},
        {"k": [r[2] for r in rows], "name": names},
        {"other": [r[4] for r in rows]},
        {},
    ]
    for keys in cases:
        batch = results(keys)
        assert result_ids(batch).to_pylist() == batch.ids()


def test_projected_schema_keeps_named_fields_and_the_time_field() -> None:
    projected = BID.project({"auction", "unknown"})
    assert projected.fields == (("auction", "int"), ("date_time", "int"))
    bids = generate(4, 0, 500)["bid"]
    decoded, dead = decode_json("bid", encode_json(bids), bids.partition, bids.offset, projected)
    assert dead == [] and list(decoded.columns) == ["auction", "date_time"]
    assert np.array_equal(decoded.columns["auction"], bids.columns["auction"])
