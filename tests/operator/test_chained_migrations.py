"""A migration whose origin was the previous migration's target: the coordinator reads the
origin's role in THIS migration, never the previous one's. (It read `handoff.done` of whatever
hand-off the worker had last: the previous migration's, done, so the next migration released
its targets and deleted the origin right after the hand-off, and two windows of q8 were lost.)"""

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from streamshift_operator.clients.control_api import WorkerReport
from streamshift_operator.migration.protocols import parallel_track, unimico
from streamshift_operator.migration.run import Run
from streamshift_operator.models.migration import AssignedInstance, MigrationStatus, Protocol
from streamshift_operator.models.streamquery import InstanceStatus, StreamQueryStatus


class Workers:
    """Role calls answered from a table, and recorded."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def call(self, pod_ip: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        action = path.rsplit("/", 1)[1]
        self.calls.append((pod_ip, action, body))
        return self.answers.get(action, {})


def report(roles: dict[str, dict[str, Any]]) -> WorkerReport:
    return WorkerReport("running", (0, 1), {}, 5_000, 1.0, 0, 10, {}, None, roles)


def run(protocol: Protocol, origin_roles: dict[str, dict[str, Any]], workers: Workers) -> Run:
    placed = StreamQueryStatus(
        epoch=1, instances=[InstanceStatus(id=0, partitions=[0, 1], pod="q-e1-0")]
    )
    status = MigrationStatus(
        protocol=protocol,
        origin_epoch=1,
        target_epoch=2,
        target_instances=[AssignedInstance(id=0, partitions=[0, 1])],
    )
    pods = {name: SimpleNamespace(ip=ip) for name, ip in (("q-e1-0", "o"), ("q-e2-0", "t"))}
    target_roles = {"m2": {"role": "target", "ts_start": 4_000, "done": False}}
    view = SimpleNamespace(
        pods=pods,
        reports={"q-e1-0": report(origin_roles), "q-e2-0": report(target_roles)},
        running=lambda _: True,
    )
    query = SimpleNamespace(name="q", namespace="ns")
    return Run(
        ctx=cast(Any, None),
        control=cast(Any, workers),
        name="m2",
        query=cast(Any, query),
        spec=cast(Any, None),
        placed=placed,
        status=status,
        view=cast(Any, view),
        plan={},
    )


PREVIOUS = {"m1": {"role": "target", "done": True, "handed_over_at": {}}}


def test_unimico_waits_for_the_origin_of_this_migration() -> None:
    handoff = {"ready": True, "activation": 6_000, "role": "origin", "partitions": [0, 1]}
    workers = Workers({"handoff": handoff})
    assert not asyncio.run(unimico.drain_origin(run(Protocol.UNIMICO, PREVIOUS, workers)))
    assert [action for _, action, _ in workers.calls] == ["handoff", "activate"]
    assert workers.calls[1][2] == {"protocol": "unimico", "activation": 6_000}
    done = {**PREVIOUS, "m2": {"role": "origin", "done": True, "handed_over_at": {"bid:0": 7}}}
    workers.calls.clear()
    assert asyncio.run(unimico.drain_origin(run(Protocol.UNIMICO, done, workers)))
    released = [body for _, action, body in workers.calls if action == "release-output"]
    assert released == [{"protocol": "unimico", "handed_over_at": {"bid:0": 7}}]


def test_parallel_track_waits_for_the_origin_of_this_migration() -> None:
    split = {"split": 5_000, "offsets": {"bid:0": 0, "bid:1": 0}, "rows_counted": False}
    workers = Workers({"split": split})
    assert not asyncio.run(
        parallel_track.drain_origin(run(Protocol.PARALLEL_TRACK, PREVIOUS, workers))
    )
    assert "release-output" not in [action for _, action, _ in workers.calls]
