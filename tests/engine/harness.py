"""Shared test harness: random partitioned inputs, runs with snapshot/restore, and the result
form the brute-force references produce."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.plan import Plan
from streamshift_engine.runner import Instance


@dataclass(frozen=True)
class Record:
    """One input record with its place: input, partition, offset."""

    source: str
    partition: int
    offset: int
    ts: int
    fields: Mapping[str, Any]

    @property
    def identity(self) -> str:
        return f"{self.source}@{self.partition}:{self.offset}"


def merge_order(records: Sequence[Record], input_names: Sequence[str]) -> list[Record]:
    """The deterministic order `(ts, input index, partition, offset)`."""
    return sorted(records, key=lambda r: (r.ts, input_names.index(r.source), r.partition, r.offset))


@st.composite
def partitioned_records(
    draw: st.DrawFn,
    sources: Sequence[str],
    partitions: int,
    field_values: Mapping[str, st.SearchStrategy[Any]],
    max_records: int = 40,
    max_gap: int = 3_000,
    key_field: str = "k",
) -> list[Record]:
    """Per (input, partition), records with non-decreasing timestamps and random fields; the
    `key_field` (an int) is made to agree with the partition, as co-partitioned inputs do."""
    records = []
    for source in sources:
        for partition in range(partitions):
            count = draw(st.integers(0, max_records))
            gaps = draw(st.lists(st.integers(0, max_gap), min_size=count, max_size=count))
            ts = np.cumsum(gaps).tolist()
            for offset, t in enumerate(ts):
                fields = {name: draw(strategy) for name, strategy in field_values.items()}
                if key_field in fields:
                    fields[key_field] = fields[key_field] * partitions + partition
                records.append(Record(source, partition, offset, t, fields))
    return records


def to_batch(source: str, records: Sequence[Record], field_names: Sequence[str]) -> Batch:
    ts = np.array([r.ts for r in records], np.int64)
    columns = {"ts": ts}
    for name in field_names:
        values = [r.fields[name] for r in records]
        columns[name] = np.array(
            values, dtype=object if values and isinstance(values[0], str) else None
        )
        if not values:
            columns[name] = np.empty(0, np.int64)
    return Batch(
        source,
        ts,
        np.array([r.partition for r in records], np.int32),
        np.array([r.offset for r in records], np.int64),
        columns,
    )


def streams(records: Sequence[Record]) -> dict[tuple[str, int], list[Record]]:
    grouped: dict[tuple[str, int], list[Record]] = {}
    for record in records:
        grouped.setdefault((record.source, record.partition), []).append(record)
    return grouped


def canonical(results: Sequence[ResultBatch]) -> list[tuple[Any, ...]]:
    """Results as sorted (id, window_start, window_end, min_ts, max_ts, values...) tuples."""
    rows = []
    for batch in results:
        meta = zip(
            batch.ids(),
            batch.window_start.tolist(),
            batch.window_end.tolist(),
            batch.min_ts.tolist(),
            batch.max_ts.tolist(),
            batch.rows(),
            strict=True,
        )
        for rid, start, end, low, high, row in meta:
            values = tuple(sorted((k, _round(v)) for k, v in row.items()))
            rows.append((rid, start, end, low, high, values))
    return sorted(rows)


def _round(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) else value


class Run:
    """Feeds records chunk by chunk (round-robin over (input, partition)), polling each round."""

    def __init__(
        self, plan: Plan, records: Sequence[Record], chunk: int, partitions: Collection[int]
    ) -> None:
        self.plan = plan
        self.fields = {spec.name: [f for f in spec.schema if f != "ts"] for spec in plan.inputs}
        self.streams = streams(records)
        self.chunk = chunk
        self.partitions = set(partitions)
        self.rounds = (
            max((len(s) + chunk - 1) // chunk for s in self.streams.values()) if self.streams else 0
        )

    def feed_round(
        self, instance: Instance, index: int, only: Collection[int] | None = None
    ) -> None:
        for (source, partition), stream in sorted(self.streams.items()):
            if only is not None and partition not in only:
                continue
            part = stream[index * self.chunk : (index + 1) * self.chunk]
            if part:
                instance.feed(source, partition, to_batch(source, part, self.fields[source]))

    def refeed(
        self, instance: Instance, upto_round: int, only: Collection[int] | None = None
    ) -> None:
        """Feed a restored instance what its snapshot did not cover, up to the current round."""
        covered = instance.covered()
        for (source, partition), stream in sorted(self.streams.items()):
            if only is not None and partition not in only:
                continue
            start = covered.get((source, partition), 0)
            part = stream[start : upto_round * self.chunk]
            if part:
                instance.feed(source, partition, to_batch(source, part, self.fields[source]))

    def straight(self) -> list[ResultBatch]:
        instance = Instance(self.plan, self.partitions)
        results: list[ResultBatch] = []
        for index in range(self.rounds):
            self.feed_round(instance, index)
            results += instance.poll()
        return results + instance.flush()

    def restarted(self, at_round: int) -> list[ResultBatch]:
        """Snapshot after round `at_round`, restore into a fresh instance, and continue there."""
        instance = Instance(self.plan, self.partitions)
        results: list[ResultBatch] = []
        for index in range(self.rounds):
            self.feed_round(instance, index)
            results += instance.poll()
            if index == at_round:
                fresh = Instance(self.plan, self.partitions)
                fresh.restore(instance.snapshot())
                self.refeed(fresh, index + 1)
                instance = fresh
                results += instance.poll()
        return results + instance.flush()

    def split(self, at_round: int, moving: Collection[int]) -> list[ResultBatch]:
        """After `at_round`, the `moving` partitions leave with their state for another
        instance; both continue on their own partitions. Returns the union of outputs."""
        first = Instance(self.plan, self.partitions)
        results: list[ResultBatch] = []
        second: Instance | None = None
        for index in range(self.rounds):
            if second is None:
                self.feed_round(first, index)
                results += first.poll()
                if index == at_round:
                    second = Instance(self.plan, moving)
                    second.restore(first.snapshot(moving))
                    first.drop(moving)
                    self.refeed(second, index + 1, moving)
                    results += second.poll()
            else:
                staying = self.partitions - set(moving)
                self.feed_round(first, index, staying)
                self.feed_round(second, index, moving)
                results += first.poll() + second.poll()
        results += first.flush()
        if second is not None:
            results += second.flush()
        return results
