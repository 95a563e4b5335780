"""`CommitWatch`: a status request with `committed_after` answers at once when the committed
watermark is past it, at the worker's next commit (signalled from another thread), or once its
wait is over; the commit wakes every request waiting, and a later request waits for the next."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import cast

from streamshift_engine.runtime.commit_watch import CommitWatch
from streamshift_engine.runtime.loop import Worker


def watch_of(committed: int | None) -> tuple[CommitWatch, SimpleNamespace]:
    worker = SimpleNamespace(on_commit=[], committed_watermark=committed)
    return CommitWatch(cast(Worker, worker)), worker


def commit_from_worker_thread(worker: SimpleNamespace, watermark: int) -> None:
    def commit() -> None:
        worker.committed_watermark = watermark
        for listener in worker.on_commit:
            listener()

    thread = threading.Thread(target=commit)
    thread.start()
    thread.join()


def test_answers_at_once_when_the_committed_watermark_is_past() -> None:
    async def scenario() -> bool:
        watch, _ = watch_of(1000)
        await watch.attach()
        waiting = asyncio.ensure_future(watch.after(999, 60))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return waiting.done()

    assert asyncio.run(scenario())


def test_every_waiting_request_answers_at_the_next_commit_and_only_then() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        watch, worker = watch_of(1000)
        await watch.attach()
        first = asyncio.ensure_future(watch.after(1000, 60))
        second = asyncio.ensure_future(watch.after(1500, 60))
        await asyncio.sleep(0.05)
        before = first.done() or second.done()
        commit_from_worker_thread(worker, 1000)  # a commit that does not move the watermark
        await asyncio.wait_for(asyncio.gather(first, second), 10)
        later = asyncio.ensure_future(watch.after(1000, 60))
        await asyncio.sleep(0.05)
        waits_for_the_next = not later.done()
        commit_from_worker_thread(worker, 2000)
        await asyncio.wait_for(later, 10)
        return before, waits_for_the_next, later.done()

    assert asyncio.run(scenario()) == (False, True, True)


def test_without_a_commit_the_request_answers_after_its_wait() -> None:
    async def scenario() -> None:
        watch, _ = watch_of(None)
        await watch.attach()
        await asyncio.wait_for(watch.after(0, 0.05), 10)
        await asyncio.wait_for(watch.after(0, float("nan")), 10)  # no wait, not an error

    asyncio.run(scenario())
