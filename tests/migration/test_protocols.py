"""Every protocol's phases, and its result set against the run without migration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.auto import choose
from streamshift_engine.migration.cluster import InstanceFactory
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.run import compare, run_migration, run_reference
from streamshift_engine.migration.state_moving import MovingState, SavepointRestart, StateTransfer
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

from migration.doubles import TumblingSum

PROTOCOLS: list[type[Protocol]] = [
    UniMiCo,
    ParallelTrack,
    MovingState,
    StateTransfer,
    SavepointRestart,
]
PARTITIONS = 2


def tumbling_plan(size: int) -> Plan:
    return parse_plan(
        {
            "name": "sum",
            "inputs": [
                {
                    "name": "S",
                    "topic": "s",
                    "time_field": "ts",
                    "key_field": "k",
                    "schema": {"ts": "int", "k": "int", "m": "int"},
                }
            ],
            "operators": [
                {
                    "id": "w",
                    "type": "window_aggregate",
                    "input": "S",
                    "params": {
                        "window": {"kind": "time", "size": size, "slide": size},
                        "group_by": ["k"],
                        "aggregates": [{"name": "sum", "fn": "sum", "field": "m"}],
                    },
                }
            ],
            "output": "w",
        }
    )


def factory(size: int) -> InstanceFactory:
    return lambda plan: TumblingSum(size, [("S", p) for p in range(PARTITIONS)])


def inputs(seed: int, count: int) -> dict[str, Batch]:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 2_000, count))
    keys = rng.integers(0, 4, count)
    return {
        "S": Batch(
            "S",
            ts,
            (keys % PARTITIONS).astype(np.int32),
            np.zeros(count, np.int64),
            {"k": keys, "m": rng.integers(0, 100, count)},
        )
    }


def check(protocol: type[Protocol], size: int, seed: int, start: int, delay: int) -> None:
    plan = tumbling_plan(size)
    data = inputs(seed, 300)
    reference = run_reference(plan, data, PARTITIONS, factory(size), slice_ms=50)
    outcome = run_migration(
        protocol, plan, plan, data, PARTITIONS, factory(size), 50, start, seed=seed, max_delay=delay
    )
    assert compare(reference.emitted, outcome.emitted) == []
    assert {e.owner for e in outcome.emitted} <= {"origin", "target"}


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_each_protocol_is_exact_on_a_fixed_case(protocol: type[Protocol]) -> None:
    check(protocol, size=100, seed=3, start=12, delay=2)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
@settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(
    size=st.sampled_from([30, 100, 250]),
    seed=st.integers(0, 10**6),
    start=st.integers(0, 45),
    delay=st.integers(0, 4),
)
def test_result_set_with_migration_equals_without(
    protocol: type[Protocol], size: int, seed: int, start: int, delay: int
) -> None:
    check(protocol, size, seed, start, delay)


def test_unimico_phases_and_target_output() -> None:
    plan = tumbling_plan(100)
    outcome = run_migration(UniMiCo, plan, plan, inputs(1, 300), PARTITIONS, factory(100), 50, 10)
    owners = {e.owner for e in outcome.emitted}
    assert owners == {"origin", "target"}
    assert outcome.cost is not None and outcome.cost.state_bytes_moved == 0


def test_state_transfer_moves_the_snapshot_and_moving_state_shares_it() -> None:
    plan = tumbling_plan(250)
    data = inputs(2, 300)
    moved = run_migration(StateTransfer, plan, plan, data, PARTITIONS, factory(250), 50, 10)
    shared = run_migration(MovingState, plan, plan, data, PARTITIONS, factory(250), 50, 10)
    assert moved.cost is not None and moved.cost.state_bytes_moved > 0
    assert shared.cost is not None and shared.cost.state_bytes_moved == 0
    assert moved.cost.events_processed_twice >= 0


def test_auto_prefers_a_stateless_hand_off_for_short_time_windows() -> None:
    plan = tumbling_plan(100)
    assert choose(plan, plan, state_bytes=10_000).protocol is UniMiCo
    assert choose(plan, plan, state_bytes=10_000, max_overlap_ms=10).protocol is MovingState
