"""Every protocol's phases and costs on the engine's `Instance`, on a keyed tumbling sum."""

from __future__ import annotations

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.capability import PROTOCOLS, choose
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.run import Outcome, compare, run_migration, run_reference
from streamshift_engine.migration.state_moving import MovingState, StateTransfer
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance

from migration.plan_inputs import tumbling_plan

PARTITIONS = 2
SLICE_MS = 50


def instance(plan: Plan) -> Instance:
    return Instance(plan, range(PARTITIONS))


def stream(ts: np.ndarray, keys: np.ndarray, values: np.ndarray) -> dict[str, Batch]:
    columns = {"ts": ts, "k": keys, "m": values}
    partition = (keys % PARTITIONS).astype(np.int32)
    return {"S": Batch("S", ts, partition, np.zeros(len(ts), np.int64), columns)}


def random_input(seed: int, count: int) -> dict[str, Batch]:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 4, count)
    return stream(np.sort(rng.integers(0, 2_000, count)), keys, rng.integers(0, 100, count))


def migrate(
    protocol: type[Protocol], plan: Plan, data: dict[str, Batch], start: int, delay: int = 0
) -> Outcome:
    return run_migration(
        protocol, plan, plan, data, PARTITIONS, instance, SLICE_MS, start, seed=3, max_delay=delay
    )


@pytest.mark.parametrize("protocol", PROTOCOL_CLASSES, ids=lambda p: p.name)
def test_each_protocol_is_exact_on_a_fixed_case(protocol: type[Protocol]) -> None:
    plan, data = tumbling_plan(100), random_input(3, 300)
    reference = run_reference(plan, data, PARTITIONS, instance, SLICE_MS)
    outcome = migrate(protocol, plan, data, start=12, delay=2)
    assert compare(reference.emitted, outcome.emitted) == []
    assert {e.owner for e in outcome.emitted} == {"origin", "target"}


def test_unimico_moves_no_state_and_both_instances_emit() -> None:
    plan = tumbling_plan(100)
    outcome = migrate(UniMiCo, plan, random_input(1, 300), start=10)
    assert {e.owner for e in outcome.emitted} == {"origin", "target"}
    assert outcome.cost is not None and outcome.cost.state_bytes_moved == 0


def lagging_input() -> dict[str, Batch]:
    """Key 0 (partition 0) every 10 ms from 0 to 1990; key 1 (partition 1) only at 0 and 1995:
    the watermark stays at 0 until the end, so nothing after ts 0 is ever released early."""
    ts = np.r_[np.arange(0, 2_000, 10), 0, 1_995].astype(np.int64)
    keys = np.r_[np.zeros(200, np.int64), 1, 1]
    return stream(ts, keys, np.ones(202, np.int64))


def test_state_transfer_moves_the_snapshot_and_moving_state_shares_it() -> None:
    plan = tumbling_plan(250)
    data = random_input(2, 300)
    moved = migrate(StateTransfer, plan, data, start=10)
    shared = migrate(MovingState, plan, data, start=10)
    assert moved.cost is not None and moved.cost.state_bytes_moved > 0
    assert shared.cost is not None and shared.cost.state_bytes_moved == 0
    assert moved.cost.events_processed_twice == shared.cost.events_processed_twice


@pytest.mark.parametrize("protocol", [StateTransfer, MovingState], ids=lambda p: p.name)
def test_a_snapshot_covers_only_released_records_and_the_rest_is_read_twice(
    protocol: type[Protocol],
) -> None:
    # The marker is placed after step 10, at ts 550: partition 0 has been read up to ts 540
    # (55 records) and partition 1 up to ts 0, so the watermark is 0 and no record is covered:
    # the target reads all 56 again from the log, and the output is still exact.
    plan, data = tumbling_plan(100), lagging_input()
    outcome = migrate(protocol, plan, data, start=10)
    assert outcome.cost is not None and outcome.cost.events_processed_twice == 56
    reference = run_reference(plan, data, PARTITIONS, instance, SLICE_MS)
    assert compare(reference.emitted, outcome.emitted) == []


def test_a_balanced_input_is_covered_up_to_the_watermark() -> None:
    # Both partitions every 10 ms: at the marker (ts 550) the watermark is 540, so only the
    # records at ts 540 (one per partition) wait and are read twice.
    ts = np.repeat(np.arange(0, 2_000, 10), 2).astype(np.int64)
    keys = np.tile([0, 1], 200)
    outcome = migrate(StateTransfer, tumbling_plan(100), stream(ts, keys, keys + 1), start=10)
    assert outcome.cost is not None and outcome.cost.events_processed_twice == 2


def test_auto_prefers_a_stateless_hand_off_for_short_time_windows() -> None:
    plan = tumbling_plan(100)
    assert choose(plan, plan, state_bytes=10_000).protocol == UniMiCo.name
    assert choose(plan, plan, state_bytes=10_000, max_overlap_ms=10).protocol == MovingState.name


def test_the_catalog_has_one_in_process_driver_per_protocol_name() -> None:
    assert [protocol.name for protocol in PROTOCOL_CLASSES] == list(PROTOCOLS)
