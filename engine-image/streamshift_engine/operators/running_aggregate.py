"""Running aggregate: an unwindowed GROUP BY that emits each group's aggregate as it changes.

The reference form of Nexmark q4's outer `GROUP BY category` (Flink SQL's updating aggregate):
for every group and every event time at which records of the group arrive, one record with the
aggregate over all of the group's records up to and including that time, and an `at` field with
that time (so `(group, at)` identifies the update). Records of a batch are taken in `(ts,
partition, offset)` order, whatever order the partitions arrive in; per group the partials
(`windows.aggregates`) are accumulated over that order, starting from the totals kept so far,
and the last row of each `(group, ts)` run is emitted. `_min_ts` and `_max_ts` are the bounds
over every record the group has combined. The totals never expire: the state holds one row per
group ever seen (as SMQ's counters, it grows with the keys, not with the input).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group
from streamshift_engine.operators.stream import MAX_TS, MIN_TS, max_ts, min_ts, stream
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import (
    AggregateSpec,
    finalize,
    partial_names,
    raw_inputs,
)

AT = "at"
_ACCUMULATE = {"n": np.add, "sum": np.add, "min": np.minimum, "max": np.maximum}


class RunningAggregate(Operator):
    """Per `group_by` key, the aggregates over all records so far, emitted on each change."""

    def __init__(
        self,
        node_id: str,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.group_by = tuple(group_by)
        self.aggregates = tuple(aggregates)
        self.partials = partial_names(self.aggregates)
        self.totals = KeyedRecordStore(self.partials)
        self.stores = {"totals": self.totals}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        order = np.lexsort((batch.offset, batch.partition, batch.ts))
        batch = batch.take(order)
        partition = self.state_partition(batch)
        keys = [batch.columns[name] for name in self.group_by]
        grouping = group([partition, *keys])
        inputs = raw_inputs(self.partials, batch.columns, min_ts(batch), max_ts(batch))
        running = {name: np.empty(len(batch), inputs[name].dtype) for name in self.partials}
        ends = np.append(grouping.starts[1:], len(batch))
        for start, end in zip(grouping.starts.tolist(), ends.tolist(), strict=True):
            rows = grouping.order[start:end]
            first = int(rows[0])
            key = tuple(column[first].item() for column in keys)
            stored = self.totals.records(int(partition[first]), key)
            for index, name in enumerate(self.partials):
                ufunc = _ACCUMULATE[name.split(":", 1)[0]]
                values = ufunc.accumulate(inputs[name][rows])
                running[name][rows] = ufunc(values, stored[0][index]) if stored else values
            stored[:] = [tuple(running[name][rows[-1]].item() for name in self.partials)]
        codes, ts = grouping.codes[grouping.order], batch.ts[grouping.order]
        run_end = np.ones(len(batch), dtype=bool)
        run_end[:-1] = (codes[1:] != codes[:-1]) | (ts[1:] != ts[:-1])
        last = np.zeros(len(batch), dtype=bool)
        last[grouping.order[run_end]] = True
        emitted = {name: column[last] for name, column in running.items()}
        columns = {name: column[last] for name, column in zip(self.group_by, keys, strict=True)}
        columns[AT] = batch.ts[last]
        columns.update(finalize(self.aggregates, emitted))
        columns[MIN_TS] = emitted["min:_ts"]
        columns[MAX_TS] = emitted["max:_ts"]
        return [stream(self.id, batch.ts[last], batch.partition[last], columns)]
