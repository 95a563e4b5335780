"""Moving state's role endpoints without Kafka: a target whose origin cannot be reached answers
503 and may try again; a request without partitions is refused; moving-state actions need the
token like every other role endpoint."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from streamshift_engine.plan import builtin
from streamshift_engine.runtime.control import build_app

from .harness import free_port
from .test_control_api import fake_worker

GOOD = {"Authorization": "Bearer s3cret"}


async def posts(
    requests: list[tuple[str, dict[str, Any], dict[str, str]]],
) -> list[tuple[int, str]]:
    worker = fake_worker()
    worker.config = SimpleNamespace(plan=builtin("nexmark-q5"))  # type: ignore[assignment]
    app = build_app(worker, "s3cret", lambda: True)
    async with TestClient(TestServer(app)) as client:
        answers = []
        for path, body, headers in requests:
            response = await client.post(path, json=body, headers=headers)
            answers.append((response.status, await response.text()))
        return answers


def test_unreachable_origin_is_503_again_and_bad_requests_are_refused() -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    begin = {
        "protocol": "moving-state",
        "partitions": [0, 1],
        "origins": [{"address": nowhere, "partitions": [0, 1]}],
    }
    answers = asyncio.run(
        posts(
            [
                ("/v1/migrations/s1/begin", begin, GOOD),
                ("/v1/migrations/s1/begin", begin, GOOD),
                ("/v1/migrations/s1/export", {"protocol": "moving-state"}, GOOD),
                (
                    "/v1/migrations/s1/recompute",
                    {"protocol": "moving-state", "partitions": [0, 1]},
                    GOOD,
                ),
                ("/v1/migrations/s1/export", {"partitions": [0]}, {}),
            ]
        )
    )
    assert [status for status, _ in answers] == [503, 503, 409, 409, 401]
    assert f"pulling the state from {nowhere}" in answers[1][1]
    assert "'partitions' is required" in answers[2][1]
    assert "migration s1 has not begun on this worker" in answers[3][1]
