"""Stateful map: a per-key counter appended to each record (the SMQ of seed 003, 6.3.1).

Vectorised: per batch the records are grouped by (partition, key), numbered within their group
in merge order, and offset by the group's count so far, which the `counts` store keeps.
"""

from __future__ import annotations

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.stream import group_codes
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
        codes, groups = group_codes([partition, keys])
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        run_start = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        run_length = np.diff(np.r_[run_start, len(order)])
        position = np.arange(len(order)) - np.repeat(run_start, run_length)
        number = np.empty(len(order), np.int64)
        number[order] = position + 1
        first = order[run_start]
        base = np.zeros(groups, np.int64)
        for group, (p, key) in enumerate(
            zip(partition[first].tolist(), keys[first].tolist(), strict=True)
        ):
            stored = self.counts.records(p, key)
            base[group] = stored[0][0] if stored else 0
            stored[:] = [(base[group].item() + int(run_length[group]),)]
        counts = base[codes] + number
        return [batch.with_columns({**batch.columns, self.output: counts})]
