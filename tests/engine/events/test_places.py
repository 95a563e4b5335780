"""Results identified by their input places (`ResultBatch.places`) behave as the same results
with an `id` key column of `source@partition:offset` strings: ids, records, encodings, take and
concat. The encodings take the column-wise path for every size (`result_json.SMALL` is 0
here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events import result_json
from streamshift_engine.events.results import Places, ResultBatch
from streamshift_engine.events.wire import (
    encode_results_columnar,
    encode_results_json,
    encode_results_records,
    result_ids,
)


@pytest.fixture(autouse=True)
def column_wise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result_json, "SMALL", 0)


ROWS = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2**40)), min_size=1, max_size=12)


def _pair(rows: list[tuple[int, int]], source: str = "bid") -> tuple[ResultBatch, ResultBatch]:
    """The same results with `places` and with an `id` key column."""
    partition = np.array([p for p, _ in rows], np.int32)
    offset = np.array([o for _, o in rows], np.int64)
    bounds = np.full(len(rows), -1, np.int64)
    values = {"price": offset * 3, "note": np.array([f"n{o}" for o in offset.tolist()], object)}
    identities = np.array([f"{source}@{p}:{o}" for p, o in rows], object)
    common: dict[str, Any] = {
        "query": 'nexmark-q0"',
        "partition": partition,
        "window_start": bounds,
        "window_end": bounds,
        "min_ts": offset,
        "max_ts": offset,
        "values": values,
    }
    placed = ResultBatch(**common, keys={}, places=Places(source, offset))
    return placed, ResultBatch(**common, keys={"id": identities})


@settings(max_examples=50, deadline=None)
@given(rows=ROWS, picks=st.lists(st.booleans(), min_size=12, max_size=12))
def test_placed_results_equal_those_with_an_id_column(
    rows: list[tuple[int, int]], picks: list[bool]
) -> None:
    placed, keyed = _pair(rows)
    assert placed.ids() == keyed.ids()
    assert result_ids(placed).to_pylist() == keyed.ids()
    assert placed.to_records() == keyed.to_records()
    assert encode_results_json(placed) == list(map(orjson.dumps, keyed.to_records()))
    assert encode_results_records(placed).to_pylist() == encode_results_json(keyed)
    assert encode_results_columnar(placed) == encode_results_columnar(keyed)
    mask = np.array(picks[: len(rows)])
    assert placed.take(mask).ids() == keyed.take(mask).ids()
    both = ResultBatch.concat([placed, placed.take(mask)])
    assert both.places is not None
    assert both.ids() == ResultBatch.concat([keyed, keyed.take(mask)]).ids()


def test_concat_of_places_of_two_sources_builds_the_id_column() -> None:
    bids, _ = _pair([(1, 5)], "bid")
    people, _ = _pair([(2, 9)], "person")
    both = ResultBatch.concat([bids, people])
    assert both.places is None
    assert both.keys["id"].tolist() == ["bid@1:5", "person@2:9"]
    assert both.ids() == ['nexmark-q0"|-1|-1|bid@1:5', 'nexmark-q0"|-1|-1|person@2:9']
