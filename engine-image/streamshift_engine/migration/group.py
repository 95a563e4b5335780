"""A partition group at work: one engine instance, its log reader, its filters and its counters.

The unit that moves is a partition group (key groups, ARCHITECTURE.md "How the protocols map onto
Kafka and pods"); a pod runs one `Group` per partition group it owns, so a group leaves a pod
without disturbing the watermark of the groups that stay. The protocols steer a group only from
the outside, as docs/design/engine-api.md allows: an input filter (records below a timestamp are
dropped before `feed`), an output filter (a predicate over `ResultBatch` rows, applied after
`poll`), a hold-back buffer (seed 001 4.2.3: the new plan's results wait until the old plan is
gone) and stop offsets on the reader (a marker position, seeds 003/004: the log is the upstream
buffer). A group also tracks its watermark (the minimum over its partitions of the largest event
time read), and at a marker it names the offsets its instance's state covers (the engine's
`Instance.covered()`): records fed but not yet released are re-read by the next owner instead
of being snapshotted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.migration.log import Log, Reader, TopicPartition
from streamshift_engine.pipeline import Pipeline

OutputFilter = Callable[[ResultBatch], npt.NDArray[np.bool_]]


class EngineInstance(Protocol):
    """What the protocols use of `streamshift_engine.runner.Instance` (engine-api.md)."""

    def feed(self, input_name: str, partition: int, batch: Batch) -> None: ...

    def poll(self) -> list[ResultBatch]: ...

    def flush(self) -> list[ResultBatch]: ...

    def snapshot(self) -> bytes: ...

    def restore(self, data: bytes) -> None: ...

    def state_bytes(self) -> int: ...

    def watermark(self) -> int | None: ...

    def covered(self) -> dict[tuple[str, int], int]: ...

    @property
    def pipeline(self) -> Pipeline: ...


@dataclass
class Emitted:
    """Results a group released to the sink, with the step at which they became visible."""

    owner: str
    step: int
    results: ResultBatch


@dataclass
class Group:
    """One engine instance over a set of partitions, read from the shared log."""

    name: str
    instance: EngineInstance
    log: Log
    partitions: frozenset[int]
    reader: Reader = field(init=False)
    min_ts: int | None = None
    output_filter: OutputFilter | None = None
    holding: bool = False
    held: list[ResultBatch] = field(default_factory=list)
    fed: int = 0
    peak_state: int = 0
    max_fed: dict[TopicPartition, int] = field(default_factory=dict)
    started_at: dict[TopicPartition, int] = field(default_factory=dict)
    finished: bool = False

    def __post_init__(self) -> None:
        self.reader = Reader(self.log)

    def watermark(self) -> int | None:
        """The minimum over the group's partitions of the largest event time fed."""
        tps = self.log.topic_partitions(self.partitions)
        if any(tp not in self.max_fed for tp in tps):
            return None
        return min(self.max_fed[tp] for tp in tps)

    def step(self, max_records: int) -> list[ResultBatch]:
        """Read, filter, feed, poll: the results this step releases (empty while holding)."""
        for tp, position in self.reader.positions.items():
            self.started_at.setdefault(tp, position)
        for batch in self.reader.poll(max_records):
            tp = (batch.source, int(batch.partition[0]))
            self.max_fed[tp] = int(batch.ts[-1])
            if self.min_ts is not None:
                batch = batch.take(batch.ts >= self.min_ts)
            if len(batch):
                self.fed += len(batch)
                self.instance.feed(tp[0], tp[1], batch)
        return self._release(self.instance.poll())

    def finish(self) -> list[ResultBatch]:
        """End of input (or of this group's part): everything still open is emitted."""
        self.finished = True
        return self._release(self.instance.flush())

    def release_held(self) -> list[ResultBatch]:
        held, self.held, self.holding = self.held, [], False
        return held

    def covered_positions(self) -> dict[TopicPartition, int]:
        """Per partition, the first offset the instance's state does not cover
        (`Instance.covered()`): records read but still waiting for the watermark are left to
        the log, so a snapshot taken now plus these offsets lose and repeat nothing. Where the
        instance has released nothing yet, the offset the group started reading at."""
        covered = self.instance.covered()
        return {tp: covered.get(tp, self.started_at[tp]) for tp in self.reader.positions}

    def _release(self, results: list[ResultBatch]) -> list[ResultBatch]:
        self.peak_state = max(self.peak_state, self.instance.state_bytes())
        kept = []
        for batch in results:
            if self.output_filter is not None:
                batch = batch.take(self.output_filter(batch))
            if len(batch):
                kept.append(batch)
        if self.holding:
            self.held.extend(kept)
            return []
        return kept
