"""Every protocol, on the real engine over random plans, inputs, start points and delays, gives
the result set and the dead letters of the run without migration (ids and values, per-key
order; each dead letter once, with its reason), or refuses the plan up front with a reason that
`auto` respects. With out-of-order and late input too (bounded out-of-orderness, records
beyond the bound dead-lettered), for every protocol."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.migration.capability import choose
from streamshift_engine.migration.cases import FAMILIES, Case, make_case
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.run import compare_outcomes
from streamshift_engine.migration.state_moving import MovingState
from streamshift_engine.migration.unimico import UniMiCo

DISORDER_REGRESSIONS = [
    (UniMiCo, "q1", 11),  # a join pair split by an out-of-order tuple; a late record dead-lettered
    (UniMiCo, "nexmark-q5", 26),  # a window emitted twice, a late bid dead-lettered twice
    (UniMiCo, "q1", 33),
    (UniMiCo, "q3", 24),
    (ParallelTrack, "q1", 11),  # the target dead-lettered again what its origin did
    (ParallelTrack, "random-join", 8),
]
"""Disordered cases the protocols got wrong before their roles were written once."""


def run_case(protocol: type[Protocol], case: Case) -> tuple[list[str], set[str]]:
    """The differences from the run without migration (results and dead letters), and which
    groups emitted results."""
    reference = case.without_migration()
    outcome = case.migrated_by(protocol)
    assert reference.emitted, f"{case.family}/{case.seed} produces no result to compare"
    return compare_outcomes(reference, outcome), {e.owner for e in outcome.emitted}


@pytest.mark.parametrize("protocol", PROTOCOL_CLASSES, ids=lambda p: p.name)
@settings(max_examples=8, deadline=None)
@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 10**6))
def test_with_migration_equals_without_or_refuses(
    protocol: type[Protocol], family: str, seed: int
) -> None:
    _exact_or_refused(protocol, make_case(family, seed, disordered=None))


@pytest.mark.parametrize("protocol", PROTOCOL_CLASSES, ids=lambda p: p.name)
@settings(max_examples=8, deadline=None)
@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 10**6))
def test_with_disordered_input_migration_equals_without_or_refuses(
    protocol: type[Protocol], family: str, seed: int
) -> None:
    _exact_or_refused(protocol, make_case(family, seed, disordered=True))


@pytest.mark.parametrize(("protocol", "family", "seed"), DISORDER_REGRESSIONS)
def test_disordered_cases_once_wrong_are_exact(
    protocol: type[Protocol], family: str, seed: int
) -> None:
    case = make_case(family, seed, disordered=None)
    assert case.disordered
    assert run_case(protocol, case)[0] == []


def test_disordered_cases_dead_letter_late_records() -> None:
    for family, seed in (("q1", 11), ("nexmark-q5", 26)):
        case = make_case(family, seed, disordered=True)
        letters = case.without_migration().dead_letters
        assert letters and set(reason for *_, reason in letters) == {"late"}


def _exact_or_refused(protocol: type[Protocol], case: Case) -> None:
    reason = protocol.refusal(case.plan, case.plan)
    if reason is not None:
        assert reason.startswith(f"{protocol.name} refuses {case.plan.name}: ")
        assert choose(case.plan, case.plan, state_bytes=1_000).protocol != protocol.name
        return
    assert run_case(protocol, case)[0] == []


@pytest.mark.parametrize(
    ("family", "refusing"),
    [
        ("q1", set()),
        ("q2", set()),
        ("q3", {"parallel-track"}),
        ("smq", {"unimico", "parallel-track"}),
        ("nexmark-q5", set()),
        ("nexmark-q7", set()),
        ("nexmark-q8", set()),
    ],
)
def test_named_plans_are_refused_only_where_no_split_is_exact(
    family: str, refusing: set[str]
) -> None:
    plan = make_case(family, 0).plan
    assert {p.name for p in PROTOCOL_CLASSES if p.refusal(plan, plan)} == refusing


def test_unimico_refuses_a_keyed_rows_window_with_the_reason() -> None:
    seeds = range(40)
    keyed = next(
        c.plan
        for c in (make_case("random-aggregate", s) for s in seeds)
        if c.plan.controlling_window is not None
        and c.plan.controlling_window.kind == "rows"
        and c.plan.keyed
    )
    reason = UniMiCo.refusal(keyed, keyed)
    assert reason is not None and "counts per key" in reason
    assert choose(keyed, keyed, state_bytes=1_000).protocol == MovingState.name


@pytest.mark.parametrize(("family", "seed"), [("q2", 1), ("q2", 3), ("q3", 2), ("q3", 4)])
def test_unimico_hands_off_a_rows_controlling_window_exactly(family: str, seed: int) -> None:
    case = make_case(family, seed, disordered=False)
    assert run_case(UniMiCo, case) == ([], {"origin", "target"})


@pytest.mark.parametrize(
    ("family", "seed"), [("q1", 1), ("q1", 3), ("nexmark-q8", 0), ("nexmark-q8", 4)]
)
def test_unimico_splits_joins_at_the_activation_exactly(family: str, seed: int) -> None:
    case = make_case(family, seed, disordered=False)
    assert run_case(UniMiCo, case) == ([], {"origin", "target"})
