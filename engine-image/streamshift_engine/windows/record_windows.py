"""Shared machinery of the per-record window operators (tuple-based and session windows).

Both keep, per (partition, group), the records of the open window as tuples
`(ts, min_ts, max_ts, identity, *aggregated field values)` in a `KeyedRecordStore`, and emit one
result per closed window with Python-level aggregation over those records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.operators.base import Operator
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
from streamshift_engine.windows.aggregates import AggregateSpec

Record = tuple[Any, ...]
FIRST_VALUE = 4


class RecordWindowOperator(Operator):
    """Base of per-record windows: record layout, aggregation and result building."""

    def __init__(
        self,
        node_id: str,
        group_by: Sequence[str],
        aggregates: Sequence[AggregateSpec],
        upstream_keys: Sequence[str],
        keyed: bool,
    ) -> None:
        super().__init__(node_id, keyed)
        self.group_by = tuple(group_by)
        self.aggregates = tuple(aggregates)
        self.value_fields = tuple(dict.fromkeys(a.field for a in aggregates if a.field))
        self.upstream_keys = tuple(upstream_keys)
        self.record_fields = ("ts", "min_ts", "max_ts", "identity", *self.value_fields)
        self.pending: list[tuple[int, tuple[Any, ...], list[Record], int, int]] = []

    def records_of(self, batch: Batch) -> list[tuple[int, tuple[Any, ...], Record]]:
        """Per record: its state partition, its group key and its stored form."""
        partitions = self.state_partition(batch).tolist()
        groups = list(zip(*(batch.columns[g].tolist() for g in self.group_by), strict=True))
        if not self.group_by:
            groups = [()] * len(batch)
        values = [batch.columns[f].tolist() for f in self.value_fields]
        records = zip(
            batch.ts.tolist(),
            min_ts(batch).tolist(),
            max_ts(batch).tolist(),
            identities(batch, self.upstream_keys),
            *values,
            strict=True,
        )
        return list(zip(partitions, groups, records, strict=True))

    def emit(
        self, partition: int, group: tuple[Any, ...], records: list[Record], start: int, end: int
    ) -> None:
        """Queue one window result over `records` with bounds `[start, end)`."""
        self.pending.append((partition, group, list(records), start, end))

    def aggregate(self, records: Sequence[Record]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for aggregate in self.aggregates:
            if aggregate.function == "count":
                values[aggregate.name] = len(records)
                continue
            column = [
                r[FIRST_VALUE + self.value_fields.index(aggregate.field or "")] for r in records
            ]
            if aggregate.function == "sum":
                values[aggregate.name] = sum(column)
            elif aggregate.function == "avg":
                values[aggregate.name] = sum(column) / len(column)
            else:
                values[aggregate.name] = min(column) if aggregate.function == "min" else max(column)
        return values

    def take_results(self, extra_key: str | None) -> list[Batch]:
        """Build one batch of the queued results (in emission order) and clear the queue."""
        if not self.pending:
            return []
        rows = [self.aggregate(records) for _, _, records, _, _ in self.pending]
        columns: dict[str, Any] = {}
        for index, name in enumerate(self.group_by):
            columns[name] = python_column([group[index] for _, group, _, _, _ in self.pending])
        for aggregate in self.aggregates:
            columns[aggregate.name] = python_column([row[aggregate.name] for row in rows])
        if extra_key is not None:
            columns[extra_key] = python_column(
                [records[-1][3] for _, _, records, _, _ in self.pending]
            )
        columns[WINDOW_START] = np.array([p[3] for p in self.pending], np.int64)
        columns[WINDOW_END] = np.array([p[4] for p in self.pending], np.int64)
        columns[MIN_TS] = np.array([min(r[1] for r in p[2]) for p in self.pending], np.int64)
        columns[MAX_TS] = np.array([max(r[2] for r in p[2]) for p in self.pending], np.int64)
        ts = np.array([p[2][-1][0] for p in self.pending], np.int64)
        partitions = np.array([p[0] for p in self.pending], np.int32)
        self.pending = []
        return [stream(self.id, ts, partitions, columns)]


def python_column(values: list[Any]) -> Any:
    """A numpy column of Python values: native dtype for numbers, object for the rest."""
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return array
    result = np.empty(len(values), dtype=object)
    result[:] = values
    return result
