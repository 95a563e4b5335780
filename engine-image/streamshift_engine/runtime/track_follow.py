"""A parallel-track target following its origin (seed 001 (Zhu et al., Dynamic Plan Migration),
4.2.3, with `release-until`).

The seed holds the new box's results until the old box is gone. `parallel_track.release_until`
makes the held results due by the origin's watermark visible early; here the target asks for it
itself, as soon as they are due, instead of waiting for the operator's next tick: begun with
`origin` (the origin's control address), it asks for the origin's status as of its next commit
(`committed_after`, `commit_watch`: answered as the commit happens, not at the next of regular
reads) and releases up to the watermark the origin's last commit carried (`committed_watermark`:
every result of a window ending by it is committed, so a `read_committed` reader sees the output
in window order). Once the origin reports its track done (it committed and released the moving
partitions), the target releases the rest (`release_output`) and stops following. An origin that
does not answer is asked again `EVERY_S` later; the operator's `release-output` once the
origin is drained, and any caller's `release-until`, still work beside this and do nothing
twice. The loop is bounded by `FOLLOW_FOR_S`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from streamshift_engine.migration import parallel_track_roles
from streamshift_engine.runtime.loop import Worker

log = logging.getLogger("streamshift.worker")
EVERY_S = 0.05  # between tries while the origin does not answer
WAIT_S = 1.0  # the longest an origin holds a status request for its next commit
FOLLOW_FOR_S = 3600.0
TIMEOUT = aiohttp.ClientTimeout(total=2, connect=1)


class Follower:
    """The target's following tasks, one per migration."""

    def __init__(
        self, token: str, run: Callable[[Callable[[Worker], Any]], Awaitable[Any]]
    ) -> None:
        self.headers = {"Authorization": f"Bearer {token}"}
        self.run = run
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def after(self, migration: str, action: str, body: dict[str, Any]) -> None:
        """A target begun with its origin's control address (`origin`) follows it from the
        split on (once per migration)."""
        origin = body.get("origin")
        if action == "begin" and origin and migration not in self.tasks:
            split = int(body["split"])
            self.tasks[migration] = asyncio.ensure_future(
                self._follow(migration, str(origin), split)
            )

    async def close(self) -> None:
        """Stop following (the control API shuts down)."""
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    async def _follow(self, migration: str, origin: str, split: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FOLLOW_FOR_S
        seen = split  # the committed watermark the origin last reported (past the split)
        async with aiohttp.ClientSession(timeout=TIMEOUT, headers=self.headers) as session:
            while loop.time() < deadline:
                status = await _status(session, origin, seen)
                if status is None:  # asked again after a pause
                    await asyncio.sleep(EVERY_S)
                    continue
                seen = max(seen, status.get("committed_watermark") or seen)
                try:
                    if await self._release(migration, status, split):
                        return
                except ValueError:  # this worker is no parallel-track target (any more)
                    log.exception("stopped following origin %s", origin)
                    return
        log.warning("stopped following origin %s: %s s passed", origin, FOLLOW_FOR_S)

    async def _release(self, migration: str, origin: dict[str, Any], split: int) -> bool:
        """Release what the origin's status makes due; answer whether the target is done."""
        track = (origin.get("roles") or {}).get(migration) or {}
        if track.get("done"):
            body = {"handed_over_at": track.get("handed_over_at") or {}}
            release = parallel_track_roles.ACTIONS["release-output"]
            await self.run(lambda w: release(w.roles, w.port, migration, body))
            return True
        until = origin.get("committed_watermark")
        if until is None or until <= split:
            return False
        due = parallel_track_roles.ACTIONS["release-until"]
        mine = await self.run(lambda w: due(w.roles, w.port, migration, {"until": until}))
        return bool(mine["done"])


async def _status(session: aiohttp.ClientSession, origin: str, seen: int) -> dict[str, Any] | None:
    """The origin's status once its committed watermark is past `seen` or at its next commit
    (at most `WAIT_S` later), or None when it does not answer (asked again next round)."""
    query = {"committed_after": str(seen), "wait": str(WAIT_S)}
    try:
        async with session.get(f"http://{origin}/v1/status", params=query) as response:
            if response.status != 200:
                return None
            answer: dict[str, Any] = await response.json()
            return answer
    except (aiohttp.ClientError, TimeoutError):
        return None
