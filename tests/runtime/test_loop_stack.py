"""The worker loop on the local stack. A command submitted while the loop's consume waits for
input ends that wait (`Worker.submit` wakes the source), so a control call does not wait for
the step's time; work a command defers (`Worker.later`: a release's drop of the state) runs after
its answer, before the next command."""

from __future__ import annotations

import threading
import time

import pytest
from streamshift_engine.runtime.config import load
from streamshift_engine.runtime.loop import Command, Worker
from streamshift_engine.runtime.metrics import Metrics

from .harness import Services, create_topics, worker_env

pytestmark = [pytest.mark.stack, pytest.mark.timeout(60)]


def test_a_submitted_command_ends_the_wait_for_input(services: Services, run_id: str) -> None:
    config = load(worker_env(services, run_id, "nexmark-q5"))
    [spec] = config.sources
    create_topics(services, [spec.topic], 2)
    worker = Worker(config, Metrics())
    ran: list[str] = []
    try:
        worker.source.seek({(spec.name, 0): 0, (spec.name, 1): 0})  # an empty topic
        submitted = threading.Timer(0.3, lambda: worker.submit(Command(ran.append)))
        begin = time.monotonic()
        submitted.start()
        assert worker.source.fetch(20.0) == ({}, [])  # nothing to read: ended by the submit
        assert time.monotonic() - begin < 10.0
        submitted.join()
        worker._commands()
        assert ran == [worker]
        worker.submit(Command(ran.append))  # with no consume waiting: the next one returns
        begin = time.monotonic()
        assert worker.source.fetch(20.0) == ({}, [])
        assert time.monotonic() - begin < 10.0
    finally:
        worker.sink.close()
        worker.source.close()
    worker.source.wake()  # closed: nothing to wake, no error


def test_deferred_work_runs_after_the_answer_and_before_the_next_command(
    services: Services, run_id: str
) -> None:
    worker = Worker(load(worker_env(services, run_id, "nexmark-q5")), Metrics())
    seen: list[str] = []
    first = Command(
        lambda w: w.later(lambda: seen.append(f"deferred, answered {first.future.done()}"))
    )
    second = Command(lambda _w: seen.append("second"))
    try:
        worker.commands.put(first)
        worker.commands.put(second)
        worker._commands()
        assert seen == ["deferred, answered True", "second"]
        assert worker.deferred == []
    finally:
        worker.sink.close()
        worker.source.close()
