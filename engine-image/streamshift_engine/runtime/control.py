"""The control API (aiohttp): probes, status, metrics and the protocols' role endpoints.

Schema: docs/control-api.openapi.yaml. `/healthz`, `/readyz` and `/metrics` are open (probes and
Prometheus); everything under `/v1` needs `Authorization: Bearer <STREAMSHIFT_CONTROL_TOKEN>`
(401 otherwise). Role endpoints are keyed by migration id and idempotent: a repeated call returns
the first call's answer (`pause` reports progress until every marker is reached;
`release-until` releases what is due by each call's watermark, idempotent by itself).

`/healthz` fails, with the reason, when the worker thread ended or its loop stopped advancing
(`liveness`); `/readyz` fails then too. `/v1/status` is answered by the worker thread; when it
does not answer within `STATUS_WAIT_S` the answer is a 503 with the liveness problem, if any,
never a request left hanging.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import asdict
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streamshift_engine.runtime import actions, roles
from streamshift_engine.runtime.commit_watch import CommitWatch
from streamshift_engine.runtime.loop import Command, Worker
from streamshift_engine.runtime.manifest import Manifest
from streamshift_engine.runtime.snapshots import SnapshotFailed

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
WORKER = web.AppKey("worker", Worker)
DONE: web.AppKey[dict[tuple[str, str], Any]] = web.AppKey("done")
PROBLEM: web.AppKey[Callable[[], str | None]] = web.AppKey("problem")
ASYNC_ROLES: web.AppKey[dict[str, actions.AsyncRoles]] = web.AppKey("async_roles")
FOLLOW_UPS: web.AppKey[dict[str, actions.FollowUp]] = web.AppKey("follow_ups")
COMMITS = web.AppKey("commits", CommitWatch)
Number = TypeVar("Number", int, float)
STATUS_WAIT_S = 10.0  # a status the worker thread has not answered by then is a 503


def build_app(
    worker: Worker,
    token: str,
    alive: Callable[[], bool],
    progress: Callable[[], str | None] = lambda: None,
) -> web.Application:
    """The control API of `worker`: alive while `alive()` (its thread runs) and `progress()`
    names no problem (`liveness`)."""
    app = web.Application(middlewares=[_auth(token), _errors])
    app[WORKER] = worker
    app[DONE] = {}
    app[PROBLEM] = lambda: progress() if alive() else "the worker thread ended"
    app[ASYNC_ROLES] = {
        protocol: make(worker, token, lambda action: call(worker, action))
        for protocol, make in actions.HANDLERS.items()
    }
    app[FOLLOW_UPS] = {
        protocol: make(token, lambda action: call(worker, action))
        for protocol, make in actions.FOLLOW_UPS.items()
    }
    app[COMMITS] = CommitWatch(worker)
    app.on_startup.append(app[COMMITS].attach)
    app.on_cleanup.append(_close_follow_ups)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/v1/status", _status)
    app.router.add_post("/v1/snapshot", _snapshot)
    app.router.add_post("/v1/migrations/{migration}/{action}", _migration)
    return app


async def _close_follow_ups(app: web.Application) -> None:
    for follow_up in app[FOLLOW_UPS].values():
        await follow_up.close()


def _auth(token: str) -> Any:
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/v1/"):
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return web.json_response({"error": "unauthorized"}, status=401)
        return await handler(request)

    return middleware


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except (ValueError, KeyError, TypeError) as error:
        return web.json_response({"error": str(error)}, status=409)
    except (SnapshotFailed, ConnectionError) as error:  # a store or another worker unreachable
        return web.json_response({"error": str(error)}, status=503)


async def call(worker: Worker, action: Callable[[Worker], Any], current: bool = True) -> Any:
    """Run `action` on the worker thread (`current`: see `Command`); await a future it returns
    (a snapshot upload)."""
    command = Command(action, current=current)
    worker.submit(command)
    result = await asyncio.wrap_future(command.future)
    if isinstance(result, Future):
        result = await asyncio.wrap_future(result)
    if isinstance(result, Manifest):
        return asdict(result)
    return result


async def _healthz(request: web.Request) -> web.Response:
    problem = request.app[PROBLEM]()
    if problem is None:
        return web.json_response({"ok": True})
    return web.json_response({"ok": False, "problem": problem}, status=503)


async def _readyz(request: web.Request) -> web.Response:
    worker = request.app[WORKER]
    ready = worker.ready and request.app[PROBLEM]() is None
    return web.json_response({"ready": ready, "phase": worker.phase}, status=200 if ready else 503)


async def _metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[WORKER].metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _status(request: web.Request) -> web.Response:
    """The worker's status; with `committed_after=W` (and `wait`, seconds, default 1), once its
    committed watermark is past W, at its next commit, or after `wait` (`CommitWatch`)."""
    if "committed_after" in request.query:
        watermark = _number(request, "committed_after", int)
        await request.app[COMMITS].after(watermark, _number(request, "wait", float, "1"))
    # read from the instance as last polled: an operator's reads cost a light load no poll
    answer = asyncio.ensure_future(call(request.app[WORKER], roles.status, current=False))
    try:  # shielded: the status command stays queued, and the worker answers it unawaited
        return web.json_response(await asyncio.wait_for(asyncio.shield(answer), STATUS_WAIT_S))
    except TimeoutError:
        problem = request.app[PROBLEM]() or f"the worker thread did not answer in {STATUS_WAIT_S} s"
        return web.json_response({"error": problem}, status=503)


def _number(
    request: web.Request, name: str, parse: Callable[[str], Number], default: str = ""
) -> Number:
    """A number query parameter, parsed by `parse`; a 400 naming it when it is not one."""
    raw = request.query.get(name, default)
    try:
        return parse(raw)
    except ValueError:
        raise web.HTTPBadRequest(
            text=f'{{"error": "query parameter {name} must be a number, not {raw!r}"}}',
            content_type="application/json",
        ) from None


async def _snapshot(request: web.Request) -> web.Response:
    body = await _body(request)
    parts = body.get("partitions")
    manifest = await call(request.app[WORKER], lambda w: roles.snapshot(w, parts, None))
    return web.json_response(manifest)


async def _migration(request: web.Request) -> web.StreamResponse:
    """A protocol's action (`actions.REGISTRY`), keyed by migration: a repeated call answers
    the first call's answer, unless that answer asked to be asked again (`"again"`)."""
    migration, action = request.match_info["migration"], request.match_info["action"]
    done = request.app[DONE]
    if (migration, action) in done:
        return web.json_response(done[(migration, action)])
    body = await _body(request)
    worker = request.app[WORKER]
    protocol = actions.protocol_of(body, worker.roles, migration, action)
    if action in actions.ASYNC[protocol]:
        return await request.app[ASYNC_ROLES][protocol].handle(request, migration, action, body)
    run = actions.lookup(protocol, action)
    if run is None:
        return web.json_response(
            {"error": f"unknown action {action!r} for protocol {protocol}"}, status=404
        )
    if action == "begin" and body.get("role", "target") != "target":
        return web.json_response({"error": "only role 'target' begins by adopting"}, status=409)
    result = await call(worker, lambda w: run(w.roles, w.port, migration, body))
    follow_up = request.app[FOLLOW_UPS].get(protocol)
    if follow_up is not None:
        follow_up.after(migration, action, body)
    if not result.get("again"):
        done[(migration, action)] = result
    return web.json_response(result)


async def _body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    body = await request.json()
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    return body
