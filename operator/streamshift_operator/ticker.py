"""Periodic work per object without kopf's timers.

Kopf puts its finalizer on every object a timer or daemon serves (whatever the delete handlers
say), so once the operator stops, such objects block the deletion of their namespace. A Ticker
runs one task per tracked object instead, started and stopped from watch events, which add no
finalizer. A tick in progress is never interrupted by `stop`: the loop ends after it. A tick
that returns True moved something (a migration entered its next phase, whose first step is due
now): the next tick runs at once instead of after the interval.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable

Tick = Callable[[], Awaitable[bool | None]]

logger = logging.getLogger(__name__)


class Ticker:
    """One looping task per key: `tick()`, then `interval` seconds, until stopped."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, key: str, tick: Tick, interval: float, initial_delay: float = 0.0) -> None:
        """Loop `tick` under `key` unless a loop under it runs already."""
        running = self._tasks.get(key)
        if running is not None and not running.done():
            return
        self._tasks[key] = asyncio.create_task(
            self._loop(key, tick, interval, initial_delay), name=f"tick {key}"
        )

    def stop(self, key: str) -> None:
        """The loop under `key` ends once its current tick or pause is over."""
        self._tasks.pop(key, None)

    def keys(self) -> set[str]:
        return {k for k, task in self._tasks.items() if not task.done()}

    async def close(self) -> None:
        """Cancel every loop and wait for them to end."""
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _loop(self, key: str, tick: Tick, interval: float, initial_delay: float) -> None:
        await asyncio.sleep(initial_delay)
        while self._tasks.get(key) is asyncio.current_task():
            try:
                again = await tick()
            except Exception:  # one failed tick must not end the loop: the next one retries
                logger.exception("tick %s failed", key)
                again = False
            await asyncio.sleep(0 if again else interval)
