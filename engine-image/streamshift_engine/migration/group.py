"""A partition group at work: one engine instance, its log reader, its filters and its counters.

The unit that moves is a partition group (key groups, docs/architecture.md "How the protocols
map onto Kafka and pods"); a pod runs one `Group` per partition group it owns, so a group leaves a
pod without disturbing the watermark of the groups that stay. The protocols steer a group only
from the outside, as docs/design/engine-api.md allows: an input filter (records below a
timestamp are dropped before `feed`), an output filter (a predicate over `ResultBatch` rows,
applied after `poll`), a hold-back buffer (seed 001 (Zhu et al., Dynamic Plan Migration) 4.2.3: the
new plan's results wait until the old plan is gone) and stop offsets on the reader (a marker
position, seed 003 (Bartnik et al., On-the-fly Reconfiguration) and seed 004 (UPM-CEP, State
Transfer): the log is the upstream buffer). A group is also the in-process driver of
the protocols' roles (`role.Role`): it implements their `InstancePort` and calls their hooks around
each step, as the worker does. At a marker a group names the offsets its instance's state covers
(the engine's `Instance.covered()`): records fed but not yet released are re-read by the next owner
instead of being snapshotted."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter
from streamshift_engine.migration.log import Log, Reader, TopicPartition
from streamshift_engine.migration.role import Role
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance

IN_PROCESS_QUERY = "in-process"  # the query an in-process export names
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

    @property
    def plan(self) -> Plan: ...

    @property
    def dead_letters(self) -> list[DeadLetter]: ...

    @dead_letters.setter
    def dead_letters(self, value: list[DeadLetter]) -> None: ...


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
    started_at: dict[TopicPartition, int] = field(default_factory=dict)
    finished: bool = False
    roles: list[Role] = field(default_factory=list)
    outbox: list[ResultBatch] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    handed_over: bool = False

    def __post_init__(self) -> None:
        self.reader = Reader(self.log)

    def watermark(self) -> int | None:
        """The instance's watermark (as a worker's roles see it)."""
        return self.instance.watermark()

    def step(self, max_records: int) -> list[ResultBatch]:
        """Read, filter, feed, poll: the results this step releases (empty while holding)."""
        for tp, position in self.reader.positions.items():
            self.started_at.setdefault(tp, position)
        batches = {(b.source, int(b.partition[0])): b for b in self.reader.poll(max_records)}
        for role in self.roles:
            batches = role.on_input(self, batches)
        for tp, batch in batches.items():
            if self.min_ts is not None:
                batch = batch.take(batch.ts >= self.min_ts)
            if len(batch):
                self.fed += len(batch)
                self.instance.feed(tp[0], tp[1], batch)
        results = self._by_roles(self._release(self.instance.poll()))
        for role in self.roles:
            role.after_output(self)
        return results

    def finish(self) -> list[ResultBatch]:
        """End of input (or of this group's part): everything still open is emitted."""
        self.finished = True
        results = self._by_roles(self._release(self.instance.flush()))
        for role in self.roles:
            if not role.done:
                results += role.end_of_input(self)
        return results

    def _by_roles(self, results: list[ResultBatch]) -> list[ResultBatch]:
        """Results and the step's dead letters through the roles' hooks."""
        letters, self.instance.dead_letters = self.instance.dead_letters, []
        for role in self.roles:
            results = role.on_output(self, results)
            letters = role.on_dead_letters(self, letters)
        self.dead += letters
        return results

    def take_outbox(self) -> list[ResultBatch]:
        """Results a role released outside a step (`emit`)."""
        out, self.outbox = self.outbox, []
        return out

    # The `InstancePort` of the protocols' roles.

    @property
    def plan(self) -> Plan:
        return self.instance.plan

    @property
    def pipeline(self) -> Pipeline:
        return self.instance.pipeline

    def owned(self) -> frozenset[int]:
        return frozenset(p for _, p in self.reader.positions)

    def read_back_offsets(
        self, positions: Collection[TopicPartition], ts: int
    ) -> dict[TopicPartition, int]:
        return {tp: self.log[tp[0]].offset_for_time(tp[1], ts) for tp in positions}

    def end_offsets(self, positions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.log[tp[0]].end_offset(tp[1]) for tp in positions}

    def read_from(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.reader.resume(offsets)
        self.reader.assign(offsets)

    def stop_reading(self, positions: Collection[TopicPartition]) -> None:
        self.reader.pause(positions)

    def positions_read(self) -> dict[TopicPartition, int]:
        return dict(self.reader.positions)

    def hand_over(self, partitions: Collection[int]) -> None:
        self.reader.unassign(partitions)
        self.handed_over = True

    def emit(self, results: list[ResultBatch]) -> None:
        self.outbox += results

    def send_dead_letters(self, letters: list[DeadLetter]) -> None:
        self.dead += letters

    # The `StatePort` of the state-moving protocols' roles: a group moves as a whole, and what
    # travels is a message (the snapshot with the positions it covers, or an export).

    @property
    def query(self) -> str:
        return IN_PROCESS_QUERY

    def stop_at(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.reader.stop_at(offsets)

    def state_covers(self, partitions: Collection[int]) -> dict[TopicPartition, int]:
        return {tp: o for tp, o in self.covered_positions().items() if tp[1] in set(partitions)}

    def save_state(self, partitions: Collection[int], migration: str) -> dict[str, Any]:
        return {"state": self.instance.snapshot(), "positions": self.state_covers(partitions)}

    def export_state(self, partitions: Collection[int]) -> list[bytes | memoryview]:
        return [self.instance.snapshot()]

    def restore_saved(
        self, partitions: Collection[int], migration: str, saved: Any
    ) -> tuple[dict[TopicPartition, int], dict[str, Any]]:
        self.instance.restore(saved["state"])
        return dict(saved["positions"]), {}

    def fresh_instance(self, partitions: Collection[int]) -> Instance:
        """The group's own instance (a target group's, empty until the state arrives)."""
        if not isinstance(self.instance, Instance):
            raise TypeError("moving-state fills the states of engine Instances")
        return self.instance

    def install(self, instance: Instance) -> None:
        self.instance = instance

    def resume_from(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.reader.assign(offsets)
        return {}

    def stop(self) -> dict[str, Any]:
        return self.save_state(self.partitions, "")

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
