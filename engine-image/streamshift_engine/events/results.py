"""Columnar query results with deterministic ids.

Every result carries the key group (`partition`) that produced it, its window bounds (`-1` when
it has none) and the smallest and largest event time of the input tuples it combines (`min_ts`,
`max_ts`: the combined-tuple timestamps of seed 001 (Zhu et al., Dynamic Plan Migration), lemma
2.2). The protocols filter results on these fields alone. `ids()` is
`query|window_start|window_end|key`, so two result sets can be compared for missing and duplicate
results by set difference.

Results that are input records passed through (no result keys, no window) are identified by
their place in the input, `source@partition:offset`: such a batch holds `places` (the source and
the offsets) instead of an `id` key column of strings, which `key_columns()` builds when asked
for, so encoders can write the ids from the integers without a Python string per result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Selector


@dataclass(frozen=True, slots=True)
class Places:
    """The input records that pass-through results are: their source and offsets (the
    partitions are the results' `partition`)."""

    source: str
    offset: npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ResultBatch:
    """Results of one query as columns: metadata arrays plus key and value columns."""

    query: str
    partition: npt.NDArray[np.int32]
    window_start: npt.NDArray[np.int64]
    window_end: npt.NDArray[np.int64]
    min_ts: npt.NDArray[np.int64]
    max_ts: npt.NDArray[np.int64]
    keys: Mapping[str, npt.NDArray[Any]]
    values: Mapping[str, npt.NDArray[Any]]
    places: Places | None = None
    """When set, the results' key is their input place (`id`, see the module docstring)."""

    def __post_init__(self) -> None:
        n = len(self.partition)
        arrays = [self.window_start, self.window_end, self.min_ts, self.max_ts]
        arrays += [*self.keys.values(), *self.values.values()]
        if self.places is not None:
            arrays.append(self.places.offset)
            if self.keys:
                raise ValueError(f"results of {self.query!r}: places and key columns both set")
        if any(len(a) != n for a in arrays):
            raise ValueError(f"results of {self.query!r}: columns differ in length")

    def __len__(self) -> int:
        return len(self.partition)

    def take(self, selector: Selector) -> ResultBatch:
        return ResultBatch(
            query=self.query,
            partition=self.partition[selector],
            window_start=self.window_start[selector],
            window_end=self.window_end[selector],
            min_ts=self.min_ts[selector],
            max_ts=self.max_ts[selector],
            keys={k: v[selector] for k, v in self.keys.items()},
            values={k: v[selector] for k, v in self.values.items()},
            places=None
            if self.places is None
            else Places(self.places.source, self.places.offset[selector]),
        )

    @classmethod
    def concat(cls, batches: Sequence[ResultBatch]) -> ResultBatch:
        if not batches:
            raise ValueError("concat needs at least one result batch")
        if len(batches) == 1:
            return batches[0]
        first = batches[0]

        def cat(get: Any) -> Any:
            return np.concatenate([get(b) for b in batches])

        sources = {b.places.source if b.places is not None else None for b in batches}
        places = None
        if len(sources) == 1 and first.places is not None:
            places = Places(first.places.source, cat(lambda b: b.places.offset))
        elif any(b.places is not None for b in batches):
            batches = [b.with_key_columns() for b in batches]
            first = batches[0]
        return cls(
            query=first.query,
            partition=cat(lambda b: b.partition),
            window_start=cat(lambda b: b.window_start),
            window_end=cat(lambda b: b.window_end),
            min_ts=cat(lambda b: b.min_ts),
            max_ts=cat(lambda b: b.max_ts),
            keys={k: cat(lambda b, k=k: b.keys[k]) for k in first.keys},
            values={k: cat(lambda b, k=k: b.values[k]) for k in first.values},
            places=places,
        )

    def key_columns(self) -> Mapping[str, npt.NDArray[Any]]:
        """The key columns, with the `id` of `places` as strings when the batch has them."""
        if self.places is None:
            return self.keys
        places = zip(self.partition.tolist(), self.places.offset.tolist(), strict=True)
        column = np.empty(len(self), dtype=object)
        column[:] = [f"{self.places.source}@{p}:{o}" for p, o in places]
        return {"id": column}

    def with_key_columns(self) -> ResultBatch:
        """The same results with `places`, if any, turned into an `id` key column."""
        if self.places is None:
            return self
        return replace(self, keys=self.key_columns(), places=None)

    def ids(self) -> list[str]:
        """Deterministic ids `query|window_start|window_end|key` (key parts joined by `:`)."""
        key_lists = [column.tolist() for column in self.key_columns().values()]
        starts = self.window_start.tolist()
        ends = self.window_end.tolist()
        keys = (":".join(map(str, parts)) for parts in zip(*key_lists, strict=True))
        if not key_lists:
            keys = ("" for _ in starts)
        return [f"{self.query}|{s}|{e}|{k}" for s, e, k in zip(starts, ends, keys, strict=True)]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Each result as a dict of its key and value columns."""
        keys = self.key_columns()
        names = [*keys, *self.values]
        columns = [*keys.values(), *self.values.values()]
        lists = [c.tolist() for c in columns]
        for values in zip(*lists, strict=True):
            yield dict(zip(names, values, strict=True))

    def to_records(self) -> list[dict[str, Any]]:
        """Results as output records: the result id, window bounds, key and value fields.

        `id` is always the deterministic result id. A key column that is itself called `id` (a
        join's identity) is left out: its value is the key part of the result id.
        """
        records = []
        for rid, start, end, row in zip(
            self.ids(),
            self.window_start.tolist(),
            self.window_end.tolist(),
            self.rows(),
            strict=True,
        ):
            row.pop("id", None)
            records.append({"id": rid, "window_start": start, "window_end": end, **row})
        return records


def empty_results(query: str, key_names: Sequence[str], value_names: Sequence[str]) -> ResultBatch:
    """A result batch with no rows and the given columns."""
    i64 = np.empty(0, np.int64)
    return ResultBatch(
        query=query,
        partition=np.empty(0, np.int32),
        window_start=i64,
        window_end=i64,
        min_ts=i64,
        max_ts=i64,
        keys={k: np.empty(0, object) for k in key_names},
        values={v: np.empty(0, object) for v in value_names},
    )


def results_from_mapping(query: str, columns: Mapping[str, Any]) -> ResultBatch:
    """Build results from plain sequences (tests and per-record operators)."""
    return ResultBatch(
        query=query,
        partition=np.asarray(columns["partition"], np.int32),
        window_start=np.asarray(columns["window_start"], np.int64),
        window_end=np.asarray(columns["window_end"], np.int64),
        min_ts=np.asarray(columns["min_ts"], np.int64),
        max_ts=np.asarray(columns["max_ts"], np.int64),
        keys={k: np.asarray(v) for k, v in columns["keys"].items()},
        values={k: np.asarray(v) for k, v in columns["values"].items()},
    )
