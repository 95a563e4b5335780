"""Stateful map: a per-key counter appended to each record (the SMQ of seed 003, 6.3.1).

Vectorised: per batch the records are grouped by (partition, key), numbered within their group
in merge order, and offset by the group's count so far, which the `counts` store keeps.
"""

from __future__ import annotations

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group
from streamshift_engine.state.stores import KeyedRecordStore


class StatefulMap(Operator):
    """Appends `output`: how many records of the same `key` this operator has seen, this one
    included."""

    def __init__(self, node_id: str, key: str, output: str, keyed: bool) -> None:
        super().__init__(node_id, keyed)
        self.key = key
        self.output = output
        self.counts = KeyedRecordStore(("count",))
        self.stores = {"counts": self.counts}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        partition = self.state_partition(batch)
        keys = batch.columns[self.key]
        grouping = group([partition, keys])
        run_length = grouping.sizes
        position = np.arange(len(keys)) - np.repeat(grouping.starts, run_length)
        number = np.empty(len(keys), np.int64)
        number[grouping.order] = position + 1
        first = grouping.first
        places = zip(partition[first].tolist(), keys[first].tolist(), strict=True)
        stores = [self.counts.records(p, key) for p, key in places]
        bases = [stored[0][0] if stored else 0 for stored in stores]
        for stored, seen, added in zip(stores, bases, run_length.tolist(), strict=True):
            stored[:] = [(seen + added,)]
        counts = np.array(bases, np.int64)[grouping.codes] + number
        return [batch.with_columns({**batch.columns, self.output: counts})]
