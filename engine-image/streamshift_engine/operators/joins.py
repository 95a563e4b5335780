"""Symmetric window joins of two inputs, per record: purge, join, insert (seed 001, section 2).

For each arriving tuple `t` of one side (in the deterministic merge order) the join 1) purges
the other side's state, 2) joins `t` with the matching tuples left there, 3) inserts `t` into its
own side's state. Tuples carry min/max timestamps; a combined tuple's are the min and max over
both parts (seed 001, figure 3 and section 2.4).

- `RangeJoin` (`S [Range W] join T [Range W]`): two tuples join when all their timestamps lie
  within `W` ms of each other; the other side is purged by lemma 2.2 (`t_R` goes once some left
  tuple has `min_L - max_R > W`), which never removes a tuple that can still join.
- `RowsJoin` (`[Partition By key Rows n]` on both sides): each side keeps, per join key, its last
  `n` tuples; the insert step evicts the oldest.

A result's `id` names its parts: the ids of the base tuples it combines, sorted and joined by
`*`, so it is the same on every instance and under every join order of the same streams (seed
001 section 3: equivalent plans give the same result set; a 3-way join is a chain of these joins).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.stream import MAX_TS, MIN_TS, identities, max_ts, min_ts, stream
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.record_windows import python_column

Record = tuple[Any, ...]
Match = tuple[int, int, Record, Record]
"""A join result before output: partition, event time, left tuple, right tuple."""
TS, MIN, MAX, IDENTITY, VALUES = 0, 1, 2, 3, 4


class SymmetricJoin(Operator):
    """Purge-join-insert over per-(partition, key) record lists; subclasses choose the window."""

    def __init__(
        self,
        node_id: str,
        sides: Sequence[str],
        on: Sequence[tuple[str, str]],
        size: int,
        side_fields: Sequence[Sequence[str]],
        side_keys: Sequence[Sequence[str]],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.sides = tuple(sides)
        self.on = [[pair[0] for pair in on], [pair[1] for pair in on]]
        self.size = size
        self.side_fields = [tuple(fields) for fields in side_fields]
        self.side_keys = [tuple(keys) for keys in side_keys]
        self.state = [
            KeyedRecordStore(("ts", "min_ts", "max_ts", "identity", *fields))
            for fields in self.side_fields
        ]
        self.stores = {"left": self.state[0], "right": self.state[1]}
        self.latest_min = [np.iinfo(np.int64).min, np.iinfo(np.int64).min]

    def purge(self, own: list[Record], other: list[Record], arriving: Record) -> None:
        """Step 1: drop tuples of `other` that can no longer join."""

    def joinable(self, left: Record, right: Record) -> bool:
        return True

    def insert(self, own: list[Record], arriving: Record) -> None:
        own.append(arriving)

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        partitions = self.state_partition(batch).tolist()
        keys = list(zip(*(batch.columns[f].tolist() for f in self.on[port]), strict=True))
        records = zip(
            batch.ts.tolist(),
            min_ts(batch).tolist(),
            max_ts(batch).tolist(),
            identities(batch, self.side_keys[port]),
            *(batch.columns[f].tolist() for f in self.side_fields[port]),
            strict=True,
        )
        matches: list[Match] = []
        for partition, key, record in zip(partitions, keys, records, strict=True):
            own = self.state[port].records(partition, key)
            other = self.state[1 - port].records(partition, key)
            self.purge(own, other, record)
            for stored in other:
                pair = (record, stored) if port == 0 else (stored, record)
                if self.joinable(*pair):
                    matches.append((partition, record[TS], *pair))
            self.insert(own, record)
            self.latest_min[port] = max(self.latest_min[port], record[MIN])
        return [self._results(matches)] if matches else []

    def _results(self, matches: list[Match]) -> Batch:
        columns: dict[str, Any] = {}
        lefts = [m[2] for m in matches]
        rights = [m[3] for m in matches]
        for name, fields, records in zip(
            self.sides, self.side_fields, (lefts, rights), strict=True
        ):
            for index, field in enumerate(fields):
                columns[f"{name}.{field}"] = python_column([r[VALUES + index] for r in records])
        columns["id"] = python_column([combined_identity(m[2], m[3]) for m in matches])
        columns[MIN_TS] = np.array([min(m[2][MIN], m[3][MIN]) for m in matches], np.int64)
        columns[MAX_TS] = np.array([max(m[2][MAX], m[3][MAX]) for m in matches], np.int64)
        ts = np.array([m[1] for m in matches], np.int64)
        return stream(self.id, ts, np.array([m[0] for m in matches], np.int32), columns)


def combined_identity(left: Record, right: Record) -> str:
    """The id of a combined tuple: its base tuples' ids in sorted order (join-order free)."""
    parts = f"{left[IDENTITY]}*{right[IDENTITY]}".split("*")
    return "*".join(sorted(parts))


class RangeJoin(SymmetricJoin):
    """Time-range symmetric join with lemma 2.2 purging."""

    def purge(self, own: list[Record], other: list[Record], arriving: Record) -> None:
        bound = arriving[MIN] - self.size
        if any(stored[MAX] < bound for stored in other):
            other[:] = [stored for stored in other if stored[MAX] >= bound]

    def joinable(self, left: Record, right: Record) -> bool:
        span: int = max(left[MAX], right[MAX]) - min(left[MIN], right[MIN])
        return span <= self.size

    def advance(self, watermark: int) -> list[Batch]:
        """Purge every key's state by lemma 2.2, using the largest `min_ts` seen on the other
        side, and forget empty keys (memory only: `joinable` decides what joins)."""
        for side in (0, 1):
            bound = min(self.latest_min[1 - side], watermark) - self.size
            groups = self.state[side].groups
            for group_key, records in list(groups.items()):
                kept = [stored for stored in records if stored[MAX] >= bound]
                if kept:
                    records[:] = kept
                else:
                    del groups[group_key]
        return []


class RowsJoin(SymmetricJoin):
    """Tuple-based symmetric join: the last `size` tuples per side and join key."""

    def insert(self, own: list[Record], arriving: Record) -> None:
        own.append(arriving)
        if len(own) > self.size:
            del own[0]
