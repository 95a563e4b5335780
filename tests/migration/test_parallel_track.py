"""Parallel track ends by its monitor (seed 001 (Zhu et al., Dynamic Plan Migration) 4.2.4): the old
plan stops once its states hold no old tuple, which takes `W` for one level of range joins and `2W`
for two (equation (4)), and `n` new tuples for a global `ROWS n` window (seed Q2)."""

from __future__ import annotations

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration import monitor
from streamshift_engine.migration.cases import make_case
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.run import compare, run_migration, run_reference
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance

from migration.plan_inputs import SCHEMA, instances

SLICE_MS = 50


def steady(names: str, every_ms: int, span_ms: int) -> dict[str, Batch]:
    """One key, one partition, a tuple every `every_ms` on each stream."""
    ts = np.arange(0, span_ms, every_ms, dtype=np.int64)
    n = len(ts)
    zeros = np.zeros(n, np.int64)
    return {
        name: Batch(name, ts, np.zeros(n, np.int32), zeros, {"ts": ts, "k": zeros, "m": ts % 7})
        for name in names
    }


def stage_ms(plan: Plan, data: dict[str, Batch], start: int) -> int:
    """The migration stage in event time, after checking the output is exact."""
    reference = run_reference(plan, data, 1, instances([0]), SLICE_MS)
    outcome = run_migration(ParallelTrack, plan, plan, data, 1, instances([0]), SLICE_MS, start)
    assert compare(reference.emitted, outcome.emitted) == []
    assert outcome.cost is not None
    return outcome.cost.event_time_ms


@pytest.mark.parametrize(
    ("tree", "names", "levels"), [(("S", "T"), "ST", 1), ((("S", "T"), "U"), "STU", 2)]
)
def test_the_monitor_ends_the_old_plan_after_w_or_2w(
    tree: JoinTree, names: str, levels: int
) -> None:
    window = 400
    plan = join_tree_plan("joins", tree, window, "k", SCHEMA)
    measured = stage_ms(plan, steady(names, 40, 3_000), start=16)
    assert levels * window <= measured <= levels * window + 2 * SLICE_MS


def test_the_monitor_sees_old_tuples_in_a_join_state() -> None:
    # At watermark 980 every tuple with max_ts < 980 - 400 is purged (a later tuple of either
    # input is at 980 or after): the states hold the tuples from 580 to 960, the one at 980
    # waits for the watermark.
    plan = join_tree_plan("joins", ("S", "T"), 400, "k", SCHEMA)
    instance = Instance(plan, [0])
    for name, batch in steady("ST", 20, 1_000).items():
        instance.feed(name, 0, batch)
    instance.poll()
    join = instance.pipeline.operators[0]
    assert [monitor.oldest(store) for store in join.stores.values()] == [580, 580]
    assert monitor.old_box_finished(instance, 580)
    assert not monitor.old_box_finished(instance, 581)
    assert not monitor.finished(join, 581)
    assert not monitor.old_box_finished(instance, 981)


def test_a_global_rows_window_is_handed_over_after_n_new_tuples() -> None:
    case = make_case("q2", 3)
    assert ParallelTrack.refusal(case.plan, case.plan) is None
    reference = case.without_migration()
    for start in (0, 5, 12):
        outcome = case.migrated_by(ParallelTrack, start)
        assert compare(reference.emitted, outcome.emitted) == []
        assert {e.owner for e in outcome.emitted} == {"origin", "target"}


def test_q3_is_refused_because_its_rows_window_counts_join_results() -> None:
    plan = make_case("q3", 0).plan
    reason = ParallelTrack.refusal(plan, plan)
    assert reason == (
        "parallel-track refuses q3: its ROWS window sum counts the results of join join: results "
        "combining an old tuple keep arriving among new ones during the migration, so the new "
        "plan's windows of n tuples are not the old plan's: use moving-state, state-transfer or "
        "auto"
    )


def test_a_window_over_join_results_is_refused_to_keep_window_order() -> None:
    plan = make_case("random-join-aggregate", 63500).plan
    reason = ParallelTrack.refusal(plan, plan)
    assert reason is not None
    assert reason.startswith(
        "parallel-track refuses random-join-aggregate: its window agg aggregates the results of "
        "join join: one combining an old tuple can fall in a later window than an all-new one"
    )
