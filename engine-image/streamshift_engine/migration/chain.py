"""Chained migrations in process: the target of one migration is the origin of the next.

A query is rarely migrated once: a rescale follows a move, an autoscaler rescales up and down.
The roles a group played in one migration stay on it (as they stay on a worker), so the next
migration must read its origin's role in that migration only; `run_chain` runs the protocols
one after another on the same query, each starting `gap_steps` after the previous one is done,
and `Case.chained` runs it on a property-check case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.cluster import InstanceFactory
from streamshift_engine.migration.protocol import DONE, Protocol
from streamshift_engine.migration.run import MAX_EXTRA_STEPS, Outcome, _cluster, _start_group
from streamshift_engine.plan.model import Plan


def run_chain(
    protocols: Sequence[type[Protocol]],
    plan: Plan,
    inputs: Mapping[str, Batch],
    partitions: int,
    factory: InstanceFactory,
    slice_ms: int,
    start_step: int,
    gap_steps: int = 1,
    seed: int = 0,
    max_delay: int = 0,
) -> tuple[Outcome, list[Protocol]]:
    """The input with the whole group migrated by each protocol in turn, from `start_step` on
    (a migration the input ends before is not started)."""
    cluster = _cluster(inputs, partitions, slice_ms, seed, max_delay)
    group = _start_group(cluster, "g0", plan, factory)
    started: list[Protocol] = []
    waiting = list(protocols)
    next_start, steps = start_step, 0
    while not (cluster.drained() and all(p.may_end_with_input() for p in started)):
        current = started[-1] if started else None
        if waiting and steps >= next_start and (current is None or current.phase == DONE):
            origin = group if current is None or current.target is None else current.target
            protocol = waiting.pop(0)(origin, f"g{len(started) + 1}", plan, plan, factory)
            protocol.begin(cluster)
            started.append(protocol)
        cluster.step()
        for protocol in started:
            if protocol.phase != DONE:
                protocol.on_step(cluster)
        if started and started[-1].phase == DONE and next_start <= steps:
            next_start = steps + gap_steps
        steps += 1
        if steps > start_step + MAX_EXTRA_STEPS:
            raise RuntimeError(f"chain stuck in {[p.phase for p in started]}")
    cluster.finish()
    return Outcome(cluster.sink, 0), started
