"""Spec-change classification: ordered, the largest change wins, fields named."""

from typing import Any

from streamshift_operator.models.streamquery import RetentionPolicy, StreamQuerySpec
from streamshift_operator.specdiff import DiffType, classify


def spec(**changes: Any) -> StreamQuerySpec:
    base: dict[str, Any] = {
        "plan": {"builtin": "nexmark-q5"},
        "kafka": {"bootstrapServers": "127.0.0.1:9092"},
        "sources": [{"name": "bids", "topic": "bids", "partitions": 4}],
        "sinks": [{"name": "out", "topic": "q5-out"}],
        "parallelism": 2,
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
    base.update(changes)
    return StreamQuerySpec.model_validate(base)


def test_the_order_is_ignore_rescale_plan_restart() -> None:
    assert DiffType.IGNORE < DiffType.RESCALE < DiffType.PLAN_CHANGE < DiffType.RESTART


def test_no_change_is_ignore_with_no_fields() -> None:
    diff = classify(spec(), spec())
    assert (diff.type, diff.fields) == (DiffType.IGNORE, ())


def test_retention_on_delete_is_ignore_but_keep_last_reaches_the_pods() -> None:
    new = spec()
    new.snapshot.retention.on_delete = RetentionPolicy.DELETE
    diff = classify(spec(), new)
    assert (diff.type, diff.fields) == (DiffType.IGNORE, ("snapshot.retention.onDelete",))
    new.snapshot.retention.keep_last = 7
    assert classify(spec(), new).type is DiffType.RESTART


def test_parallelism_is_rescale() -> None:
    diff = classify(spec(), spec(parallelism=3))
    assert (diff.type, diff.fields) == (DiffType.RESCALE, ("parallelism",))


def test_plan_change_names_the_plan_not_its_inner_fields() -> None:
    old = spec(plan={"inline": {"operators": [{"kind": "filter", "field": "price"}]}})
    new = spec(plan={"inline": {"operators": [{"kind": "filter", "field": "bidder"}]}})
    assert classify(old, new).fields == ("plan",)
    assert classify(old, spec()).type is DiffType.PLAN_CHANGE


def test_plan_and_parallelism_together_is_a_plan_change() -> None:
    diff = classify(spec(), spec(parallelism=4, plan={"builtin": "nexmark-q8"}))
    assert (diff.type, diff.fields) == (DiffType.PLAN_CHANGE, ("parallelism", "plan"))


def test_pod_settings_are_a_restart_and_win_over_everything() -> None:
    new = spec(parallelism=4, plan={"builtin": "nexmark-q8"}, image="worker:2")
    assert classify(spec(), new).type is DiffType.RESTART
    resources = spec(resources={"requests": {"cpu": "1"}})
    assert classify(spec(), resources).type is DiffType.RESTART
    topics = spec(sinks=[{"name": "out", "topic": "other"}])
    assert classify(spec(), topics).fields == ("sinks",)
    assert classify(spec(), topics).type is DiffType.RESTART
