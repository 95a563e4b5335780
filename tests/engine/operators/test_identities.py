"""`stream.identities_at` (the records at some rows, only the columns identities read taken)
gives what `identities` of the whole batch taken at those rows gives: for windowed results,
keyed records and input places."""

from __future__ import annotations

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.stream import (
    MAX_TS,
    WINDOW_END,
    WINDOW_START,
    identities,
    identities_at,
)


def batch(windowed: bool) -> Batch:
    count = 6
    columns = {
        "k": np.arange(count) % 3,
        "name": np.array(["a", "b", "c", "d", "e", "f"], dtype=object),
        "v": np.arange(count) * 10,
        MAX_TS: np.arange(count, dtype=np.int64),
    }
    if windowed:
        columns[WINDOW_START] = np.arange(count, dtype=np.int64) * 100
        columns[WINDOW_END] = np.arange(count, dtype=np.int64) * 100 + 50
    ts = np.arange(count, dtype=np.int64)
    return Batch("node", ts, (ts % 2).astype(np.int32), ts + 7, columns)


@pytest.mark.parametrize("windowed", [True, False])
@pytest.mark.parametrize("keys", [(), ("k",), ("k", "name")])
def test_identities_at_rows_are_those_of_the_rows_taken(
    windowed: bool, keys: tuple[str, ...]
) -> None:
    rows = np.array([4, 0, 2])
    whole = batch(windowed)
    assert identities_at(whole, keys, rows) == identities(whole.take(rows), keys)
