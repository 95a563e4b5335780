"""The control actions each protocol registers with the worker, by protocol and action name.

The control API (`control`) and the worker loop name no protocol: a request
`POST /v1/migrations/{migration}/{action}` names its protocol in the body (or the migration
already has a role on this worker), and the action is looked up here. Actions run on the worker
thread with the worker's roles by migration and its port (`RoleAction`); the marker actions of
the state-moving protocols (pause at a marker, snapshot, release, adopt, stop: seeds 003 and
004) take the worker through its port. Moving-state's target pulls the origin's state over HTTP,
so its actions are asynchronous and served by its own handler (`moving_state_api`), which
registers the names it takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamshift_engine.migration import parallel_track_roles, unimico_roles
from streamshift_engine.migration.port import Position
from streamshift_engine.migration.role import Role, RoleAction, parse_positions, partitions_of
from streamshift_engine.runtime import roles
from streamshift_engine.runtime.moving_state_api import ACTIONS as MOVING_STATE_ASYNC
from streamshift_engine.runtime.port import WorkerPort

REGISTRY: dict[str, dict[str, RoleAction]] = {}
ASYNC: dict[str, frozenset[str]] = {}


def register(
    protocol: str, actions: Mapping[str, RoleAction], asynchronous: frozenset[str] = frozenset()
) -> None:
    """Make `actions` (and the names its asynchronous handler serves) `protocol`'s."""
    REGISTRY[protocol] = dict(actions)
    ASYNC[protocol] = asynchronous


def protocol_of(
    body: Mapping[str, Any], known: Mapping[str, Role], migration: str, action: str
) -> str:
    """The protocol a request is for: named in it; else the migration's role here; else the one
    protocol that has the action; else the marker protocol (state-transfer) whose actions every
    state-moving protocol shares."""
    if "protocol" in body:
        name = str(body["protocol"])
        if name not in REGISTRY:
            raise KeyError(f"unknown protocol {name!r}: one of {', '.join(sorted(REGISTRY))}")
        return name
    role = known.get(migration)
    if role is not None:
        return role.protocol
    having = [p for p in REGISTRY if action in REGISTRY[p] or action in ASYNC[p]]
    return having[0] if len(having) == 1 else "state-transfer"


def lookup(protocol: str, action: str) -> RoleAction | None:
    return REGISTRY.get(protocol, {}).get(action)


def _port(port: object) -> WorkerPort:
    assert isinstance(port, WorkerPort)
    return port


def _marker(raw: Mapping[str, int] | None) -> dict[Position, int] | None:
    return None if raw is None else parse_positions(dict(raw))


def _optional(body: Mapping[str, Any]) -> list[int] | None:
    parts = body.get("partitions")
    return None if parts is None else [int(p) for p in parts]


MARKER: dict[str, RoleAction] = {
    "pause": lambda _, port, m, body: roles.pause(
        _port(port).worker, partitions_of(dict(body)), _marker(body.get("marker"))
    ),
    "snapshot": lambda _, port, m, body: roles.snapshot(_port(port).worker, _optional(body), m),
    "release": lambda _, port, m, body: roles.release(
        _port(port).worker, partitions_of(dict(body))
    ),
    "begin": lambda _, port, m, body: roles.begin_target(
        _port(port).worker, partitions_of(dict(body))
    ),
    "stop": lambda _, port, m, body: roles.stop(_port(port).worker),
}

register("unimico", unimico_roles.ACTIONS)
register("parallel-track", parallel_track_roles.ACTIONS)
register("state-transfer", MARKER)
register("savepoint-restart", MARKER)
register("moving-state", {k: v for k, v in MARKER.items() if k != "begin"}, MOVING_STATE_ASYNC)
