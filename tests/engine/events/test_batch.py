"""`Batch.take` picks the same records, in order, whether given a boolean mask, the indices it
picks or a slice, on every array of the batch; a mask of another length is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch


def batch_of(values: list[tuple[int, str]]) -> Batch:
    count = len(values)
    names = np.empty(count, dtype=object)
    names[:] = [name for _, name in values]
    return Batch(
        "S",
        np.array([number for number, _ in values], np.int64),
        np.arange(count, dtype=np.int32) % 3,
        np.arange(count, dtype=np.int64) + 100,
        {"name": names, "double": np.array([2.0 * n for n, _ in values])},
    )


def records(batch: Batch) -> list[tuple[object, ...]]:
    columns = [batch.ts, batch.partition, batch.offset, *batch.columns.values()]
    return list(zip(*(column.tolist() for column in columns), strict=True))


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.tuples(st.integers(-5, 5), st.text(max_size=3)), max_size=20),
    data=st.data(),
)
def test_a_mask_picks_what_its_indices_pick(
    values: list[tuple[int, str]], data: st.DataObject
) -> None:
    batch = batch_of(values)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))))
    picked = batch.take(mask.astype(bool))
    expected = [row for row, keep in zip(records(batch), mask.tolist(), strict=True) if keep]
    assert records(picked) == expected
    assert records(batch.take(np.flatnonzero(mask))) == expected
    assert picked.columns["name"].dtype == object and picked.ts.dtype == np.int64
    assert records(batch.take(slice(1, None))) == records(batch)[1:]


def test_a_mask_of_another_length_is_refused() -> None:
    batch = batch_of([(1, "a"), (2, "b"), (3, "c")])
    with pytest.raises(IndexError):
        batch.take(np.array([True, False]))
    with pytest.raises(IndexError):
        batch.take(np.array([True, False, True, True]))


def test_the_time_column_stays_the_ts_array_through_take_and_concat() -> None:
    """A column that is `ts` itself (as decoded) is `ts` after `take` and `concat`; a column
    that is not (here: other values) keeps its own values."""
    ts = np.array([5, 6, 7, 8], np.int64)
    shared = Batch("S", ts, np.zeros(4, np.int32), np.arange(4, dtype=np.int64), {"t": ts})
    taken = shared.take(np.array([True, False, True, True]))
    assert taken.columns["t"] is taken.ts and taken.ts.tolist() == [5, 7, 8]
    joined = Batch.concat([shared, taken])
    assert joined.columns["t"] is joined.ts and joined.ts.tolist() == [5, 6, 7, 8, 5, 7, 8]
    other = np.array([50, 60], np.int64)
    own = Batch("S", np.array([1, 2], np.int64), np.zeros(2, np.int32), np.arange(2), {"t": other})
    mixed = Batch.concat([shared, own])
    assert mixed.columns["t"].tolist() == [5, 6, 7, 8, 50, 60]
    assert mixed.ts.tolist() == [5, 6, 7, 8, 1, 2]
    assert own.take(slice(1, None)).columns["t"].tolist() == [60]
