"""The control API's liveness without Kafka: `/healthz` and `/readyz` fail with the reason when
the worker thread ended or its loop stopped advancing, and `/v1/status` answers 503 when the
worker thread does not answer (before, the request hung while `/readyz` said 200)."""

from __future__ import annotations

import asyncio
import queue
from types import SimpleNamespace
from typing import Any, cast

import pytest
from aiohttp.test_utils import TestClient, TestServer
from streamshift_engine.runtime import control
from streamshift_engine.runtime.loop import Command, Worker
from streamshift_engine.runtime.metrics import Metrics

GOOD = {"Authorization": "Bearer t"}


def blocked_worker() -> Worker:
    """A worker whose thread never takes a command (blocked in a call that does not return)."""
    commands: queue.Queue[Command] = queue.Queue()
    stand_in = SimpleNamespace(
        ready=True,
        phase="running",
        metrics=Metrics(),
        commands=commands,
        submit=commands.put,
        on_commit=[],
        committed_watermark=None,
    )
    return cast(Worker, stand_in)


async def answers(
    alive: bool, problem: str | None, paths: list[str]
) -> list[tuple[int, dict[str, Any]]]:
    app = control.build_app(blocked_worker(), "t", lambda: alive, lambda: problem)
    async with TestClient(TestServer(app)) as client:
        found = []
        for path in paths:
            response = await client.get(path, headers=GOOD)
            found.append((response.status, await response.json()))
        return found


def test_probes_say_why_the_worker_is_not_alive() -> None:
    stalled = "input has waited 31 s and no fetch returned it"
    assert asyncio.run(answers(True, None, ["/healthz", "/readyz"])) == [
        (200, {"ok": True}),
        (200, {"ready": True, "phase": "running"}),
    ]
    assert asyncio.run(answers(True, stalled, ["/healthz", "/readyz"])) == [
        (503, {"ok": False, "problem": stalled}),
        (503, {"ready": False, "phase": "running"}),
    ]
    assert asyncio.run(answers(False, None, ["/healthz"])) == [
        (503, {"ok": False, "problem": "the worker thread ended"})
    ]


def test_status_of_a_worker_thread_that_does_not_answer_is_503(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(control, "STATUS_WAIT_S", 0.5)
    stalled = "the worker loop has not fetched input for 40 s"
    assert asyncio.run(answers(True, stalled, ["/v1/status"])) == [(503, {"error": stalled})]
    [(status, body)] = asyncio.run(answers(True, None, ["/v1/status"]))
    assert (status, body) == (503, {"error": "the worker thread did not answer in 0.5 s"})
