"""The column-wise JSON encoding of results equals `orjson.dumps` of each `to_records()` record
(the tests take the column-wise path for every size: `result_json.SMALL` is 0 here), and small
batches, encoded record by record, give the same bytes as the column-wise path."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events import result_json
from streamshift_engine.events.results import ResultBatch, results_from_mapping
from streamshift_engine.events.wire import (
    encode_results_json,
    encode_results_records,
    result_ids,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text() | st.sampled_from(['a"b', "back\\slash", "tab\there", "é ü 漢", "\x00"])
VALUE = INT64 | TEXT | st.booleans() | st.floats(allow_nan=False) | st.none()


@pytest.fixture(autouse=True)
def column_wise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result_json, "SMALL", 0)


def _objects(values: list[Any]) -> Any:
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def _results(rows: list[tuple[int, int, int, str, Any, float]]) -> ResultBatch:
    zeros = [0] * len(rows)
    return results_from_mapping(
        "q",
        {
            "partition": zeros,
            "window_start": [r[0] for r in rows],
            "window_end": [r[1] for r in rows],
            "min_ts": zeros,
            "max_ts": zeros,
            "keys": {"k": [r[2] for r in rows], "name": _objects([r[3] for r in rows])},
            "values": {"v": _objects([r[4] for r in rows]), "f": np.array([r[5] for r in rows])},
        },
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(INT64, INT64, INT64, TEXT, VALUE, st.floats(allow_nan=False)),
        min_size=1,
        max_size=20,
    )
)
def test_json_records_equal_the_per_record_encoding(
    rows: list[tuple[int, int, int, str, Any, float]],
) -> None:
    results = _results(rows)
    expected = list(map(orjson.dumps, results.to_records()))
    assert encode_results_json(results) == expected
    assert encode_results_records(results).to_pylist() == expected
    text_values = {"v": _objects([r[3] for r in rows])}
    same_text = ResultBatch(**{**_fields(results), "values": text_values})
    assert encode_results_json(same_text) == list(map(orjson.dumps, same_text.to_records()))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(INT64, INT64, INT64, TEXT, VALUE, st.floats(allow_nan=False)),
        min_size=0,
        max_size=20,
    ),
    small=st.integers(0, 25),
)
def test_small_batches_encode_record_by_record_as_the_column_wise_path(
    rows: list[tuple[int, int, int, str, Any, float]], small: int
) -> None:
    results = _results(rows)
    column_wise = encode_results_records(results).to_pylist()
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(result_json, "SMALL", small)
        encoded = encode_results_records(results)
    assert encoded.type == pa.binary() and encoded.to_pylist() == column_wise


def _fields(results: ResultBatch) -> dict[str, Any]:
    names = ("query", "partition", "window_start", "window_end", "min_ts", "max_ts", "keys")
    return {name: getattr(results, name) for name in names}


def test_a_join_identity_is_left_to_the_result_id() -> None:
    results = results_from_mapping(
        "j",
        {
            "partition": [0],
            "window_start": [-1],
            "window_end": [-1],
            "min_ts": [0],
            "max_ts": [0],
            "keys": {"id": _objects(["a@0:1|b@0:2"])},
            "values": {"x": [1.5]},
        },
    )
    assert encode_results_json(results) == [
        b'{"id":"j|-1|-1|a@0:1|b@0:2","window_start":-1,"window_end":-1,"x":1.5}'
    ]


def test_no_results_encode_to_no_records() -> None:
    empty = results_from_mapping(
        "e",
        {
            "partition": [],
            "window_start": [],
            "window_end": [],
            "min_ts": [],
            "max_ts": [],
            "keys": {"k": []},
            "values": {"v": []},
        },
    )
    assert encode_results_json(empty) == []
    assert encode_results_records(empty).to_pylist() == []


@settings(max_examples=40, deadline=None)
@given(
    bound=INT64,
    constant=INT64,
    keys=st.lists(INT64, min_size=2, max_size=20),
    texts=st.lists(TEXT, min_size=2, max_size=20),
)
def test_constant_integer_columns_are_encoded_as_the_per_record_reference(
    bound: int, constant: int, keys: list[int], texts: list[str]
) -> None:
    n = min(len(keys), len(texts))
    results = results_from_mapping(
        "c",
        {
            "partition": [0] * n,
            "window_start": [bound] * n,
            "window_end": [bound] * n,
            "min_ts": [0] * n,
            "max_ts": [0] * n,
            "keys": {"k": keys[:n]},
            "values": {"same": [constant] * n, "t": _objects(texts[:n])},
        },
    )
    assert result_ids(results).to_pylist() == results.ids()
    assert encode_results_json(results) == list(map(orjson.dumps, results.to_records()))


@settings(max_examples=30, deadline=None)
@given(query=TEXT, keys=st.lists(TEXT, min_size=1, max_size=10))
def test_ids_of_any_query_name_and_text_keys_are_quoted_as_the_reference(
    query: str, keys: list[str]
) -> None:
    n = len(keys)
    results = results_from_mapping(
        query,
        {
            "partition": [0] * n,
            "window_start": [-1] * n,
            "window_end": [-1] * n,
            "min_ts": [0] * n,
            "max_ts": [0] * n,
            "keys": {"name": _objects(keys)},
            "values": {"extra": _objects(keys[::-1])},
        },
    )
    assert result_ids(results).to_pylist() == results.ids()
    assert encode_results_json(results) == list(map(orjson.dumps, results.to_records()))
