"""The column-wise JSON encoding of events equals `orjson.dumps` of each event's dict."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.event_json import encode_events_json
from streamshift_engine.events.wire import encode_json
from streamshift_engine.nexmark.generator import generate

INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text() | st.sampled_from(['a"b', '","', "back\\slash", "\\", "tab\there", "é ü 漢 😀"])
FLOAT = st.floats(width=64)
ANY = INT64 | TEXT | FLOAT | st.booleans() | st.none() | st.lists(TEXT | INT64, max_size=3)


def _objects(values: list[Any]) -> np.ndarray[Any, Any]:
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def _batch(columns: dict[str, np.ndarray[Any, Any]], n: int) -> Batch:
    index = np.arange(n, dtype=np.int64)
    return Batch("s", index, np.zeros(n, dtype=np.int32), index, columns)


def _per_record(columns: dict[str, np.ndarray[Any, Any]], n: int) -> list[bytes]:
    lists = {name: column.tolist() for name, column in columns.items()}
    return [orjson.dumps({name: lists[name][i] for name in lists}) for i in range(n)]


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(INT64, TEXT, FLOAT, st.booleans(), ANY, st.integers(0, 2**64 - 1) | FLOAT),
        min_size=1,
        max_size=25,
    ),
    name=TEXT,
)
def test_records_equal_orjson_per_record(rows: list[tuple[Any, ...]], name: str) -> None:
    columns = {
        "i": np.array([r[0] for r in rows], dtype=np.int64),
        name: _objects([r[1] for r in rows]),
        "f": np.array([r[2] for r in rows], dtype=np.float64),
        "b": np.array([r[3] for r in rows], dtype=np.bool_),
        "any": _objects([r[4] for r in rows]),
        "big": _objects([r[5] for r in rows]),
        "u": np.array([r[0] % 2**64 for r in rows], dtype=np.uint64),
        "f32": np.array([r[2] for r in rows]).clip(-3e38, 3e38).astype(np.float32),
    }
    expected = _per_record(columns, len(rows))
    assert encode_json(_batch(columns, len(rows))) == expected


def test_nexmark_events_equal_orjson_per_record() -> None:
    for batch in generate(11, 0, 5_000).values():
        columns = dict(batch.columns)
        assert encode_json(batch) == _per_record(columns, len(batch))


def test_empty_batches_and_batches_without_columns() -> None:
    assert encode_json(_batch({"a": np.array([], dtype=np.int64)}, 0)) == []
    assert encode_json(_batch({}, 3)) == [b"{}"] * 3
    array = encode_events_json(_batch({"a": np.array([1, -2])}, 2))
    assert array.to_pylist() == [b'{"a":1}', b'{"a":-2}']


def test_an_unserialisable_value_raises_like_orjson() -> None:
    too_big = _batch({"a": _objects([1, 2**64])}, 2)
    with pytest.raises(orjson.JSONEncodeError):
        encode_json(too_big)


def test_strings_holding_commas_and_quotes_keep_their_bounds() -> None:
    """Strings whose JSON text holds `","` (a lone comma, an escaped quote before a comma,
    escaped backslashes before a quote) split at the separators only."""
    texts = ["", ",", 'x",', '",', "\\", '\\",\\\\', ",,", '"', "a"]
    names = np.empty(len(texts), dtype=object)
    names[:] = texts
    batch = Batch(
        "s",
        np.zeros(len(texts), np.int64),
        np.zeros(len(texts), np.int32),
        np.arange(len(texts), dtype=np.int64),
        {"name": names},
    )
    assert encode_events_json(batch).to_pylist() == [orjson.dumps({"name": t}) for t in texts]
