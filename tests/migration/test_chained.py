"""Chained migrations: every protocol followed by every protocol on the same query (the target
of one is the origin of the next), exact against the run without migration."""

from __future__ import annotations

import itertools

import pytest
from streamshift_engine.migration.cases import make_case
from streamshift_engine.migration.run import compare

from migration.test_exactness_property import PROTOCOLS

PAIRS = list(itertools.product(PROTOCOLS, PROTOCOLS))


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("family", "seed"), [("q1", 3), ("q2", 1), ("q3", 2), ("random-aggregate", 5)]
)
def test_a_protocol_after_a_protocol_is_exact(
    family: str, seed: int, first: type, second: type
) -> None:
    case = make_case(family, seed)
    if first.refusal(case.plan, case.plan) or second.refusal(case.plan, case.plan):
        pytest.skip("refused up front")
    reference = case.without_migration()
    outcome, protocols = case.chained([first, second])
    assert compare(reference.emitted, outcome.emitted) == []
    assert [p.phase for p in protocols] == ["done", "done"]
    assert "g2" in {e.owner for e in outcome.emitted}
