"""The state-moving protocols' roles are written once: the in-process driver and the worker's
actions resolve them from one registry (`state_moving_roles.ROLES`), the marker is where the
origin has read (seed 003 (Bartnik et al., On-the-fly Reconfiguration) 5.1), and a worker target
refuses a state saved under another plan."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Collection, Mapping
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration import state_moving_roles
from streamshift_engine.migration.port import Position
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.role import Role
from streamshift_engine.migration.run import compare_outcomes, run_migration, run_reference
from streamshift_engine.migration.state_moving import MovingState, SavepointRestart, StateTransfer
from streamshift_engine.migration.state_moving_roles import (
    MarkerOrigin,
    MovingStateOrigin,
    StateTransferOrigin,
)
from streamshift_engine.plan import builtin
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.runtime import actions, recovery
from streamshift_engine.runtime.control import build_app
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.manifest import Manifest

from .harness import free_port
from .test_control_api import fake_worker

DRIVERS: list[type[Protocol]] = [StateTransfer, SavepointRestart, MovingState]
PARTITIONS = 2


def numbers(seed: int, count: int = 400) -> dict[str, Batch]:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 4_000, count))
    key = rng.integers(0, 6, count)
    columns = {"ts": ts, "k": key, "m": rng.integers(0, 10, count)}
    partition = (key % PARTITIONS).astype(np.int32)
    return {"S": Batch("S", ts, partition, np.zeros(count, np.int64), columns)}


def sum_plan() -> Plan:
    from streamshift_engine.plan.parse import parse_plan

    schema = {"ts": "int", "k": "int", "m": "int"}
    return parse_plan(
        {
            "name": "sum",
            "inputs": [
                {"name": "S", "topic": "s", "time_field": "ts", "key_field": "k", "schema": schema}
            ],
            "operators": [
                {
                    "id": "agg",
                    "type": "window_aggregate",
                    "input": "S",
                    "params": {
                        "window": {"kind": "time", "size": 500, "slide": 500},
                        "group_by": ["k"],
                        "aggregates": [{"name": "sum", "fn": "sum", "field": "m"}],
                    },
                }
            ],
            "output": {"from": "agg", "topic": "out"},
        }
    )


def instances(plan: Plan) -> Instance:
    return Instance(plan, range(PARTITIONS))


class StubPort:
    """Just enough of a `StatePort` for a role to be made and begin."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.query = "q"
        self.stopped: dict[Position, int] = {}
        self.handed_over: set[int] = set()

    def positions_read(self) -> dict[Position, int]:
        return {
            (spec.name, p): 7
            for spec in self.plan.inputs
            for p in range(PARTITIONS)
            if p not in self.handed_over
        }

    def hand_over(self, partitions: Collection[int]) -> None:
        self.handed_over |= set(partitions)

    def export_state(self, partitions: Collection[int]) -> list[bytes | memoryview]:
        return [b""]

    def state_covers(self, partitions: Collection[int]) -> dict[Position, int]:
        return {("S", p): 5 for p in partitions}

    def stop_at(self, offsets: Mapping[Position, int]) -> None:
        self.stopped.update(offsets)

    def restore_saved(
        self, partitions: Collection[int], migration: str, saved: Any
    ) -> tuple[dict[Position, int], dict[str, Any]]:
        return {}, {}

    def resume_from(self, offsets: Mapping[Position, int]) -> dict[Position, int]:
        return {}


def recording_roles(monkeypatch: pytest.MonkeyPatch) -> list[type[Role]]:
    """Every registered role class replaced by a subclass that records its instances' class."""
    made: list[type[Role]] = []
    patched = {}
    for protocol, (origin, target) in state_moving_roles.ROLES.items():

        def recorded(kind: type[Role]) -> type[Role]:
            def init(self: Role, *args: Any, **kwargs: Any) -> None:
                made.append(type(self))
                kind.__init__(self, *args, **kwargs)

            return type(f"Recording{kind.__name__}", (kind,), {"__init__": init})

        patched[protocol] = (cast(type[MarkerOrigin], recorded(origin)), recorded(target))
    monkeypatch.setattr(state_moving_roles, "ROLES", patched)
    return made


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
def test_both_drivers_make_the_roles_of_the_one_registry(
    driver: type[Protocol], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = recording_roles(monkeypatch)
    origin, target = state_moving_roles.ROLES[driver.name]
    plan, data = sum_plan(), numbers(1)
    reference = run_reference(plan, data, PARTITIONS, instances, 50)
    outcome = run_migration(driver, plan, plan, data, PARTITIONS, instances, 50, 20)
    assert not compare_outcomes(reference, outcome)
    assert made == [origin, target], "the in-process driver made other roles"
    made.clear()
    roles: dict[str, Role] = {}
    port = StubPort(plan)
    registered = actions.REGISTRY[driver.name]
    answer = registered["pause"](roles, port, "m", {"partitions": [0, 1]})
    assert type(roles["m"]) is origin and answer == {
        "paused": True,
        "positions": {"S:0": 7, "S:1": 7},
        "again": False,
    }
    if "begin" in registered:
        registered["begin"]({}, port, "m2", {"partitions": [0, 1]})
    else:  # moving-state's target is made by its asynchronous handler, before it pulls
        asyncio.run(begin_moving_state_unreachable())
    assert made == [origin, target], "the worker's actions made other roles"


async def begin_moving_state_unreachable() -> None:
    worker = fake_worker()
    worker.config = SimpleNamespace(plan=builtin("nexmark-q5"))  # type: ignore[assignment]
    app = build_app(worker, "s3cret", lambda: True)
    body = {
        "protocol": "moving-state",
        "partitions": [0],
        "origins": [{"address": f"127.0.0.1:{free_port()}", "partitions": [0]}],
    }
    async with TestClient(TestServer(app)) as client:
        headers = {"Authorization": "Bearer s3cret"}
        response = await client.post("/v1/migrations/s1/begin", json=body, headers=headers)
        assert response.status == 503


def test_the_marker_is_where_the_origin_has_read_unless_given() -> None:
    """Seed 003 5.1 and 6.4: the migrating instance never consumes a record it does not process, so
    the marker is its read position when the request arrives; a request may name one."""
    port = StubPort(sum_plan())
    here = StateTransferOrigin("m", frozenset([0, 1]), port)
    assert here.marker == {("S", 0): 7, ("S", 1): 7} and port.stopped == here.marker
    later = StateTransferOrigin("m", frozenset([1]), port, {("S", 1): 9})
    assert later.marker == {("S", 1): 9} and not later.reached(port)
    with pytest.raises(ValueError, match="at a marker first"):
        later.save(port)


def manifest(migration: str | None, version: str) -> Manifest:
    return Manifest(
        query="q",
        plan_version=version,
        writer="w",
        seq=time.time_ns(),
        created=time.time(),
        partitions=(0, 1),
        covered=(("S", 0, 5), ("S", 1, 5)),
        object_key=f"{version}/{migration}",
        size=0,
        sha256="",
        migration=migration,
    )


def worker_with(manifests: list[Manifest], version: str) -> Worker:
    stand_in = SimpleNamespace(
        instance=Instance(sum_plan(), set()),
        config=SimpleNamespace(plan=sum_plan(), plan_version=version),
        store=SimpleNamespace(manifests=lambda: manifests),
    )
    return cast(Worker, stand_in)


def test_a_worker_target_refuses_a_state_its_origin_saved_under_another_plan() -> None:
    """The issue's defect: state-transfer and savepoint-restart accepted a join reorder and
    then crashed restoring it (`KeyError`) or, with no operator id in common, restored nothing
    and lost results. The operator refuses such a plan change (`capability`, checked in
    tests/migration/test_plan_change.py for the in-process driver); a worker target asked to
    begin anyway refuses the origin's state instead of running without it."""
    saved = [manifest("m", "old"), manifest(None, "new")]
    with pytest.raises(ValueError, match="cannot change the plan"):
        recovery.restore_saved(worker_with(saved, "new"), [0, 1], "m")
    worker = worker_with([manifest("m", "new")], "new")
    worker.store.load = lambda m: Instance(sum_plan(), [0, 1]).snapshot()  # type: ignore[attr-defined]
    covers, report = recovery.restore_saved(worker, [0, 1], "m")
    assert report == {"restored": ["new/m"]} and covers == {("S", 0): 0, ("S", 1): 0}


@pytest.mark.parametrize("driver", [StateTransfer, SavepointRestart], ids=lambda d: d.name)
def test_the_in_process_drivers_refuse_a_plan_change(driver: type[Protocol]) -> None:
    plan = sum_plan()
    renamed = dataclasses.replace(plan, name="other")
    assert driver.refusal(plan, renamed) is None
    changed = builtin("nexmark-q5")
    reason = driver.refusal(plan, changed)
    assert reason is not None and "use parallel-track, moving-state or auto" in reason


def test_an_origin_exports_each_target_its_share_then_is_done() -> None:
    """A rescale: each target pulls its share of the paused partitions; the second share is
    still at its marker after the first one was released."""
    port = StubPort(sum_plan())
    origin = MovingStateOrigin("m", frozenset([0, 1]), port)
    first = state_moving_roles.unpack(bytearray().join(origin.export(port, [0])))[0]
    assert first["partitions"] == [0] and first["covers"] == [["S", 0, 5]] and not origin.done
    assert origin.pause(port)["paused"] and origin.phase() != "released"
    second = state_moving_roles.unpack(bytearray().join(origin.export(port, [1])))[0]
    assert second["partitions"] == [1] and origin.done and port.handed_over == {0, 1}
    with pytest.raises(ValueError, match="released already"):
        origin.export(port, [1])
