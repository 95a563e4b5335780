"""The control actions each protocol registers with the worker, by protocol and action name.

The control API (`control`) and the worker loop name no protocol: a request
`POST /v1/migrations/{migration}/{action}` names its protocol in the body (or the migration
already has a role on this worker), and the action is looked up here. Actions run on the worker
thread with the worker's roles by migration and its port (`RoleAction`): every protocol's
actions are its roles' (`migration.*_roles`), the same roles the in-process checks run.
Moving-state's target pulls the origin's state over HTTP, so those actions are asynchronous and
served by its own handler (`moving_state_api`, calling the same role methods), registered here
with the names it takes (`HANDLERS`). A protocol may also register a follow-up (`FOLLOW_UPS`)
told of each of its actions once answered: parallel-track's target follows its origin from
`begin` on (`track_follow`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from aiohttp import web

from streamshift_engine.migration import parallel_track_roles, state_moving_roles, unimico_roles
from streamshift_engine.migration.role import Role, RoleAction
from streamshift_engine.runtime import moving_state_api, track_follow
from streamshift_engine.runtime.loop import Worker

OnWorker = Callable[[Callable[[Worker], Any]], Awaitable[Any]]


class AsyncRoles(Protocol):
    """A protocol's handler of the actions that cannot run on the worker thread alone (they
    wait on other workers): made once per control API with the worker, the token and a way to
    run a call on the worker thread."""

    async def handle(
        self, request: web.Request, migration: str, action: str, body: dict[str, Any]
    ) -> web.StreamResponse: ...


class FollowUp(Protocol):
    """Work a protocol starts after one of its actions was answered (made once per control API
    with the token and a way to run a call on the worker thread), ended when the API closes."""

    def after(self, migration: str, action: str, body: dict[str, Any]) -> None: ...

    async def close(self) -> None: ...


REGISTRY: dict[str, dict[str, RoleAction]] = {}
ASYNC: dict[str, frozenset[str]] = {}
HANDLERS: dict[str, Callable[[Worker, str, OnWorker], AsyncRoles]] = {}
FOLLOW_UPS: dict[str, Callable[[str, OnWorker], FollowUp]] = {}


def register(
    protocol: str,
    actions: Mapping[str, RoleAction],
    asynchronous: frozenset[str] = frozenset(),
    handler: Callable[[Worker, str, OnWorker], AsyncRoles] | None = None,
    follow_up: Callable[[str, OnWorker], FollowUp] | None = None,
) -> None:
    """Make `actions` `protocol`'s, the names in `asynchronous` its `handler`'s, and tell its
    `follow_up` of each action answered."""
    REGISTRY[protocol] = dict(actions)
    ASYNC[protocol] = asynchronous
    if handler is not None:
        HANDLERS[protocol] = handler
    if follow_up is not None:
        FOLLOW_UPS[protocol] = follow_up


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


register("unimico", unimico_roles.ACTIONS)
register("parallel-track", parallel_track_roles.ACTIONS, follow_up=track_follow.Follower)
for _protocol, _actions in state_moving_roles.ACTIONS.items():
    register(
        _protocol,
        _actions,
        state_moving_roles.ASYNC.get(_protocol, frozenset()),
        moving_state_api.HANDLERS.get(_protocol),
    )
