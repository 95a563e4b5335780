"""Session-window aggregation: per group, a session closes after `gap` ms without records.

A session spans `[first ts, last ts + gap)`. It fires when the watermark reaches its end, or
earlier when the group's next record (in merge order) arrives at or after that end.

Vectorised: the `sessions` store keeps, per group with an open session, one row of running
partials `(start, last, n, min_ts, max_ts, sum:/min:/max: of the fields)`. A batch lays that row
before the group's new records (`record_windows.Layout`); a record at or after the previous
one's time plus `gap` starts a session, so sessions are runs of positions, reduced with one
`reduceat` per partial (the held row first, then the records in merge order). Every session but
a group's last is closed and emitted in the order of the records that closed them; the last is
stored back as the group's open session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    WINDOW_END,
    WINDOW_START,
    max_ts,
    min_ts,
    stream,
)
from streamshift_engine.state.stores import KeyedRecordStore
from streamshift_engine.windows.aggregates import (
    AggregateSpec,
    finalize,
    partial_names,
    raw_inputs,
)
from streamshift_engine.windows.assigners import SessionWindows
from streamshift_engine.windows.record_windows import (
    RecordWindowOperator,
    layout,
    python_column,
    run_sums,
)

_REDUCERS = {"n": np.add, "min": np.minimum, "max": np.maximum}
_STORED = {"min:_ts": "min_ts", "max:_ts": "max_ts"}


class SessionWindowAggregate(RecordWindowOperator):
    """`window_aggregate` over `session` windows."""

    def __init__(
        self,
        node_id: str,
        windows: SessionWindows,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, group_by, aggregates, keyed)
        self.gap = windows.gap
        self.partials = partial_names(aggregates)
        self.fields = ("start", "last", *(_STORED.get(p, p) for p in self.partials))
        self.sessions = KeyedRecordStore(self.fields)
        self.stores = {"sessions": self.sessions}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        grouping, places = self.groups_of(batch)
        open_rows = [self.sessions.records(p, key) for p, key in places]
        held = [rows[-1] for rows in open_rows if rows]
        lay = layout(grouping, np.array([len(rows) for rows in open_rows], np.intp))
        inputs = raw_inputs(self.partials, batch.columns, min_ts(batch), max_ts(batch))
        inputs.update(start=batch.ts, last=batch.ts)
        named = zip(self.fields, ("start", "last", *self.partials), strict=True)
        column = {
            name: lay.gather([r[i] for r in held], inputs[source])
            for i, (name, source) in enumerate(named)
        }
        previous_last = np.roll(column["last"], 1)
        begins = np.ones(len(lay), dtype=bool)
        begins[1:] = column["start"][1:] >= previous_last[1:] + self.gap
        begins[lay.starts] = True
        offsets = np.flatnonzero(begins)
        ends = np.append(offsets[1:], len(lay)) - 1
        reduced = {"start": column["start"][offsets], "last": column["last"][ends]}
        for name, partial in zip(self.fields[2:], self.partials, strict=True):
            kind, values = partial.split(":", 1)[0], column[name]
            if kind == "sum":
                reduced[name] = run_sums(values, offsets)
            else:
                reduced[name] = _REDUCERS[kind].reduceat(values, offsets)
        group_of = lay.group[offsets]
        is_last = np.append(group_of[1:] != group_of[:-1], True)
        closer = lay.source[np.append(offsets[1:], 0)]
        closed = np.flatnonzero(~is_last)
        closed = closed[np.argsort(closer[closed], kind="stable")]
        rows = closer[closed]
        keys = {g: batch.columns[g][rows] for g in self.group_by}
        partition = self.state_partition(batch)[rows]
        result = self._results({n: c[closed] for n, c in reduced.items()}, keys, partition)
        stored = list(zip(*(reduced[n][is_last].tolist() for n in self.fields), strict=True))
        for index, record in zip(group_of[is_last].tolist(), stored, strict=True):
            open_rows[index][:] = [record]
        return result

    def _results(
        self,
        sessions: Mapping[str, npt.NDArray[Any]],
        keys: Mapping[str, npt.NDArray[Any]],
        partition: npt.NDArray[Any],
    ) -> list[Batch]:
        if len(partition) == 0:
            return []
        partials = {p: sessions[_STORED.get(p, p)] for p in self.partials}
        result = dict(keys)
        result.update(finalize(self.aggregates, partials))
        result[WINDOW_START] = np.asarray(sessions["start"], np.int64)
        result[WINDOW_END] = np.asarray(sessions["last"], np.int64) + self.gap
        result[MIN_TS] = np.asarray(sessions["min_ts"], np.int64)
        result[MAX_TS] = np.asarray(sessions["max_ts"], np.int64)
        return [stream(self.id, result[WINDOW_END] - self.gap, partition, result)]

    def advance(self, watermark: int) -> list[Batch]:
        due = [
            (records[0], partition, group)
            for (partition, group), records in self.sessions.groups.items()
            if records and records[0][1] + self.gap <= watermark
        ]
        if not due:
            return []
        due.sort(key=lambda item: (item[0][0], item[1], repr(item[2])))
        for _, place, group in due:
            del self.sessions.groups[(place, group)]
        sessions = {
            name: python_column([record[i] for record, _, _ in due])
            for i, name in enumerate(self.fields)
        }
        keys = {
            g: python_column([group[i] for _, _, group in due]) for i, g in enumerate(self.group_by)
        }
        partition = np.array([p for _, p, _ in due], np.int32)
        return self._results(sessions, keys, partition)
