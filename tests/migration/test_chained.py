"""Chained migrations: every protocol followed by every protocol on the same query (the target
of one is the origin of the next), exact against the run without migration."""

from __future__ import annotations

import itertools

import pytest
from streamshift_engine.migration.cases import make_case
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.run import compare

CASES = [("q1", 3), ("q2", 1), ("q3", 2), ("random-aggregate", 5)]


def accepted(family: str, seed: int) -> list[tuple[str, int, type[Protocol], type[Protocol]]]:
    """Every ordered pair of protocols that both accept the case's plan."""
    plan = make_case(family, seed).plan
    taking = [p for p in PROTOCOL_CLASSES if p.refusal(plan, plan) is None]
    return [(family, seed, a, b) for a, b in itertools.product(taking, taking)]


CHAINS = [chain for family, seed in CASES for chain in accepted(family, seed)]


@pytest.mark.parametrize(
    ("family", "seed", "first", "second"),
    CHAINS,
    ids=[f"{f}-{s}-{a.name}-{b.name}" for f, s, a, b in CHAINS],
)
def test_a_protocol_after_a_protocol_is_exact(
    family: str, seed: int, first: type[Protocol], second: type[Protocol]
) -> None:
    case = make_case(family, seed)
    reference = case.without_migration()
    outcome, protocols = case.chained([first, second])
    assert compare(reference.emitted, outcome.emitted) == []
    assert [p.phase for p in protocols] == ["done", "done"]
    assert "g2" in {e.owner for e in outcome.emitted}
