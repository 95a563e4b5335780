"""Time-window aggregation (tumbling and sliding), vectorised over whole batches.

Each batch is reduced, with numpy, into partials per (partition, pane, group) and appended to a
`TableStore`. When the watermark reaches window ends, the panes are merged once and every window
with `end <= watermark` fires in end order: its panes are reduced per (partition, group) into
results carrying the window bounds and the min/max event times of their inputs (seed 001 (Zhu et
al., Dynamic Plan Migration) lemma 2.2). A pane is dropped after the last window containing it has
fired. Per partition, the `progress` store keeps the watermark up to which windows have fired, so
state restored on another instance fires exactly the windows not yet fired where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    WINDOW_END,
    WINDOW_START,
    max_ts,
    min_ts,
    stream,
)
from streamshift_engine.state.stores import TableStore
from streamshift_engine.windows.aggregates import (
    AggregateSpec,
    finalize,
    partial_names,
    raw_inputs,
    reduce_partials,
)
from streamshift_engine.windows.assigners import TimeWindows

NEVER = np.iinfo(np.int64).min


class TimeWindowAggregate(Operator):
    """`window_aggregate` over time windows, grouped by `group_by` (plus partition if keyed)."""

    def __init__(
        self,
        node_id: str,
        windows: TimeWindows,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        field_dtypes: Mapping[str, Any],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.windows = windows
        self.group_by = tuple(group_by)
        self.aggregates = tuple(aggregates)
        self.partials = partial_names(aggregates)
        dtypes: dict[str, Any] = {"pane": np.int64, **{g: field_dtypes[g] for g in group_by}}
        for name in self.partials:
            field = name.split(":", 1)[-1]
            dtypes[name] = np.int64 if field in ("n", "_ts") else field_dtypes[field]
        self.panes = TableStore(dtypes)
        self.progress = TableStore({"fired_until": np.int64})
        self.stores = {"panes": self.panes, "progress": self.progress}
        self.merged = True

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        partition = self.state_partition(batch)
        pane = self.windows.pane_of(batch.ts)
        keys = [batch.columns[g] for g in self.group_by]
        inputs = raw_inputs(self.partials, batch.columns, min_ts(batch), max_ts(batch))
        first, partials = reduce_partials(group([partition, pane, *keys]), inputs, self.partials)
        rows: dict[str, npt.NDArray[Any]] = {
            "partition": partition[first],
            "pane": pane[first],
            **partials,
        }
        rows.update({g: column[first] for g, column in zip(self.group_by, keys, strict=True)})
        self.panes.append(rows)
        self.merged = False
        return []

    def _merge(self) -> None:
        if self.merged or len(self.panes) == 0:
            return
        columns = self.panes.columns
        keys = [columns["partition"], columns["pane"], *(columns[g] for g in self.group_by)]
        first, partials = reduce_partials(group(keys), columns, self.partials)
        merged = {name: columns[name][first] for name in ("partition", "pane", *self.group_by)}
        self.panes.replace({**merged, **partials})
        self.merged = True

    def _fired_until(self, partition: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
        progress = self.progress.columns
        lookup = np.full(int(partition.max()) + 1, NEVER, np.int64)
        known = progress["partition"] < len(lookup)
        lookup[progress["partition"][known]] = progress["fired_until"][known]
        return lookup[partition]

    def advance(self, watermark: int) -> list[Batch]:
        if len(self.panes) == 0:
            return []
        columns = self.panes.columns
        fired_until = self._fired_until(columns["partition"])
        size, slide = self.windows.size, self.windows.slide
        after_fired = ((np.maximum(fired_until, NEVER // 2) - size) // slide + 1) * slide + size
        next_end = np.maximum(self.windows.first_end(columns["pane"]), after_fired)
        if not (next_end <= watermark).any():
            return []
        self._merge()
        columns = self.panes.columns
        fired_until = self._fired_until(columns["partition"])
        ends: set[int] = set()
        for pane in np.unique(columns["pane"]).tolist():
            ends.update(s + self.windows.size for s in self.windows.starts_of(pane))
        outputs = [
            self._fire(end, columns, fired_until)
            for end in sorted(e for e in ends if e <= watermark)
        ]
        partitions = np.unique(columns["partition"])
        self.progress.drop(partitions.tolist())
        self.progress.append(
            {"partition": partitions, "fired_until": np.full(len(partitions), watermark, np.int64)}
        )
        self.panes.keep(self.windows.last_end(columns["pane"]) > watermark)
        return [batch for batch in outputs if len(batch)]

    def _fire(
        self,
        end: int,
        columns: Mapping[str, npt.NDArray[Any]],
        fired_until: npt.NDArray[np.int64],
    ) -> Batch:
        start = end - self.windows.size
        pane = columns["pane"]
        mask = (pane >= start) & (pane < end) & (fired_until < end)
        partition = columns["partition"][mask]
        keys = [columns[g][mask] for g in self.group_by]
        first, partials = reduce_partials(
            group([partition, *keys]),
            {name: columns[name][mask] for name in self.partials},
            self.partials,
        )
        count = len(first)
        result = {g: column[first] for g, column in zip(self.group_by, keys, strict=True)}
        result.update(finalize(self.aggregates, partials))
        result[WINDOW_START] = np.full(count, start, np.int64)
        result[WINDOW_END] = np.full(count, end, np.int64)
        result[MIN_TS] = partials["min:_ts"]
        result[MAX_TS] = partials["max:_ts"]
        return stream(self.id, np.full(count, end - 1, np.int64), partition[first], result)
