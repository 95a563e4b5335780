"""Top-k per window (argmax for k = 1): the records with the largest `by` in each window and group.

Needed by Nexmark q5 (hottest auctions of each sliding window: top-1 of the bid counts, ties
kept) and q7 (highest bids of each tumbling window). The input is either windowed (results of a
window aggregate, ranked within their own windows) or raw records, which the operator assigns to
its own time windows. Vectorised: each batch is merged with the candidates kept so far and
pruned, per (partition, window, group), to the top `k` (with `ties: all`, every record equal to
the k-th value stays), so state stays small; windows fire when the watermark reaches their end.
Ties with `ties: first` go to the earlier record in merge order. A raw record's result is
identified by its input identity (`id`), a windowed one keeps its upstream keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.grouping import group, group_codes
from streamshift_engine.operators.stream import (
    MAX_TS,
    MIN_TS,
    WINDOW_END,
    WINDOW_START,
    max_ts,
    min_ts,
    payload,
    stream,
)
from streamshift_engine.state.stores import TableStore
from streamshift_engine.windows.assigners import TimeWindows

_META = (
    "window_start",
    "window_end",
    "min_ts",
    "max_ts",
    "sequence",
    "source_partition",
    "source_offset",
)


class TopK(Operator):
    """`topk` over the windows of its input, or over its own time `windows` when given."""

    def __init__(
        self,
        node_id: str,
        source: str,
        by: str,
        k: int,
        keep_ties: bool,
        group_by: Sequence[str],
        windows: TimeWindows | None,
        field_dtypes: Mapping[str, Any],
        identify: bool,
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.source = source
        self.by = by
        self.k = k
        self.keep_ties = keep_ties
        self.group_by = tuple(group_by)
        self.windows = windows
        self.fields = tuple(field_dtypes)
        self.identify = identify
        dtypes = {**dict.fromkeys(_META, np.int64), **field_dtypes}
        self.candidates = TableStore(dtypes)
        self.stores = {"candidates": self.candidates}
        self.sequence = 0

    def process(self, port: int, batch: Batch) -> list[Batch]:
        n = len(batch)
        if n == 0:
            return []
        index = np.arange(n)
        if self.windows is None:
            start = batch.columns[WINDOW_START]
        else:
            size, slide = self.windows.size, self.windows.slide
            last = batch.ts // slide
            first = -((size - 1 - batch.ts) // slide)
            count = last - first + 1
            index = np.repeat(index, count)
            step = np.arange(len(index)) - np.repeat(np.cumsum(count) - count, count)
            start = (np.repeat(first, count) + step) * slide
        ranking = {
            "partition": self.state_partition(batch)[index],
            "window_start": start,
            "sequence": self.sequence + index.astype(np.int64),
            self.by: batch.columns[self.by][index],
            **{g: batch.columns[g][index] for g in self.group_by},
        }
        self.sequence += n
        kept = self._survivors(ranking)
        index = index[kept]
        rows = {name: column[kept] for name, column in ranking.items()}
        rows["window_end"] = (
            rows["window_start"] + self.windows.size
            if self.windows is not None
            else batch.columns[WINDOW_END][index]
        )
        rows.update(
            min_ts=min_ts(batch)[index],
            max_ts=max_ts(batch)[index],
            source_partition=batch.partition[index].astype(np.int64),
            source_offset=batch.offset[index],
        )
        fields = payload(batch)
        rows.update({name: fields[name][index] for name in self.fields if name not in rows})
        self.candidates.append(rows)
        columns = self.candidates.columns
        kept = self._survivors(columns)
        if not kept.all():
            self.candidates.keep(kept)
        return []

    def _survivors(self, columns: Mapping[str, npt.NDArray[Any]]) -> npt.NDArray[np.bool_]:
        """Rows among the top `k` of their (partition, window, group), ties as configured.
        Only the partition, window start, group, `by` and sequence columns are read, so a
        batch is pruned before its other fields are copied."""
        keys = [columns["partition"], columns["window_start"], *(columns[g] for g in self.group_by)]
        if self.k == 1 and self.keep_ties:
            grouping = group(keys)
            if grouping.count == 0:
                return np.zeros(0, dtype=bool)
            best = np.maximum.reduceat(columns[self.by][grouping.order], grouping.starts)
            survivors: npt.NDArray[np.bool_] = columns[self.by] >= best[grouping.codes]
            return survivors
        codes, _ = group_codes(keys)
        order = np.lexsort((columns["sequence"], -columns[self.by], codes))
        sorted_codes = codes[order]
        boundary = np.ones(len(order), dtype=bool)
        boundary[1:] = sorted_codes[1:] != sorted_codes[:-1]
        run_start = np.flatnonzero(boundary)
        run_length = np.diff(np.append(run_start, len(order)))
        if self.keep_ties:
            kth = order[run_start + np.minimum(self.k, run_length) - 1]
            threshold = np.repeat(columns[self.by][kth], run_length)
            keep_sorted = columns[self.by][order] >= threshold
        else:
            keep_sorted = np.arange(len(order)) - np.repeat(run_start, run_length) < self.k
        keep = np.zeros(len(order), dtype=bool)
        keep[order[keep_sorted]] = True
        return keep

    def advance(self, watermark: int) -> list[Batch]:
        columns = self.candidates.columns
        due = columns["window_end"] <= watermark
        if not due.any():
            return []
        fired = {name: column[due] for name, column in columns.items()}
        self.candidates.keep(~due)
        order = np.lexsort((fired["sequence"], fired["window_end"]))
        fired = {name: column[order] for name, column in fired.items()}
        result = {name: fired[name] for name in self.fields}
        if self.identify:
            places = zip(
                fired["source_partition"].tolist(), fired["source_offset"].tolist(), strict=True
            )
            result["id"] = np.array([f"{self.source}@{p}:{o}" for p, o in places], dtype=object)
        result[WINDOW_START] = fired["window_start"]
        result[WINDOW_END] = fired["window_end"]
        result[MIN_TS] = fired["min_ts"]
        result[MAX_TS] = fired["max_ts"]
        return [stream(self.id, fired["window_end"] - 1, fired["partition"], result)]
