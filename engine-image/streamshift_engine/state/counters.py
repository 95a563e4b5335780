"""`CounterStore`: a count per (partition, key), looked up and updated a whole batch at a time.

The state of the stateful map (SMQ, seed 003 (Bartnik et al., On-the-fly Reconfiguration), 6.3.1).
Per partition the keys are held as one sorted numpy array with the counts beside it, so a batch's
groups are found with one `searchsorted` per partition and new keys are merged in with one `insert`,
instead of a Python dict lookup per group. Snapshots are the columns `partition`, `key` and `count`
(as the per-record store wrote them), in (partition, key) order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.state.stores import Columns, StateStore

_Table = tuple[npt.NDArray[Any], npt.NDArray[np.int64]]


class CounterStore(StateStore):
    """Per partition, sorted unique keys and the count of each."""

    def __init__(self) -> None:
        self.tables: dict[int, _Table] = {}

    def add(
        self,
        partition: npt.NDArray[np.integer[Any]],
        keys: npt.NDArray[Any],
        added: npt.NDArray[np.integer[Any]],
    ) -> npt.NDArray[np.int64]:
        """Add `added[i]` to the count of (`partition[i]`, `keys[i]`), pairs all distinct;
        answer each pair's count before."""
        before = np.zeros(len(keys), np.int64)
        for part in np.unique(partition).tolist():
            rows = np.flatnonzero(partition == part)
            before[rows] = self._add(int(part), keys[rows], np.asarray(added[rows], np.int64))
        return before

    def _add(
        self, partition: int, keys: npt.NDArray[Any], added: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        order = np.argsort(keys, kind="stable")
        keys, added = keys[order], added[order]
        stored, counts = self.tables.get(partition, (keys[:0], np.empty(0, np.int64)))
        if stored.dtype != keys.dtype:
            common = np.result_type(stored, keys)
            stored, keys = stored.astype(common), keys.astype(common)
        at = np.searchsorted(stored, keys)
        found = at < len(stored)
        found[found] = stored[at[found]] == keys[found]
        before = np.zeros(len(keys), np.int64)
        before[found] = counts[at[found]]
        counts = counts.copy()
        counts[at[found]] += added[found]
        new = ~found
        if new.any():
            stored = np.insert(stored, at[new], keys[new])
            counts = np.insert(counts, at[new], added[new])
        self.tables[partition] = (stored, counts)
        answer = np.empty(len(keys), np.int64)
        answer[order] = before
        return answer

    def snapshot(self, partitions: Collection[int] | None = None) -> Columns:
        chosen = sorted(p for p in self.tables if partitions is None or p in partitions)
        tables = [self.tables[p] for p in chosen]
        sizes = [len(keys) for keys, _ in tables]
        if not tables:
            empty = np.empty(0, object)
            return {"partition": np.empty(0, np.int32), "key": empty, "count": empty}
        return {
            "partition": np.repeat(np.array(chosen, np.int32), sizes),
            "key": np.concatenate([keys for keys, _ in tables]),
            "count": np.concatenate([counts for _, counts in tables]),
        }

    def restore(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        """Add the counts in `columns` to those held."""
        partition = np.asarray(columns["partition"], np.int64)
        keys = _typed(np.asarray(columns["key"]))
        if len(keys):
            self.add(partition, keys, np.asarray(columns["count"], np.int64))

    def drop(self, partitions: Collection[int]) -> None:
        for partition in partitions:
            self.tables.pop(partition, None)

    def nbytes(self) -> int:
        total = 0
        for keys, counts in self.tables.values():
            total += counts.nbytes + (keys.nbytes if keys.dtype != object else 64 * len(keys))
        return total

    def partitions(self) -> set[int]:
        return {partition for partition, (keys, _) in self.tables.items() if len(keys)}


def _typed(keys: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Keys of a snapshot as numbers when they all are integers (a per-record store, or a
    JSON round trip, gives an object array), so they compare with a batch's int64 keys."""
    if keys.dtype == object and len(keys) and all(type(k) is int for k in keys.tolist()):
        return keys.astype(np.int64)
    return keys
