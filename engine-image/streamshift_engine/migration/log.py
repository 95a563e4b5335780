"""An in-memory partitioned log that behaves like a set of Kafka topics.

The protocols and their tests read inputs from it; the worker runtime later puts Kafka behind
the same interface. A `Topic` holds, per partition, records in arrival order with consecutive
offsets from 0 and an event time each. As in a Kafka partition, offsets follow arrival, not event
time: timestamps may decrease (out-of-order and late records). `Reader`s are independent
consumers: each has its own position per partition and can seek by offset or by timestamp
(`offset_for_time`: the first offset whose timestamp is `>= t`, found by scanning as Kafka's
`offsetsForTimes` does, so on disordered data records before it may still have later timestamps
and records after it earlier ones), so an origin and a target can read the same
partitions from different points, as docs/architecture.md ("How the protocols map onto Kafka and
pods") describes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from streamshift_engine.events.batch import Batch

TopicPartition = tuple[str, int]


class Topic:
    """The partitions of one input: appends get consecutive offsets per partition."""

    def __init__(self, name: str, partitions: int, column_names: Iterable[str]) -> None:
        if partitions < 1:
            raise ValueError(f"topic {name!r} needs at least one partition")
        self.name = name
        self.column_names = list(column_names)
        self._chunks: list[list[Batch]] = [[] for _ in range(partitions)]
        self._merged: list[Batch] = [Batch.empty(name, self.column_names)] * partitions

    @property
    def partitions(self) -> int:
        return len(self._chunks)

    def append(self, partition: int, ts: np.ndarray, columns: Mapping[str, np.ndarray]) -> int:
        """Append records to one partition; returns the offset of the first one."""
        start = self.end_offset(partition)
        if len(ts) == 0:
            return start
        times = np.asarray(ts, np.int64)
        chunk = Batch(
            source=self.name,
            ts=times,
            partition=np.full(len(times), partition, np.int32),
            offset=np.arange(start, start + len(times), dtype=np.int64),
            columns={name: np.asarray(columns[name]) for name in self.column_names},
        )
        self._chunks[partition].append(chunk)
        self._merged[partition] = Batch.concat([self._merged[partition], chunk])
        return start

    def end_offset(self, partition: int) -> int:
        """The offset the next appended record gets (Kafka's log end offset)."""
        return len(self._merged[partition])

    def read(self, partition: int, offset: int, max_records: int | None = None) -> Batch:
        """Records from `offset` on (at most `max_records`), possibly none."""
        stop = self.end_offset(partition)
        if max_records is not None:
            stop = min(stop, offset + max_records)
        return self._merged[partition].take(slice(offset, max(offset, stop)))

    def read_until(self, partition: int, offset: int, stop: int) -> Batch:
        """Records with offsets in `[offset, stop)` that are already in the log."""
        return self.read(partition, offset, max(0, stop - offset))

    def offset_for_time(self, partition: int, ts: int) -> int:
        """The first offset whose timestamp is `>= ts`, or the end offset when there is none."""
        times = self._merged[partition].ts
        at_or_after = np.flatnonzero(times >= ts)
        return int(at_or_after[0]) if len(at_or_after) else len(times)

    def timestamp_at(self, partition: int, offset: int) -> int:
        return int(self._merged[partition].ts[offset])


class Log:
    """Several topics by name: the inputs of a query."""

    def __init__(self, topics: Iterable[Topic]) -> None:
        self.topics = {topic.name: topic for topic in topics}

    def __getitem__(self, name: str) -> Topic:
        return self.topics[name]

    def topic_partitions(self, partitions: Iterable[int]) -> list[TopicPartition]:
        """Every (topic, partition) pair for the given key groups, in a stable order."""
        return [(name, p) for name in self.topics for p in sorted(partitions)]

    def end_offsets(self, partitions: Iterable[int]) -> dict[TopicPartition, int]:
        return {
            tp: self.topics[tp[0]].end_offset(tp[1]) for tp in self.topic_partitions(partitions)
        }

    def offsets_for_time(self, partitions: Iterable[int], ts: int) -> dict[TopicPartition, int]:
        return {
            tp: self.topics[tp[0]].offset_for_time(tp[1], ts)
            for tp in self.topic_partitions(partitions)
        }


class Reader:
    """One consumer: a position per assigned (topic, partition), independent of other readers."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.positions: dict[TopicPartition, int] = {}
        self.limits: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        """Start reading the given partitions at the given offsets."""
        self.positions.update(positions)

    def seek_to_time(self, partitions: Iterable[int], ts: int) -> None:
        self.assign(self.log.offsets_for_time(partitions, ts))

    def seek_to_end(self, partitions: Iterable[int]) -> None:
        self.assign(self.log.end_offsets(partitions))

    def stop_at(self, limits: Mapping[TopicPartition, int]) -> None:
        """Never read at or past these offsets (a marker position)."""
        self.limits.update(limits)

    def pause(self, positions: Iterable[TopicPartition]) -> None:
        """Read nothing more of these partitions until `resume`."""
        self.paused.update(positions)

    def resume(self, positions: Iterable[TopicPartition]) -> None:
        self.paused.difference_update(positions)

    def unassign(self, partitions: Iterable[int]) -> None:
        keep = set(partitions)
        for tp in [tp for tp in self.positions if tp[1] in keep]:
            del self.positions[tp]
            self.limits.pop(tp, None)

    def assigned(self) -> set[int]:
        return {p for _, p in self.positions}

    def at_limit(self, tp: TopicPartition) -> bool:
        return tp in self.limits and self.positions[tp] >= self.limits[tp]

    def poll(self, max_records: int) -> list[Batch]:
        """Up to `max_records` new records per assigned partition, one batch each."""
        batches = []
        for tp, position in sorted(self.positions.items()):
            if tp in self.paused:
                continue
            topic = self.log[tp[0]]
            stop = min(position + max_records, self.limits.get(tp, position + max_records))
            batch = topic.read_until(tp[1], position, stop)
            if len(batch):
                self.positions[tp] = position + len(batch)
                batches.append(batch)
        return batches
