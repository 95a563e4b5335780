"""`CounterStore` against a dict of counts: batched adds, snapshot, restore and drop."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.state.counters import CounterStore


def _adds(keys: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[tuple[int, Any], int]]]:
    """Batches of distinct (partition, key) pairs with the amount each adds."""
    pairs = st.tuples(st.integers(0, 3), keys)
    return st.lists(st.dictionaries(pairs, st.integers(1, 9), max_size=12), max_size=6)


def _column(values: list[Any]) -> Any:
    if all(type(v) is int for v in values):
        return np.array(values, np.int64)
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


@settings(max_examples=80, deadline=None)
@given(batches=_adds(st.integers(-5, 5)) | _adds(st.sampled_from(["a", "b", "é", ""])))
def test_adds_answer_the_counts_before_as_a_dict_does(
    batches: list[dict[tuple[int, Any], int]],
) -> None:
    store, reference = CounterStore(), Counter[tuple[int, Any]]()
    for adds in batches:
        pairs = list(adds)
        before = store.add(
            np.array([p for p, _ in pairs], np.int32),
            _column([k for _, k in pairs]),
            np.array(list(adds.values()), np.int64),
        )
        assert before.tolist() == [reference[pair] for pair in pairs]
        reference.update(adds)
    snapshot = store.snapshot()
    rows = zip(snapshot["partition"].tolist(), snapshot["key"].tolist(), strict=True)
    assert dict(zip(rows, snapshot["count"].tolist(), strict=True)) == dict(reference)
    kept = CounterStore()
    kept.restore(store.snapshot([0, 1]))
    store.drop([0, 1])
    assert kept.partitions() | store.partitions() == {p for p, _ in reference}
    assert not kept.partitions() & store.partitions()


def test_a_snapshot_of_integer_keys_as_objects_restores_to_numeric_keys() -> None:
    """A snapshot of the per-record store kept keys and counts as object arrays."""
    store = CounterStore()
    keys = np.empty(2, dtype=object)
    keys[:] = [7, 3]
    counts = np.empty(2, dtype=object)
    counts[:] = [2, 5]
    store.restore({"partition": np.array([1, 1], np.int32), "key": keys, "count": counts})
    before = store.add(np.array([1, 1]), np.array([3, 4], np.int64), np.array([1, 1]))
    assert before.tolist() == [5, 0]
    assert store.snapshot()["key"].dtype == np.int64
