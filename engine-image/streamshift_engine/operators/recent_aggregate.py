"""Recent aggregate: a running aggregate over each group's last `rows` records (Nexmark q6).

`running_aggregate` with `last: {rows: n, by: [fields]}`: per group, the aggregates over the `n`
latest records the group has had so far, latest meaning largest in the order `(_max_ts, *by,
ts, partition, offset)`, emitted, as `running_aggregate` does, once per group and event time at
which records of the group arrive (with `at`, after all of them). For Nexmark q6 the records are
winning bids at their auction's close and `_max_ts` is the bid's time, so the order is Beam's
`ASCENDING_TIME_THEN_PRICE` over the winning bids, not the order of the closes: a bid older than
the group's `n` kept ones drops out at once, as in Beam's `MovingMeanSellingPrice`.

The state is per group the kept records (their order key and the aggregates' inputs), at most
`n`; it grows with the groups, not with the input. Records are taken one by one (a group's kept
list is short and sorted), in `(ts, partition, offset)` order.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.running_aggregate import AT
from streamshift_engine.operators.stream import MAX_TS, MIN_TS, max_ts, min_ts, stream
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import (
    AggregateSpec,
    finalize,
    partial_names,
    raw_inputs,
)
from streamshift_engine.windows.record_windows import python_column

_REDUCE: dict[str, Callable[[Iterable[Any]], Any]] = {"n": sum, "sum": sum, "min": min, "max": max}


class RecentAggregate(Operator):
    """Per `group_by` key, the aggregates over its last `rows` records, emitted on each change."""

    def __init__(
        self,
        node_id: str,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        keyed: bool,
        rows: int,
        by: Sequence[str],
    ) -> None:
        super().__init__(node_id, keyed)
        self.group_by = tuple(group_by)
        self.aggregates = tuple(aggregates)
        self.partials = partial_names(self.aggregates)
        self.reducers = [_REDUCE[name.split(":", 1)[0]] for name in self.partials]
        self.rows = rows
        self.by = tuple(by)
        self.kept = KeyedRecordStore(("order", "inputs"))
        self.stores = {"kept": self.kept}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        batch = batch.take(np.lexsort((batch.offset, batch.partition, batch.ts)))
        partitions = self.state_partition(batch).tolist()
        keys = list(zip(*(batch.columns[name].tolist() for name in self.group_by), strict=True))
        inputs = raw_inputs(self.partials, batch.columns, min_ts(batch), max_ts(batch))
        values = list(zip(*(inputs[name].tolist() for name in self.partials), strict=True))
        orders = zip(
            max_ts(batch).tolist(),
            *(batch.columns[name].tolist() for name in self.by),
            batch.ts.tolist(),
            batch.partition.tolist(),
            batch.offset.tolist(),
            strict=True,
        )
        times = batch.ts.tolist()
        emitted: dict[tuple[int, Any, int], tuple[int, tuple[Any, ...]]] = {}
        for index, (partition, key, order, value) in enumerate(
            zip(partitions, keys, orders, values, strict=True)
        ):
            kept = self.kept.records(partition, key)
            bisect.insort(kept, (order, value))
            if len(kept) > self.rows:
                del kept[0]
            emitted[(partition, key, times[index])] = (index, self._totals(kept))
        return [self._output(batch, emitted)]

    def _totals(self, kept: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        columns = zip(*[value for _, value in kept], strict=True)
        return tuple(
            [reduce(column) for reduce, column in zip(self.reducers, columns, strict=True)]
        )

    def _output(
        self, batch: Batch, emitted: dict[tuple[int, Any, int], tuple[int, tuple[Any, ...]]]
    ) -> Batch:
        """One record per (group, ts), at the last record of the run, in batch order."""
        last = sorted(emitted.values())
        rows = np.array([index for index, _ in last], np.int64)
        totals = list(zip(*(total for _, total in last), strict=True))
        partials = {
            name: python_column(list(column))
            for name, column in zip(self.partials, totals, strict=True)
        }
        columns = {name: batch.columns[name][rows] for name in self.group_by}
        columns[AT] = batch.ts[rows]
        columns.update(finalize(self.aggregates, partials))
        columns[MIN_TS] = np.asarray(partials["min:_ts"], np.int64)
        columns[MAX_TS] = np.asarray(partials["max:_ts"], np.int64)
        return stream(self.id, batch.ts[rows], batch.partition[rows], columns)
