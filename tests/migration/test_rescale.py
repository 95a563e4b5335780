"""Rescale N -> M (bytewax's rescale test, on partition groups): scale out 1 -> 3, in 3 -> 1 and
2 -> 3; for every protocol that accepts the plan the result set equals the run without rescale."""

from __future__ import annotations

from typing import Any

import pytest
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.cluster import InstanceFactory
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.rescale import moves, owners, run_rescale
from streamshift_engine.migration.run import compare, run_reference
from streamshift_engine.migration.state_moving import MovingState, StateTransfer
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.plan.join_trees import join_tree_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

from migration.plan_inputs import SCHEMA, instances, streams

PARTITIONS = 6


def sliding_sum() -> Plan:
    window = {"kind": "time", "size": 100, "slide": 50}
    aggregate: dict[str, Any] = {"window": window, "group_by": ["k"]}
    aggregate["aggregates"] = [{"name": "s", "fn": "sum", "field": "m"}]
    source = {"name": "S", "topic": "s", "time_field": "ts", "key_field": "k", "schema": SCHEMA}
    operator = {"id": "w", "type": "window_aggregate", "input": "S", "params": aggregate}
    return parse_plan({"name": "sum", "inputs": [source], "operators": [operator], "output": "w"})


def by_partitions(partitions: frozenset[int]) -> InstanceFactory:
    return instances(partitions)


def test_owners_are_contiguous_and_moves_are_the_changed_ones() -> None:
    assert owners(6, 1) == [0] * 6
    assert owners(6, 3) == [0, 0, 1, 1, 2, 2]
    assert owners(6, 4) == [0, 0, 1, 2, 2, 3]
    assert [(m.partition, m.origin, m.target) for m in moves(6, 2, 3)] == [
        (2, 0, 1),
        (4, 1, 2),
        (5, 1, 2),
    ]


@pytest.mark.parametrize("scaling", [(1, 3), (3, 1), (2, 3)], ids=lambda s: f"{s[0]}to{s[1]}")
@pytest.mark.parametrize("protocol", PROTOCOL_CLASSES, ids=lambda p: p.name)
def test_rescaled_result_set_equals_the_run_without(
    protocol: type[Protocol], scaling: tuple[int, int]
) -> None:
    plan = sliding_sum()
    data = streams("S", seed=sum(scaling), count=600, keys=12, partitions=PARTITIONS)
    reference = run_reference(plan, data, PARTITIONS, instances(range(PARTITIONS)), 50)
    outcome = run_rescale(
        protocol, plan, data, PARTITIONS, *scaling, by_partitions, 50, start_step=8, max_delay=2
    )
    assert compare(reference.emitted, outcome.emitted) == []
    assert len(outcome.protocols) == len(moves(PARTITIONS, *scaling)) > 0
    pods = {entry.owner.split("/")[0] for entry in outcome.emitted}
    assert pods == {f"pod-{i}" for i in range(max(scaling))}


@pytest.mark.parametrize("protocol", [MovingState, ParallelTrack], ids=lambda p: p.name)
def test_a_3_way_join_scales_out_exactly(protocol: type[Protocol]) -> None:
    plan = join_tree_plan("joins", (("S", "T"), "U"), 100, "k", SCHEMA)
    data = streams("STU", seed=5, count=150, keys=12, partitions=PARTITIONS)
    reference = run_reference(plan, data, PARTITIONS, instances(range(PARTITIONS)), 50)
    outcome = run_rescale(protocol, plan, data, PARTITIONS, 1, 3, by_partitions, 50, 10)
    assert compare(reference.emitted, outcome.emitted) == []
    assert {entry.owner.split("/")[0] for entry in outcome.emitted} == {"pod-0", "pod-1", "pod-2"}


def test_a_global_plan_is_refused() -> None:
    with pytest.raises(ValueError, match="parallelism 1"):
        run_rescale(StateTransfer, builtin("q2"), {}, PARTITIONS, 1, 3, by_partitions, 50, 5)
