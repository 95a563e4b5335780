"""A Migration's target placement and protocol before it runs, and its recorded cost."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from operator_specs import builtin_spec
from streamshift_engine.plan import builtin, parse_plan
from streamshift_operator.migration import plan_change
from streamshift_operator.migration.hand_over import replacing
from streamshift_operator.migration.state_size import moving_instances
from streamshift_operator.migration.status import cost, handover_patch
from streamshift_operator.migration.target import Refused, resolve
from streamshift_operator.models.migration import MigrationSpec, MigrationStatus, Phase, Protocol
from streamshift_operator.models.streamquery import PlanSource, StreamQuerySpec
from streamshift_operator.streamquery.decide import initial_status


def query(plan: str, sources: list[str], parallelism: int) -> StreamQuerySpec:
    return builtin_spec(plan, sources, parallelism)


Q8 = query("nexmark-q8", ["person", "auction"], 2)
Q5 = query("nexmark-q5", ["bid"], 1)


def mig(protocol: str, target: dict[str, Any]) -> MigrationSpec:
    return MigrationSpec.model_validate(
        {"queryRef": {"name": "q"}, "protocol": protocol, "target": target}
    )


def test_rescale_reassigns_partitions_over_the_new_parallelism() -> None:
    resolved = resolve(mig("state-transfer", {"parallelism": 3}), Q8, initial_status(Q8), 0)
    assert resolved.protocol is Protocol.STATE_TRANSFER
    assert [i.partitions for i in resolved.instances] == [[0, 1], [2], [3]]
    assert resolved.plan == {"builtin": "nexmark-q8"}


def test_auto_hands_a_windowed_query_over_by_unimico() -> None:
    resolved = resolve(mig("auto", {"moveInstances": [0]}), Q5, initial_status(Q5), 0)
    assert resolved.protocol is Protocol.UNIMICO
    assert [i.partitions for i in resolved.instances] == [[0, 1, 2, 3]]


def test_auto_weighs_the_state_of_the_instances_that_move() -> None:
    three = initial_status(Q8.model_copy(update={"parallelism": 3}))
    assert moving_instances(mig("auto", {"moveInstances": [2, 0]}), three) == [0, 2]
    assert moving_instances(mig("auto", {"parallelism": 2}), three) == [0, 1, 2]
    assert moving_instances(mig("auto", {"plan": {"builtin": "nexmark-q8"}}), three) == [0, 1, 2]


def test_unimico_needs_one_origin_per_target_and_auto_falls_back_saying_why() -> None:
    three = initial_status(Q8.model_copy(update={"parallelism": 3}))  # [0, 1], [2], [3]
    shrink = resolve(mig("auto", {"parallelism": 2}), Q8, three, 0)  # [0, 1], [2, 3]
    assert shrink.protocol is Protocol.MOVING_STATE
    assert "auto prefers unimico, but target instance(s) [1]" in shrink.reason
    with pytest.raises(Refused, match="scaling down merges origins"):
        resolve(mig("unimico", {"parallelism": 2}), Q8, three, 0)
    grow = resolve(mig("unimico", {"parallelism": 4}), Q8, initial_status(Q8), 0)
    assert grow.protocol is Protocol.UNIMICO


def test_moving_state_may_draw_a_target_from_several_origins() -> None:
    three = initial_status(Q8.model_copy(update={"parallelism": 3}))  # [0, 1], [2], [3]
    shrink = resolve(mig("moving-state", {"parallelism": 2}), Q8, three, 0)
    assert shrink.protocol is Protocol.MOVING_STATE and shrink.reason == "chosen in spec.protocol"
    assert [i.partitions for i in shrink.instances] == [[0, 1], [2, 3]]


def test_parallel_track_runs_each_target_from_one_origin() -> None:
    moved = resolve(mig("parallel-track", {"moveInstances": [0]}), Q5, initial_status(Q5), 0)
    assert moved.protocol is Protocol.PARALLEL_TRACK and moved.reason == "chosen in spec.protocol"
    assert [i.partitions for i in moved.instances] == [[0, 1, 2, 3]]
    three = initial_status(Q8.model_copy(update={"parallelism": 3}))
    with pytest.raises(Refused, match="parallel-track hands each target over from one origin"):
        resolve(mig("parallel-track", {"parallelism": 2}), Q8, three, 0)


@pytest.mark.parametrize(
    ("protocol", "target", "fix"),
    [
        ("state-transfer", {"plan": {"builtin": "nexmark-q2"}}, "cannot change it"),
        ("moving-state", {"plan": {"builtin": "nexmark-q7"}}, "has no match and cannot be"),
        ("savepoint-restart", {"parallelism": 5}, "lower it or give the topics more partitions"),
        ("state-transfer", {"moveInstances": [7]}, "no instance [7] runs"),
        ("auto", {"plan": {"builtin": "nexmark-q8"}}, "the target plan is invalid"),
        ("state-transfer", {"parallelism": 2}, "runs on one instance"),
    ],
)
def test_refusals_say_what_to_change(protocol: str, target: dict[str, Any], fix: str) -> None:
    with pytest.raises(Refused, match=fix.replace("[", r"\[").replace("]", r"\]")):
        resolve(mig(protocol, target), Q5, initial_status(Q5), 0)


def test_a_plan_change_runs_by_parallel_track_or_moving_state_keeping_the_partitions() -> None:
    placed = initial_status(Q5)
    windowed = resolve(mig("auto", {"plan": {"builtin": "nexmark-q7"}}), Q5, placed, 0)
    assert windowed.protocol is Protocol.PARALLEL_TRACK
    assert windowed.reason.startswith("no state moves")
    assert windowed.plan == {"builtin": "nexmark-q7"}
    assert [i.partitions for i in windowed.instances] == [[0, 1, 2, 3]]
    stateless = resolve(mig("auto", {"plan": {"builtin": "nexmark-q2"}}), Q5, placed, 0)
    assert stateless.protocol is Protocol.PARALLEL_TRACK
    chosen = resolve(mig("moving-state", {"plan": {"builtin": "nexmark-q2"}}), Q5, placed, 0)
    assert chosen.reason == "chosen in spec.protocol"


def test_parallel_track_refuses_plans_it_cannot_split() -> None:
    seed_q3 = query("q3", ["S", "T"], 1)  # a join feeding a ROWS sum: no old/new split
    to_q1 = mig("parallel-track", {"plan": {"builtin": "q1"}})
    with pytest.raises(Refused, match="parallel-track refuses q3: its ROWS window sum counts"):
        resolve(to_q1, seed_q3, initial_status(seed_q3), 0)


def test_auto_falls_back_to_moving_state_when_parallel_track_cannot_split_the_plans() -> None:
    seed_q3 = query("q3", ["S", "T"], 1)
    to_q1 = resolve(mig("auto", {"plan": {"builtin": "q1"}}), seed_q3, initial_status(seed_q3), 0)
    assert to_q1.protocol is Protocol.MOVING_STATE
    assert to_q1.reason.startswith("parallel-track refuses q3: its ROWS window sum counts")
    seed_q1 = query("q1", ["S", "T"], 1)
    with pytest.raises(Refused, match=r"no protocol can change q1 into q3 exactly"):
        resolve(mig("auto", {"plan": {"builtin": "q3"}}), seed_q1, initial_status(seed_q1), 0)


def test_a_moving_state_target_gets_the_origin_plan_as_a_plan_document() -> None:
    for name in ("nexmark-q5", "q3"):
        document = plan_change.document(PlanSource(builtin=name))
        assert parse_plan(document) == builtin(name)
    inline = {"name": "x", "inputs": [], "operators": [], "output": "x"}
    assert plan_change.document(PlanSource(inline=inline)) == inline


def test_a_query_not_yet_placed_is_refused_until_placed() -> None:
    with pytest.raises(Refused, match="not running yet"):
        resolve(
            mig("auto", {"parallelism": 3}),
            Q8,
            initial_status(Q8).model_copy(update={"instances": []}),
            0,
        )


def test_duration_from_the_phase_timeline_and_the_hand_over_patch() -> None:
    t0 = datetime(2026, 11, 22, tzinfo=UTC)
    history = [
        (Phase.QUEUED, 0.0),
        (Phase.PREPARING, 1.0),
        (Phase.PAUSING_AT_MARKER, 3.0),
        (Phase.TRANSFERRING_STATE, 3.5),
        (Phase.HANDING_OVER, 4.25),
        (Phase.FINALIZING, 4.5),
    ]
    status = MigrationStatus.model_validate(
        {
            "protocol": "state-transfer",
            "targetEpoch": 1,
            "targetInstances": [{"id": 0, "partitions": [0, 1]}, {"id": 1, "partitions": [2, 3]}],
            "cost": {"stateBytesMoved": 4096},
            "phaseHistory": [
                {"phase": p, "enteredAt": (t0 + timedelta(seconds=s)).isoformat()}
                for p, s in history
            ],
        }
    )
    recorded = cost(status, t0 + timedelta(seconds=6))
    assert recorded.duration_seconds == 3.5  # Preparing -> Finalizing: the protocol alone
    assert recorded.output_gap_seconds is None  # measured on the output topic (output_gap.py)
    assert recorded.state_bytes_moved == 4096
    patch = handover_patch(status)
    assert patch["epoch"] == 1 and patch["replicas"] == 2 and "plan" not in patch
    assert [i["partitions"] for i in patch["instances"]] == [[0, 1], [2, 3]]
    assert handover_patch(status, {"builtin": "q1"})["plan"] == {"builtin": "q1"}


def test_a_plan_is_replaced_whole_by_a_merge_patch() -> None:
    old = {"inline": {"name": "a", "inputs": [{"name": "S"}], "extra": {"x": 1}}}
    new = {"inline": {"name": "b", "inputs": []}}
    assert replacing(old, new) == {"inline": {"name": "b", "inputs": [], "extra": None}}
    assert replacing(old, {"builtin": "q1"}) == {"inline": None, "builtin": "q1"}
    assert replacing(None, {"builtin": "q1"}) == {"builtin": "q1"}
