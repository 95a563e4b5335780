"""Moving state's asynchronous role endpoints: `export` on the origin, `begin` with
`protocol: moving-state` and `recompute` on the target; the steps are the roles'
(`migration.state_moving_roles`: `MovingStateOrigin.export`, `MovingStateTarget.adopt` and
`recompute`), the same the in-process checks run.

The state goes straight from the origin to the target: the target's `begin` pulls it from each
origin's `export` over the control API (same token: one query's workers share it). Not through
S3, which is state-transfer's path and costs a write and a read; not relayed by the operator,
which would carry every state byte twice and hold it in the operator's memory. The target is
the side that knows the plan it will run, so matching by state id happens where the state lands.

The export travels as the origin's parts, written in slices of `WRITE_CHUNK` (asyncio's socket
transport buffers what the socket does not take at once in a bytearray, and moves the rest of it
down after every send: one large write would pay that move on every send); the target reads it with
a blocking HTTP client in a thread of its own, straight into one preallocated buffer (`readinto`),
the buffer its restored state then views.

Each step runs once per migration (and per partition set for `export`): a repeated or concurrent
call awaits the first one's answer, so an operator retrying after a timeout, or a target pulling
again, gets the same answer and the same bytes; a failed step may be tried again.
"""

from __future__ import annotations

import asyncio
import http.client
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

import orjson
from aiohttp import web

from streamshift_engine.migration.state_moving_roles import (
    ASYNC,
    MarkerOrigin,
    MovingStateTarget,
    target_role,
)
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.projection import projected

T = TypeVar("T")
ACTIONS = ASYNC["moving-state"]
PULL_TIMEOUT_S = 120.0
WRITE_CHUNK = 1 << 20


class OriginUnreachable(ConnectionError):
    """The target could not pull the state from an origin."""


class MovingStateRoles:
    """One worker's moving-state steps, each run once: `export` and `recompute` on the worker
    thread through `run`, `begin`'s restore in a thread of its own (it touches nothing the
    worker's loop owns), so it does not wait up to a loop step for the loop to take it."""

    def __init__(
        self, worker: Worker, token: str, run: Callable[[Callable[[Worker], Any]], Awaitable[Any]]
    ) -> None:
        self.worker = worker
        self.headers = {"Authorization": f"Bearer {token}"}
        self.run = run
        self.tasks: dict[Hashable, asyncio.Task[Any]] = {}
        self.targets: dict[str, MovingStateTarget] = {}

    async def handle(
        self, request: web.Request, migration: str, action: str, body: dict[str, Any]
    ) -> web.StreamResponse:
        parts = _partitions(body)
        if action == "export":
            pieces: tuple[bytes | memoryview, ...] = await self._once(
                (migration, action, tuple(parts)),
                lambda: self.run(lambda w: self._export(w, migration, parts)),
            )
            response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
            response.content_length = sum(map(len, pieces))
            await response.prepare(request)
            for piece in pieces:
                view = memoryview(piece)
                for start in range(0, len(view), WRITE_CHUNK):
                    await response.write(view[start : start + WRITE_CHUNK])
            await response.write_eof()
            return response
        if action == "begin":
            if body.get("role", "target") != "target":
                raise ValueError("only role 'target' begins a moving-state migration")
            origin = body.get("origin_plan")
            # an origin runs its plan projected, as every worker does (`runtime.projection`)
            old_plan = self.worker.config.plan if origin is None else projected(parse_plan(origin))
            answer = await self._once(
                (migration, action),
                lambda: self._begin(migration, body["origins"], parts, old_plan),
            )
            return web.json_response(answer)
        if action == "recompute":
            answer = await self._once((migration, action), lambda: self._recompute(migration))
            return web.json_response(answer)
        raise KeyError(action)

    async def _begin(
        self, migration: str, origins: list[dict[str, Any]], parts: list[int], old_plan: Plan
    ) -> dict[str, Any]:
        target = target_role("moving-state", MovingStateTarget)(migration, frozenset(parts))
        begin = time.perf_counter()
        exports = [await self._pull(migration, origin) for origin in origins]
        pulled = time.perf_counter() - begin
        # off the worker thread: no wait for its loop to take the call (`adopt` installs nothing)
        report = await asyncio.to_thread(target.adopt, self.worker.port, exports, old_plan)
        self.targets[migration] = target
        self.worker.phase = "moving-state"
        return {**report, "pull_s": round(pulled, 3)}

    async def _recompute(self, migration: str) -> dict[str, Any]:
        if migration not in self.targets:
            raise ValueError(f"migration {migration} has not begun on this worker")
        target = self.targets[migration]
        answer: dict[str, Any] = await self.run(lambda w: target.recompute(w.port))
        del self.targets[migration]
        return answer

    @staticmethod
    def _export(worker: Worker, migration: str, parts: list[int]) -> tuple[bytes | memoryview, ...]:
        """The paused origin's export (its role made by `pause`; a pause that named no protocol
        made a state-transfer origin, whose marker is the same)."""
        origin = worker.roles.get(migration)
        if not isinstance(origin, MarkerOrigin):  # a pause naming no protocol: any marker's
            raise ValueError(f"pause partitions {parts} at a marker before exporting their state")
        return origin.export(worker.port, parts)

    async def _pull(self, migration: str, origin: dict[str, Any]) -> bytearray:
        """One origin's export of the partitions named for it."""
        try:
            status, data = await asyncio.to_thread(self._read_export, migration, origin)
        except (OSError, http.client.HTTPException) as error:
            raise OriginUnreachable(
                f"pulling the state from {origin['address']}: {error!r}"
            ) from None
        if status != 200:
            raise ValueError(f"origin {origin['address']} refused the export: {data.decode()}")
        return data

    def _read_export(self, migration: str, origin: dict[str, Any]) -> tuple[int, bytearray]:
        """POST the export call; the answer read into one buffer of its length (blocking)."""
        host, _, port = str(origin["address"]).rpartition(":")
        parts = [int(p) for p in origin["partitions"]]
        body = orjson.dumps({"protocol": "moving-state", "partitions": parts})
        headers = {**self.headers, "Content-Type": "application/json"}
        connection = http.client.HTTPConnection(host, int(port), timeout=PULL_TIMEOUT_S)
        try:
            connection.request("POST", f"/v1/migrations/{migration}/export", body, headers)
            response = connection.getresponse()
            length = response.getheader("Content-Length")
            if length is None:
                return response.status, bytearray(response.read())
            data = bytearray(int(length))
            view, got = memoryview(data), 0
            while got < len(data):
                read = response.readinto(view[got:])
                if not read:
                    raise OSError(f"the answer ended after {got} of {len(data)} bytes")
                got += read
            return response.status, data
        finally:
            connection.close()

    async def _once(self, key: Hashable, make: Callable[[], Awaitable[T]]) -> T:
        """The first call's result for `key`; a failure is forgotten, so it may be retried."""
        task = self.tasks.get(key)
        if task is None:
            task = self.tasks[key] = asyncio.ensure_future(make())
        try:
            result: T = await asyncio.shield(task)
        except Exception:
            if task.done() and self.tasks.get(key) is task:
                del self.tasks[key]
            raise
        return result


def _partitions(body: dict[str, Any]) -> list[int]:
    parts = body.get("partitions")
    if not parts:
        raise ValueError("'partitions' is required")
    return [int(p) for p in parts]


HANDLERS = {"moving-state": MovingStateRoles}
"""The asynchronous handler of each protocol this module serves (`actions.register`)."""
