"""Time-window equi-join of two inputs, tumbling (Nexmark q8's join) or sliding, vectorised.

Flink's window join semantics: windows `[k*slide, k*slide + size)` (tumbling when `slide ==
size`); per window, every pair of a left and a right record of that window with equal keys. A
pair whose records share several sliding windows joins once in each, as a result of each window
(its id carries the window bounds). Both sides' records are kept, per partition, in columnar
`TableStore`s, one row per (record, window it lies in).
When the watermark reaches a window's end the window's records of both sides are joined with one
sort and `searchsorted` over the join keys (no per-record Python), the results carry the window
bounds, both parts' identities (the base tuples' ids, sorted and joined by `*`: the same under
any join order, as `operators.joins` names them) and the min/max of their timestamps (seed 001 (Zhu
et al., Dynamic Plan Migration) lemma 2.2), and the window's rows are dropped. A row lives in
exactly one window and leaves with it, so restored state never fires a window twice. Records
straight from an input keep their identity unformatted (partition, offset, window bounds, key
fields); it is formatted only for the records that join. A record leaves each of its windows as that
window fires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group_codes
from streamshift_engine.operators.joins import combined
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    WINDOW_END,
    WINDOW_START,
    identities,
    max_ts,
    min_ts,
    stream,
)
from streamshift_engine.state.stores import TableStore

Columns = dict[str, npt.NDArray[Any]]


class TumblingWindowJoin(Operator):
    """`window_join` with `{kind: time, size, slide}` windows (tumbling unless `slide` is given
    and smaller than `size`)."""

    def __init__(
        self,
        node_id: str,
        sides: Sequence[str],
        on: Sequence[tuple[str, str]],
        size: int,
        side_dtypes: Sequence[Mapping[str, Any]],
        side_keys: Sequence[Sequence[str]],
        side_sources: Sequence[str],
        side_windowed: Sequence[bool],
        keyed: bool,
        slide: int | None = None,
    ) -> None:
        super().__init__(node_id, keyed)
        self.sides = tuple(sides)
        self.on = [[pair[0] for pair in on], [pair[1] for pair in on]]
        self.size = size
        self.slide = size if slide is None else slide
        self.side_fields = [tuple(dtypes) for dtypes in side_dtypes]
        self.side_keys = [tuple(keys) for keys in side_keys]
        self.side_sources = tuple(side_sources)
        meta = {"window_start": np.int64, "min_ts": np.int64, "max_ts": np.int64}
        self.state = [
            TableStore({**meta, **_identity_columns(windowed), **dtypes})
            for windowed, dtypes in zip(side_windowed, side_dtypes, strict=True)
        ]
        self.stores = {"left": self.state[0], "right": self.state[1]}

    def process(self, port: int, batch: Batch) -> list[Batch]:
        if len(batch) == 0:
            return []
        record, window_start = self._windows(batch.ts)
        batch = batch.take(record)
        rows: Columns = {
            "partition": self.state_partition(batch),
            "window_start": window_start,
            "min_ts": min_ts(batch),
            "max_ts": max_ts(batch),
        }
        rows["source_partition"] = batch.partition
        rows["source_offset"] = batch.offset
        if "source_window_start" in self.state[port].dtypes:
            rows["source_window_start"] = batch.columns[WINDOW_START]
            rows["source_window_end"] = batch.columns[WINDOW_END]
        rows.update({name: batch.columns[name] for name in self.side_fields[port]})
        self.state[port].append(rows)
        return []

    def _windows(
        self, ts: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per (record, window it lies in): the record's index and the window's start, records
        in order and each record's windows ascending."""
        last = (ts // self.slide) * self.slide
        if self.slide == self.size:
            return np.arange(len(ts), dtype=np.int64), last
        back = -(-self.size // self.slide)  # how many window starts one record can reach back
        starts = last[:, None] - self.slide * np.arange(back - 1, -1, -1, dtype=np.int64)
        inside = starts > ts[:, None] - self.size
        record = np.repeat(np.arange(len(ts), dtype=np.int64), inside.sum(axis=1))
        return record, starts[inside]

    def advance(self, watermark: int) -> list[Batch]:
        due = [store.columns["window_start"] + self.size <= watermark for store in self.state]
        if not (due[0].any() or due[1].any()):
            return []
        left = {name: column[due[0]] for name, column in self.state[0].columns.items()}
        right = {name: column[due[1]] for name, column in self.state[1].columns.items()}
        for store, fired in zip(self.state, due, strict=True):
            store.keep(~fired)
        left_index, right_index = _match(
            [left["partition"], left["window_start"], *(left[f] for f in self.on[0])],
            [right["partition"], right["window_start"], *(right[f] for f in self.on[1])],
        )
        if len(left_index) == 0:
            return []
        order = np.lexsort((right_index, left_index, left["window_start"][left_index]))
        left_index, right_index = left_index[order], right_index[order]
        columns: Columns = {}
        for side, rows, index in ((0, left, left_index), (1, right, right_index)):
            for name in self.side_fields[side]:
                columns[f"{self.sides[side]}.{name}"] = rows[name][index]
        pairs = zip(
            self._identities(0, left, left_index),
            self._identities(1, right, right_index),
            strict=True,
        )
        columns["id"] = np.array([combined(a, b) for a, b in pairs], dtype=object)
        start = left["window_start"][left_index]
        columns[WINDOW_START] = start
        columns[WINDOW_END] = start + self.size
        columns[MIN_TS] = np.minimum(left["min_ts"][left_index], right["min_ts"][right_index])
        columns[MAX_TS] = np.maximum(left["max_ts"][left_index], right["max_ts"][right_index])
        return [stream(self.id, start + self.size - 1, left["partition"][left_index], columns)]

    def _identities(self, side: int, rows: Columns, index: npt.NDArray[np.int64]) -> list[str]:
        """Identities of the matched records, formatted from their stored parts."""
        columns = {key: rows[key][index] for key in self.side_keys[side]}
        if "source_window_start" in rows:
            columns[WINDOW_START] = rows["source_window_start"][index]
            columns[WINDOW_END] = rows["source_window_end"][index]
        partition = rows["source_partition"][index]
        origin = Batch(
            self.side_sources[side],
            partition.astype(np.int64),
            partition,
            rows["source_offset"][index],
            columns,
        )
        return identities(origin, self.side_keys[side])


def _identity_columns(windowed: bool) -> dict[str, Any]:
    """Where a record's identity comes from: its input place, and its window if it has one."""
    columns: dict[str, Any] = {"source_partition": np.int32, "source_offset": np.int64}
    if windowed:
        columns.update(source_window_start=np.int64, source_window_end=np.int64)
    return columns


def _match(
    left_keys: Sequence[npt.NDArray[Any]], right_keys: Sequence[npt.NDArray[Any]]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """All (left row, right row) pairs with equal keys: a sort-merge join over group codes."""
    n_left = len(left_keys[0])
    if n_left == 0 or len(right_keys[0]) == 0:
        empty = np.empty(0, np.int64)
        return empty, empty
    codes, _ = group_codes(
        [np.concatenate([a, b]) for a, b in zip(left_keys, right_keys, strict=True)]
    )
    left_codes, right_codes = codes[:n_left], codes[n_left:]
    right_order = np.argsort(right_codes, kind="stable")
    sorted_right = right_codes[right_order]
    low = np.searchsorted(sorted_right, left_codes, "left")
    counts = np.searchsorted(sorted_right, left_codes, "right") - low
    left_index = np.repeat(np.arange(n_left, dtype=np.int64), counts)
    step = np.arange(len(left_index)) - np.repeat(np.cumsum(counts) - counts, counts)
    right_index = right_order[np.repeat(low, counts) + step].astype(np.int64)
    return left_index, right_index
