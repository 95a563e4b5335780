"""A StreamQuery's plan checked with the engine's parser: messages name what to fix."""

from typing import Any

from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.streamquery.plan_check import check_plan

INLINE: dict[str, Any] = {
    "name": "big-bids",
    "inputs": [
        {
            "name": "bids",
            "topic": "bids",
            "time_field": "ts",
            "key_field": "auction",
            "schema": {"ts": "int", "auction": "int", "price": "int"},
        }
    ],
    "operators": [
        {"id": "big", "type": "filter", "input": "bids", "params": {"predicate": "price > 100"}}
    ],
    "output": "big",
}


def spec(plan: dict[str, Any], sources: list[str], parallelism: int = 2) -> StreamQuerySpec:
    return StreamQuerySpec.model_validate(
        {
            "plan": plan,
            "kafka": {"bootstrapServers": "127.0.0.1:9092"},
            "sources": [{"name": name, "topic": name.lower(), "partitions": 4} for name in sources],
            "sinks": [{"name": "out", "topic": "out"}],
            "parallelism": parallelism,
            "snapshot": {
                "endpoint": "http://127.0.0.1:9000",
                "bucket": "snapshots",
                "credentials": {
                    "accessKey": {"name": "s3", "key": "access"},
                    "secretKey": {"name": "s3", "key": "secret"},
                },
            },
            "controlToken": {"name": "control", "key": "token"},
        }
    )


def test_a_builtin_join_is_valid_with_its_plan() -> None:
    report = check_plan(spec({"builtin": "q1"}, ["S", "T"]))
    assert report.problems == ()
    assert report.plan is not None and report.plan.name == "q1"
    window = report.plan.controlling_window
    assert window is not None and (window.kind, window.size) == ("range", 10_000)
    assert report.document == {"builtin": "q1"}


def test_an_unknown_builtin_lists_the_known_ones() -> None:
    report = check_plan(spec({"builtin": "q99"}, ["S"]))
    assert report.plan is None
    assert report.message.startswith("spec.plan.builtin: unknown built-in plan 'q99'; known: q1")


def test_an_invalid_inline_plan_names_the_node_and_field() -> None:
    broken = {**INLINE, "output": "nowhere"}
    report = check_plan(spec({"inline": broken}, ["bids"]))
    assert report.message == (
        "spec.plan.inline: operator or input 'plan', field 'output': "
        "must name an input or operator, got 'nowhere'"
    )


def test_a_valid_inline_plan_without_window_and_its_document() -> None:
    report = check_plan(spec({"inline": INLINE}, ["bids"]))
    assert report.problems == ()
    assert report.plan is not None and report.plan.controlling_window is None
    assert report.document == {"inline": INLINE}


def test_sources_must_match_the_plan_inputs() -> None:
    report = check_plan(spec({"builtin": "q1"}, ["S", "extra"]))
    assert report.problems == (
        "spec.sources: the plan reads input 'T' but no source is named 'T': "
        "add a source with name T, its topic and partitions",
        "spec.sources: source 'extra' is not an input of plan 'q1' (inputs: S, T): "
        "remove it or rename it",
    )


def test_a_global_plan_must_run_at_parallelism_one() -> None:
    report = check_plan(spec({"builtin": "q2"}, ["S"], parallelism=2))
    assert report.problems == (
        "spec.parallelism: plan 'q2' keeps global (not keyed) state and runs on one instance: "
        "set spec.parallelism to 1 (it is 2)",
    )
    assert report.plan is not None and not report.plan.keyed
    assert check_plan(spec({"builtin": "q2"}, ["S"], parallelism=1)).problems == ()


def test_the_stateful_map_has_unbounded_state() -> None:
    report = check_plan(spec({"builtin": "smq"}, ["numbers"]))
    assert report.plan is not None and report.plan.unbounded_state
