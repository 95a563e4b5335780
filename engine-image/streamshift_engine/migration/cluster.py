"""The in-process world a migration runs in: a log being written, groups reading it, a sink.

`Cluster.step()` is one tick: the producer appends the next slice of event time to the log
(records arrive while the migration runs, so a target that reads "from the log end" sees a later
point than the origin), every live group reads, processes and emits, the protocol reacts to its
messages, and the transport's clock advances. Every result that reaches the sink is recorded
with its owner and step, which is what exactness and the cost figures are computed from.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration.group import Emitted, EngineInstance, Group
from streamshift_engine.migration.log import Log, Topic
from streamshift_engine.migration.transport import InProcessTransport
from streamshift_engine.plan.model import Plan

InstanceFactory = Callable[[Plan], EngineInstance]


@dataclass
class Producer:
    """Appends the inputs to the log in arrival order (each input's records of a partition in
    the order given, as a Kafka producer writes them: timestamps may decrease), in slices of
    arrival time, one slice per step; or, with `records_per_step`, that many records of each
    partition per step, as a Kafka producer's batches fall, so a run of equal timestamps may
    straddle a step. A record's arrival time is the largest event time of its partition up to
    it (its own for an in-order record; a late record arrives with the records it follows).
    `next_ts`: no record not yet in the log arrives earlier (a late one's own timestamp may be
    earlier)."""

    log: Log
    inputs: Mapping[str, Batch]
    slice_ms: int
    records_per_step: int | None = None
    next_ts: int = field(init=False)
    end_ts: int = field(init=False)
    arrival: dict[str, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.arrival = {name: _arrival(batch) for name, batch in self.inputs.items()}
        times = [int(a.min()) for a in self.arrival.values() if len(a)]
        ends = [int(a.max()) for a in self.arrival.values() if len(a)]
        self.next_ts = min(times, default=0)
        self.end_ts = max(ends, default=0) + 1

    @property
    def exhausted(self) -> bool:
        return self.next_ts >= self.end_ts

    def produce(self) -> None:
        if self.records_per_step is not None:
            self._produce_records(self.records_per_step)
            return
        stop = self.next_ts + self.slice_ms
        for name, batch in self.inputs.items():
            topic = self.log[name]
            arrival = self.arrival[name]
            chosen = (arrival >= self.next_ts) & (arrival < stop)
            for partition in range(topic.partitions):
                part = batch.take(chosen & (batch.partition == partition))
                topic.append(partition, part.ts, part.columns)
        self.next_ts = stop

    def _produce_records(self, count: int) -> None:
        pending = []
        for name, batch in self.inputs.items():
            topic = self.log[name]
            for partition in range(topic.partitions):
                mine = batch.partition == partition
                part, arrival = batch.take(mine), self.arrival[name][mine]
                written = topic.end_offset(partition)
                chunk = part.take(slice(written, written + count))
                topic.append(partition, chunk.ts, chunk.columns)
                pending += arrival[written + len(chunk) : written + len(chunk) + 1].tolist()
        self.next_ts = min(pending, default=self.end_ts)


def _arrival(batch: Batch) -> np.ndarray:
    """Per record, the largest event time of its partition up to it, in the batch's order."""
    arrival = np.empty(len(batch), np.int64)
    for partition in np.unique(batch.partition).tolist():
        mine = np.flatnonzero(batch.partition == partition)
        arrival[mine] = np.maximum.accumulate(batch.ts[mine])
    return arrival


def make_log(inputs: Mapping[str, Batch], partitions: int) -> Log:
    """Empty topics shaped like the inputs."""
    return Log(Topic(name, partitions, list(b.columns)) for name, b in inputs.items())


def sorted_inputs(inputs: Mapping[str, Batch]) -> dict[str, Batch]:
    """Each input ordered by partition, each partition's records kept in their given (arrival)
    order: the order a producer writes them in."""
    return {n: b.take(np.argsort(b.partition, kind="stable")) for n, b in inputs.items()}


@dataclass
class Cluster:
    """Groups reading a growing log, a transport, and the sink they all write to."""

    log: Log
    producer: Producer
    transport: InProcessTransport
    batch_records: int = 64
    groups: dict[str, Group] = field(default_factory=dict)
    sink: list[Emitted] = field(default_factory=list)
    step_number: int = 0

    def add(self, group: Group) -> None:
        self.groups[group.name] = group

    def remove(self, name: str) -> Group:
        return self.groups.pop(name)

    def emit(self, owner: str, results: list[ResultBatch]) -> None:
        self.sink.extend(Emitted(owner, self.step_number, r) for r in results if len(r))

    def step(self) -> None:
        if not self.producer.exhausted:
            self.producer.produce()
        for name, group in list(self.groups.items()):
            self.emit(name, group.step(self.batch_records))
            self.emit(name, group.take_outbox())
        self.transport.tick()
        self.step_number += 1

    def drained(self) -> bool:
        """The producer is done and every live group has read to the end of its partitions."""
        if not self.producer.exhausted:
            return False
        for group in self.groups.values():
            for tp, position in group.reader.positions.items():
                if tp in group.reader.paused:  # a probe that read what it needed
                    continue
                limit = group.reader.limits.get(tp, self.log[tp[0]].end_offset(tp[1]))
                if position < min(limit, self.log[tp[0]].end_offset(tp[1])):
                    return False
        return True

    def finish(self) -> None:
        """End of input: every live group flushes what it still holds."""
        for name, group in self.groups.items():
            self.emit(name, group.finish())
            self.emit(name, group.release_held())
            self.emit(name, group.take_outbox())


def wall_clock() -> float:
    return time.perf_counter()
