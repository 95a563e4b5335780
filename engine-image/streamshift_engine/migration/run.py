"""Run a query with and without a migration over the same input, and compare and price them.

`run_reference` reads every partition with one group; `run_migration` starts the same way and,
at step `start_step`, hands the partition group to a protocol, under a transport that delays and
reorders messages by up to `max_delay` ticks. `compare` checks exactness (the same result ids with
the same values, no duplicates, and per key the same order of windows); `compare_outcomes` also
checks that the migration dead-lettered exactly the records the run without migration did (each
once, with the same reason: out-of-order input must cost a migration nothing either way). An
outcome's dead letters are those its groups collected (`Group.dead`, where a group takes them
from its instance) and those still held by any engine instance the run created (through its
factory, so also instances a protocol builds and drops). `Cost` holds what every migration is
priced by: its duration in event time and wall clock, output gap, events processed twice, state
bytes moved, output held back and peak state size.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.cluster import (
    Cluster,
    InstanceFactory,
    Producer,
    make_log,
    sorted_inputs,
)
from streamshift_engine.migration.group import Emitted, EngineInstance, Group
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.transport import InProcessTransport
from streamshift_engine.plan.model import Plan

MAX_EXTRA_STEPS = 10_000


@dataclass(frozen=True)
class Cost:
    event_time_ms: int
    wall_seconds: float
    output_gap_steps: int
    events_processed_twice: int
    state_bytes_moved: int
    output_held_back: int
    peak_state_bytes: int


Letter = tuple[str, int, int, str]
"""A dead letter as compared: input, partition, offset, reason."""


@dataclass(frozen=True)
class Outcome:
    emitted: list[Emitted]
    fed: int
    cost: Cost | None = None
    dead_letters: Counter[Letter] = field(default_factory=Counter)


class _Recording:
    """An instance factory that remembers every instance it made (for their dead letters)."""

    def __init__(self, factory: InstanceFactory) -> None:
        self.factory = factory
        self.made: list[EngineInstance] = []

    def __call__(self, plan: Plan) -> EngineInstance:
        instance = self.factory(plan)
        self.made.append(instance)
        return instance

    def dead_letters(self, groups: list[Group]) -> Counter[Letter]:
        """The dead letters `groups` collected and those the instances still hold."""
        return dead_letters(self.made, groups)


def dead_letters(instances: list[EngineInstance], groups: list[Group]) -> Counter[Letter]:
    """The dead letters `groups` collected and those `instances` still hold."""
    held = [getattr(instance, "dead_letters", []) for instance in instances]
    collected = [getattr(group, "dead", []) for group in groups]
    return Counter(
        (d.source, d.partition, d.offset, d.reason) for part in held + collected for d in part
    )


def _cluster(
    inputs: Mapping[str, Batch],
    partitions: int,
    slice_ms: int,
    seed: int,
    delay: int,
    records_per_step: int | None = None,
) -> Cluster:
    ordered = sorted_inputs(inputs)
    log = make_log(ordered, partitions)
    producer = Producer(log, ordered, slice_ms, records_per_step)
    return Cluster(log, producer, InProcessTransport(seed, delay))


def _start_group(cluster: Cluster, name: str, plan: Plan, factory: InstanceFactory) -> Group:
    partitions = frozenset(range(next(iter(cluster.log.topics.values())).partitions))
    group = Group(name, factory(plan), cluster.log, partitions)
    group.reader.assign({tp: 0 for tp in cluster.log.topic_partitions(partitions)})
    cluster.add(group)
    return group


def run_reference(
    plan: Plan,
    inputs: Mapping[str, Batch],
    partitions: int,
    factory: InstanceFactory,
    slice_ms: int,
) -> Outcome:
    cluster = _cluster(inputs, partitions, slice_ms, 0, 0)
    recording = _Recording(factory)
    group = _start_group(cluster, "reference", plan, recording)
    while not cluster.drained():
        cluster.step()
    cluster.finish()
    return Outcome(cluster.sink, group.fed, dead_letters=recording.dead_letters([group]))


def run_migration(
    protocol_type: type[Protocol],
    plan: Plan,
    new_plan: Plan,
    inputs: Mapping[str, Batch],
    partitions: int,
    factory: InstanceFactory,
    slice_ms: int,
    start_step: int,
    seed: int = 0,
    max_delay: int = 0,
    records_per_step: int | None = None,
) -> Outcome:
    """The same input with the whole group migrated by `protocol_type` from `start_step` on
    (the producer writes `slice_ms` of event time per step, or `records_per_step` records)."""
    cluster = _cluster(inputs, partitions, slice_ms, seed, max_delay, records_per_step)
    recording = _Recording(factory)
    origin = _start_group(cluster, "origin", plan, recording)
    protocol = protocol_type(origin, "target", plan, new_plan, recording)
    steps = 0
    while not (cluster.drained() and (steps > start_step and protocol.may_end_with_input())):
        if steps == start_step:
            protocol.begin(cluster)
        cluster.step()
        if steps >= start_step:
            protocol.on_step(cluster)
        steps += 1
        if steps > start_step + MAX_EXTRA_STEPS:
            raise RuntimeError(f"{protocol.name} did not finish; stuck in {protocol.phase}")
    held = len(protocol.target.held) if protocol.target else 0
    cluster.finish()
    fed = origin.fed + (protocol.target.fed if protocol.target else 0)
    groups = [origin, *([protocol.target] if protocol.target else [])]
    cost = _cost(protocol, cluster, held, fed, groups)
    return Outcome(cluster.sink, fed, cost, recording.dead_letters(groups))


def _cost(protocol: Protocol, cluster: Cluster, held: int, fed: int, groups: list[Group]) -> Cost:
    phases = protocol.phases
    first, last = phases[0], phases[-1]
    steps = sorted({e.step for e in cluster.sink if first.step <= e.step <= last.step})
    bounds = [first.step, *steps, last.step]
    gap = max((b - a for a, b in itertools.pairwise(bounds)), default=0)
    total = sum(
        len(topic.read(p, 0))
        for topic in cluster.log.topics.values()
        for p in range(topic.partitions)
    )
    return Cost(
        event_time_ms=(last.step - first.step) * cluster.producer.slice_ms,
        wall_seconds=last.wall - first.wall,
        output_gap_steps=gap,
        events_processed_twice=max(0, fed - total),
        state_bytes_moved=protocol.state_bytes_moved,
        output_held_back=held,
        peak_state_bytes=max(g.peak_state for g in groups),
    )


def records(emitted: list[Emitted]) -> list[tuple[str, tuple[object, ...]]]:
    """Every emitted result as (id, values), in emission order."""
    out = []
    for entry in emitted:
        value_lists = [v.tolist() for v in entry.results.values.values()]
        for rid, *values in zip(entry.results.ids(), *value_lists, strict=True):
            out.append((rid, tuple(values)))
    return out


def compare(reference: list[Emitted], migrated: list[Emitted]) -> list[str]:
    """Differences between two runs' results (empty when exact)."""
    expected, actual = records(reference), records(migrated)
    problems = []
    missing = Counter(expected) - Counter(actual)
    extra = Counter(actual) - Counter(expected)
    if missing:
        problems.append(f"{sum(missing.values())} missing, e.g. {next(iter(missing))}")
    if extra:
        problems.append(f"{sum(extra.values())} duplicate or wrong, e.g. {next(iter(extra))}")
    if _per_key_order(expected) != _per_key_order(actual):
        problems.append("per-key order differs")
    return problems


def compare_outcomes(reference: Outcome, migrated: Outcome) -> list[str]:
    """`compare` of the results, and the dead letters: the same records, each as often (once)
    and for the same reason."""
    problems = compare(reference.emitted, migrated.emitted)
    missing = reference.dead_letters - migrated.dead_letters
    extra = migrated.dead_letters - reference.dead_letters
    if missing:
        problems.append(f"{sum(missing.values())} dead letters missing, e.g. {min(missing)}")
    if extra:
        problems.append(f"{sum(extra.values())} dead letters extra or twice, e.g. {min(extra)}")
    return problems


def _per_key_order(results: list[tuple[str, tuple[object, ...]]]) -> dict[str, list[str]]:
    order: dict[str, list[str]] = defaultdict(list)
    for rid, _ in results:
        query, start, _end, key = rid.split("|", 3)
        if start != "-1":
            order[f"{query}|{key}"].append(start)
    return dict(order)
