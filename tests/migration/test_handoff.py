"""The event-time horizons of the output split (seed 000 (Pham et al., UniMiCo) 3.1.1, "Multiple
window operators"): a window opened below the controlling one widens them, an operator aligned to
its input's windows (Nexmark q5's top-k over the sliding counts) does not."""

from __future__ import annotations

from typing import Any

from streamshift_engine.migration import handoff
from streamshift_engine.migration.cases import make_case
from streamshift_engine.migration.run import compare
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.nexmark_queries import WINDOW_MS, nexmark_plan
from streamshift_engine.plan.parse import parse_plan


def _input(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic": name.lower(),
        "time_field": "ts",
        "key_field": "l",
        "schema": dict(SEED_SCHEMA),
    }


def _counts_then_topk(topk_window: dict[str, Any] | None) -> Plan:
    window = {"kind": "time", "size": 10_000, "slide": 2_000}
    top: dict[str, Any] = {"by": "n", "k": 1}
    if topk_window is not None:
        top["window"] = topk_window
    operators = [
        {
            "id": "counts",
            "type": "window_aggregate",
            "input": "S",
            "params": {
                "window": window,
                "group_by": ["l"],
                "aggregates": [{"name": "n", "fn": "count"}],
            },
        },
        {"id": "top", "type": "topk", "input": "counts", "params": top},
    ]
    document = {"name": "counts-topk", "inputs": [_input("S")], "operators": operators}
    return parse_plan({**document, "output": "top"})


def test_q5_topk_aligned_to_the_counts_adds_no_horizon() -> None:
    plan = nexmark_plan("nexmark-q5", WINDOW_MS)
    assert [w.size for w in handoff.windows(plan)] == [WINDOW_MS, WINDOW_MS]
    assert handoff.upstream_horizon(plan) == 0
    assert handoff.horizon(plan) == WINDOW_MS + 1


def test_topk_with_its_own_window_on_the_same_grid_keeps_the_counts_horizon() -> None:
    aligned = _counts_then_topk(None)
    own = _counts_then_topk({"kind": "time", "size": 10_000, "slide": 2_000})
    assert (handoff.upstream_horizon(aligned), handoff.horizon(aligned)) == (0, 10_001)
    assert (handoff.upstream_horizon(own), handoff.horizon(own)) == (10_000, 20_001)


def test_join_feeding_a_rows_aggregate_keeps_the_join_range() -> None:
    join = {
        "id": "join",
        "type": "window_join",
        "inputs": ["S", "T"],
        "params": {"window": {"kind": "range", "size": 3_000}, "on": [["l", "l"]]},
    }
    agg = {
        "id": "agg",
        "type": "window_aggregate",
        "input": "join",
        "params": {
            "window": {"kind": "rows", "size": 3, "slide": 2},
            "aggregates": [{"name": "total", "fn": "sum", "field": "S.m"}],
        },
    }
    plan = parse_plan(
        {
            "name": "join-rows",
            "inputs": [_input("S"), _input("T")],
            "operators": [join, agg],
            "output": "agg",
        }
    )
    assert handoff.upstream_horizon(plan) == 3_000


def test_unimico_moves_q5_exactly_with_the_narrower_horizon() -> None:
    for seed in range(6):
        case = make_case("nexmark-q5", seed)
        reference = case.without_migration()
        outcome = case.migrated_by(UniMiCo)
        assert reference.emitted
        assert compare(reference.emitted, outcome.emitted) == []
