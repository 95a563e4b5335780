"""The exactness cases' newer families draw what they say (sessions, unions, sliding window
joins, 3- and 4-way join trees, plan changes to an equivalent plan, rescales), produce results
to compare, and every protocol that accepts one is exact on a sample of it, dead letters too."""

from __future__ import annotations

import pytest
from streamshift_engine.migration.capability import same_computation
from streamshift_engine.migration.cases import (
    ALL_FAMILIES,
    CHANGE_FAMILIES,
    FAMILIES,
    RESCALE_PARTITIONS,
    SCALINGS,
    make_case,
)
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.run import compare, compare_outcomes, run_reference

SEEDS = range(12)
NEW_FAMILIES = ("session", "union", "sliding-join", "join-3", "join-4", *CHANGE_FAMILIES)


def test_the_families_cover_what_users_write_next() -> None:
    assert set(NEW_FAMILIES) <= set(ALL_FAMILIES) and not set(CHANGE_FAMILIES) & set(FAMILIES)
    types = {
        family: {op.type for seed in SEEDS for op in make_case(family, seed).plan.operators}
        for family in ("session", "union", "sliding-join")
    }
    assert "union" in types["union"]
    windows = [make_case("session", seed).plan.controlling_window for seed in SEEDS]
    assert {w.kind for w in windows if w is not None} == {"session"}
    slides = [make_case("sliding-join", seed).plan.nodes["join"].window for seed in SEEDS]
    assert all(w is not None and w.kind == "time" and w.slide < w.size for w in slides)
    for family, streams in (("join-3", 3), ("join-4", 4)):
        plans = [make_case(family, seed).plan for seed in SEEDS]
        assert all(len(plan.inputs) == streams for plan in plans)
        assert all(
            sum(op.type == "window_join" for op in p.operators) == streams - 1 for p in plans
        )
        assert len({tuple(op.id for op in p.operators) for p in plans}) > 1  # several orders


@pytest.mark.parametrize("seed", SEEDS)
def test_a_plan_change_is_to_an_equivalent_plan(seed: int) -> None:
    case = make_case("plan-change", seed, disordered=None)
    assert case.new_plan is not None and not same_computation(case.plan, case.new_plan)
    before = case.without_migration()
    after = run_reference(case.new_plan, case.inputs, case.partitions, case.instance, case.slice_ms)
    assert before.emitted and compare(before.emitted, after.emitted) == []
    assert before.dead_letters == after.dead_letters


def test_rescales_move_keyed_plans_over_four_partitions() -> None:
    cases = [make_case("rescale", seed) for seed in SEEDS]
    assert {case.scaling for case in cases} == set(SCALINGS)
    assert all(case.plan.keyed and case.partitions == RESCALE_PARTITIONS for case in cases)


@pytest.mark.parametrize("family", NEW_FAMILIES)
def test_every_accepting_protocol_is_exact_on_the_new_families(family: str) -> None:
    checked = 0
    for seed in range(3):
        case = make_case(family, seed, disordered=seed % 2 == 1)
        reference = case.without_migration()
        assert reference.emitted, f"{family}/{seed} produces no result to compare"
        for protocol in PROTOCOL_CLASSES:
            if case.refusal(protocol) is None:
                assert compare_outcomes(reference, case.migrated_by(protocol)) == [], (
                    f"{protocol.name} on {family}/{seed}"
                )
                checked += 1
    assert checked > 0
