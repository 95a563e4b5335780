"""Rescale a query from N to M instances: the partition groups that change owner move.

A pod runs one `Group` per partition group (docs/architecture.md, "How the protocols map onto
Kafka and pods"; a partition is a key group), named `pod-<i>/p<partition>`. Instance `i` of `n` owns
the contiguous partitions `[ceil(i*p/n), ceil((i+1)*p/n))`, as Flink assigns key groups and as
the operator does. Rescaling from `n` to `m` moves every partition whose owner changes, each by
its own run of the chosen protocol, all at once from the same step; each move has its own message
channel (a view of the cluster with its own transport), so the moves' messages never mix. Groups
that stay keep running undisturbed: their watermark never depended on the others.
Plans whose state is not keyed by the partition run at parallelism 1 and are refused. The
outcome holds, as a run's (`run.Outcome`), the results and every dead letter the groups collected
or the instances made still hold, so a rescale is checked as a move is (`run.compare_outcomes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

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
from streamshift_engine.migration.run import Outcome, dead_letters
from streamshift_engine.migration.transport import InProcessTransport
from streamshift_engine.plan.model import Plan

MAX_EXTRA_STEPS = 10_000
FactoryFor = Callable[[frozenset[int]], InstanceFactory]


@dataclass(frozen=True)
class Move:
    """One partition group leaving pod `origin` for pod `target`."""

    partition: int
    origin: int
    target: int


@dataclass(frozen=True)
class RescaleOutcome:
    emitted: list[Emitted]
    moves: list[Move]
    protocols: list[Protocol]
    outcome: Outcome


def owners(partitions: int, parallelism: int) -> list[int]:
    """Per partition, the instance that owns it."""
    if not 1 <= parallelism <= partitions:
        raise ValueError(f"cannot spread {partitions} partitions over {parallelism} instances")
    bounds = [-(-i * partitions // parallelism) for i in range(parallelism + 1)]
    return [next(i for i in range(parallelism) if p < bounds[i + 1]) for p in range(partitions)]


def moves(partitions: int, old: int, new: int) -> list[Move]:
    before, after = owners(partitions, old), owners(partitions, new)
    return [Move(p, a, b) for p, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]


def _channel(cluster: Cluster, seed: int, max_delay: int) -> Cluster:
    """A view of `cluster` (same log, producer, groups and sink) with its own transport."""
    transport = InProcessTransport(seed, max_delay)
    return Cluster(
        cluster.log,
        cluster.producer,
        transport,
        cluster.batch_records,
        cluster.groups,
        cluster.sink,
        cluster.step_number,
    )


def run_rescale(
    protocol_type: type[Protocol],
    plan: Plan,
    inputs: Mapping[str, Batch],
    partitions: int,
    old: int,
    new: int,
    factory_for: FactoryFor,
    slice_ms: int,
    start_step: int,
    seed: int = 0,
    max_delay: int = 0,
) -> RescaleOutcome:
    """The same input, rescaled from `old` to `new` instances at `start_step`."""
    if not plan.keyed:
        raise ValueError(f"{plan.name} keeps global state: it runs at parallelism 1")
    made: list[EngineInstance] = []

    def recorded(partitions: frozenset[int]) -> InstanceFactory:
        factory = factory_for(partitions)

        def make(plan: Plan) -> EngineInstance:
            made.append(factory(plan))
            return made[-1]

        return make

    ordered = sorted_inputs(inputs)
    log = make_log(ordered, partitions)
    cluster = Cluster(log, Producer(log, ordered, slice_ms), InProcessTransport(seed, max_delay))
    groups = {}
    for partition, pod in enumerate(owners(partitions, old)):
        group = Group(
            f"pod-{pod}/p{partition}",
            recorded(frozenset([partition]))(plan),
            log,
            frozenset([partition]),
        )
        group.reader.assign({tp: 0 for tp in log.topic_partitions([partition])})
        cluster.add(group)
        groups[partition] = group
    planned = moves(partitions, old, new)
    running: list[tuple[Protocol, Cluster]] = []
    steps = 0
    while not (
        cluster.drained()
        and steps > start_step
        and all(protocol.may_end_with_input() for protocol, _ in running)
    ):
        if steps == start_step:
            for index, move in enumerate(planned):
                channel = _channel(cluster, seed + index, max_delay)
                target = f"pod-{move.target}/p{move.partition}"
                factory = recorded(frozenset([move.partition]))
                protocol = protocol_type(groups[move.partition], target, plan, plan, factory)
                protocol.begin(channel)
                running.append((protocol, channel))
        cluster.step()
        for protocol, channel in running:
            channel.transport.tick()
            channel.step_number = cluster.step_number
            protocol.on_step(channel)
        steps += 1
        if steps > start_step + MAX_EXTRA_STEPS:
            raise RuntimeError(f"rescale by {protocol_type.name} did not finish")
    cluster.finish()
    protocols = [protocol for protocol, _ in running]
    every = [*groups.values(), *(p.target for p in protocols if p.target is not None)]
    fed = sum(group.fed for group in every)
    outcome = Outcome(cluster.sink, fed, dead_letters=dead_letters(made, every))
    return RescaleOutcome(cluster.sink, planned, protocols, outcome)
