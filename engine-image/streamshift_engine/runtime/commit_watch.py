"""Status requests that wait for the worker's next commit (`GET /v1/status?committed_after=W`).

A parallel-track target releases its held results up to the watermark its origin's last commit
carried (`track_follow`). Read every 50 ms, that watermark reached the target 25 ms after the
commit on average and up to 50 ms: a pause in the output at the hand-over. Asked with
`committed_after`, the origin answers at once when its committed watermark is past `W`, else at
its next commit (any commit: the one that hands the partitions over may not move the watermark)
or once `wait` seconds passed, so the target hears of each commit as it happens.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker

MAX_WAIT_S = 5.0


class CommitWatch:
    """Wakes the requests waiting for the worker's next commit (the worker calls `committed`
    from its own thread after each commit)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.loop: asyncio.AbstractEventLoop | None = None
        self.next_commit = asyncio.Event()

    async def attach(self, _app: object = None) -> None:
        """Start hearing of commits (on the control API's event loop)."""
        self.loop = asyncio.get_running_loop()
        self.worker.on_commit.append(self.committed)

    def committed(self) -> None:
        """Called on the worker thread after each commit."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        woken, self.next_commit = self.next_commit, asyncio.Event()
        woken.set()

    async def after(self, watermark: int, wait: float) -> None:
        """Return once the committed watermark is past `watermark`, at the next commit, or
        after `wait` seconds (at most `MAX_WAIT_S`), whichever comes first."""
        committed = self.worker.committed_watermark
        bounded = min(wait, MAX_WAIT_S) if wait > 0 else 0.0  # NaN: no wait
        if (committed is not None and committed > watermark) or not bounded:
            return
        try:
            await asyncio.wait_for(self.next_commit.wait(), bounded)
        except TimeoutError:
            return
