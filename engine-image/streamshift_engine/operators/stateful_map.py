"""Stateful map: a per-key counter appended to each record (the SMQ of seed 003 (Bartnik et al.,
On-the-fly Reconfiguration), 6.3.1).

Vectorised: per batch the records are grouped by (partition, key), numbered within their group
in merge order, and offset by the group's count so far, which the `counts` store (a
`CounterStore`) looks up and updates for all groups at once.
"""

from __future__ import annotations

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group
from streamshift_engine.state.counters import CounterStore


class StatefulMap(Operator):
    """Appends `output`: how many records of the same `key` this operator has seen, this one
    included."""

    def __init__(self, node_id: str, key: str, output: str, keyed: bool) -> None:
        super().__init__(node_id, keyed)
        self.key = key
        self.output = output
        self.counts = CounterStore()
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
        bases = self.counts.add(partition[first], keys[first], run_length)
        counts = bases[grouping.codes] + number
        return [batch.with_columns({**batch.columns, self.output: counts})]
