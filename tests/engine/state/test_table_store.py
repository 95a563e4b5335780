"""`TableStore` appends into spare capacity: the rows equal the concatenation of every append,
views handed out earlier keep showing what they showed, and arrays given to `replace` (a
restored snapshot's, a caller's) are never written to."""

from __future__ import annotations

import numpy as np
from streamshift_engine.state.stores import TableStore


def rows(first: int, count: int, partition: int) -> dict[str, np.ndarray]:
    values = np.arange(first, first + count, dtype=np.int64)
    return {"partition": np.full(count, partition, np.int32), "v": values}


def test_appends_equal_the_concatenation_and_leave_earlier_views_alone() -> None:
    store = TableStore({"v": np.int64})
    given = rows(0, 3, 0)
    store.replace(given)
    early = store.columns["v"]
    expected = [(v, 0) for v in range(3)]
    for step in range(1, 40):
        store.append(rows(100 * step, step % 5, step % 3))
        expected += [(100 * step + i, step % 3) for i in range(step % 5)]
        assert store.columns["v"].tolist() == [v for v, _ in expected]
    assert len(store) == len(expected) == store.nbytes() // 12
    assert early.tolist() == [0, 1, 2] and given["v"].tolist() == [0, 1, 2]
    snapshot = store.snapshot()
    store.append(rows(-5, 2, 1))
    assert snapshot["v"].tolist() == [v for v, _ in expected]
    store.drop([1])
    assert store.columns["v"].tolist() == [v for v, p in expected if p != 1]
    assert store.columns["partition"].tolist() == [p for _, p in expected if p != 1]
    assert store.partitions() == {0, 2}


def test_a_read_only_restored_table_is_copied_on_the_first_append() -> None:
    frozen = rows(0, 4, 2)
    for column in frozen.values():
        column.flags.writeable = False
    store = TableStore({"v": np.int64})
    store.restore(frozen)
    store.append(rows(4, 2, 2))
    assert store.columns["v"].tolist() == [0, 1, 2, 3, 4, 5]
    assert frozen["v"].tolist() == [0, 1, 2, 3]
