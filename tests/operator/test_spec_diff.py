"""Spec-change classification: ordered, the largest change wins, fields named."""

from operator_specs import q5_spec
from streamshift_operator.models.streamquery import RetentionPolicy
from streamshift_operator.streamquery.spec_diff import DiffType, classify


def test_the_order_is_ignore_rescale_plan_restart() -> None:
    assert DiffType.IGNORE < DiffType.RESCALE < DiffType.PLAN_CHANGE < DiffType.RESTART


def test_no_change_is_ignore_with_no_fields() -> None:
    diff = classify(q5_spec(), q5_spec())
    assert (diff.type, diff.fields) == (DiffType.IGNORE, ())


def test_retention_on_delete_is_ignore_but_keep_last_reaches_the_pods() -> None:
    new = q5_spec()
    new.snapshot.retention.on_delete = RetentionPolicy.DELETE
    diff = classify(q5_spec(), new)
    assert (diff.type, diff.fields) == (DiffType.IGNORE, ("snapshot.retention.onDelete",))
    new.snapshot.retention.keep_last = 7
    assert classify(q5_spec(), new).type is DiffType.RESTART


def test_parallelism_is_rescale() -> None:
    diff = classify(q5_spec(), q5_spec(parallelism=3))
    assert (diff.type, diff.fields) == (DiffType.RESCALE, ("parallelism",))


def test_plan_change_names_the_plan_not_its_inner_fields() -> None:
    old = q5_spec(plan={"inline": {"operators": [{"kind": "filter", "field": "price"}]}})
    new = q5_spec(plan={"inline": {"operators": [{"kind": "filter", "field": "bidder"}]}})
    assert classify(old, new).fields == ("plan",)
    assert classify(old, q5_spec()).type is DiffType.PLAN_CHANGE


def test_plan_and_parallelism_together_is_a_plan_change() -> None:
    diff = classify(q5_spec(), q5_spec(parallelism=4, plan={"builtin": "nexmark-q8"}))
    assert (diff.type, diff.fields) == (DiffType.PLAN_CHANGE, ("parallelism", "plan"))


def test_pod_settings_are_a_restart_and_win_over_everything() -> None:
    new = q5_spec(parallelism=4, plan={"builtin": "nexmark-q8"}, image="worker:2")
    assert classify(q5_spec(), new).type is DiffType.RESTART
    resources = q5_spec(resources={"requests": {"cpu": "1"}})
    assert classify(q5_spec(), resources).type is DiffType.RESTART
    topics = q5_spec(sinks=[{"name": "out", "topic": "other"}])
    assert classify(q5_spec(), topics).fields == ("sinks",)
    assert classify(q5_spec(), topics).type is DiffType.RESTART
