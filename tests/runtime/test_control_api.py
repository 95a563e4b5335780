"""The control API without Kafka: bearer auth, open probes and metrics, routes as documented."""

from __future__ import annotations

import asyncio
import queue
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import yaml
from aiohttp.test_utils import TestClient, TestServer
from streamshift_engine.runtime.control import build_app
from streamshift_engine.runtime.loop import Worker
from streamshift_engine.runtime.metrics import Metrics

OPENAPI = Path(__file__).parents[2] / "docs" / "control-api.openapi.yaml"


def fake_worker() -> Worker:
    metrics = Metrics()
    metrics.events_in.inc(5)
    stand_in = SimpleNamespace(
        ready=True,
        phase="running",
        metrics=metrics,
        commands=queue.Queue(),
        on_commit=[],
        committed_watermark=None,
        roles={},
    )
    return cast(Worker, stand_in)


async def calls(requests: list[tuple[str, str, dict[str, str]]]) -> list[tuple[int, str]]:
    app = build_app(fake_worker(), "s3cret", lambda: True)
    async with TestClient(TestServer(app)) as client:
        answers = []
        for method, path, headers in requests:
            response = await client.request(method, path, headers=headers)
            answers.append((response.status, await response.text()))
        return answers


def test_wrong_or_missing_token_is_401_and_probes_are_open() -> None:
    good = {"Authorization": "Bearer s3cret"}
    answers = asyncio.run(
        calls(
            [
                ("GET", "/v1/status", {}),
                ("GET", "/v1/status", {"Authorization": "Bearer wrong"}),
                ("POST", "/v1/migrations/m1/stop", {"Authorization": "s3cret"}),
                ("POST", "/v1/migrations/m1/teleport", good),
                ("GET", "/healthz", {}),
                ("GET", "/readyz", {}),
                ("GET", "/metrics", {}),
                ("GET", "/v1/status?committed_after=soon", good),
                ("GET", "/v1/status?committed_after=5&wait=long", good),
            ]
        )
    )
    assert [status for status, _ in answers] == [401, 401, 401, 404, 200, 200, 200, 400, 400]
    assert "query parameter committed_after must be a number, not 'soon'" in answers[7][1]
    assert "query parameter wait must be a number, not 'long'" in answers[8][1]
    assert "unknown action 'teleport'" in answers[3][1]
    assert "streamshift_events_in_total 5.0" in answers[6][1]


def test_routes_are_the_documented_ones() -> None:
    app = build_app(fake_worker(), "t", lambda: True)
    served: set[tuple[str, str]] = set()
    for route in app.router.routes():
        info = dict(route.resource.get_info()) if route.resource else {}
        path: Any = info.get("path") or info.get("formatter")
        if route.method != "HEAD":
            served.add((route.method.lower(), str(path)))
    spec = yaml.safe_load(OPENAPI.read_text())
    documented = {(m, p) for p, item in spec["paths"].items() for m in item}
    assert served == documented
