"""Fixtures for worker tests on the local stack: endpoints from $STREAMSHIFT_CACHE/run/stack.env,
fresh topics and S3 prefixes per test, worker processes (killed by PID), output readers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import Services, WorkerProcesses


@pytest.fixture(scope="session")
def services() -> Services:
    """The stack's Kafka and MinIO; fails (never skips) when the stack is not up."""
    cache = Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache" / "streamshift"))
    path = cache / "run" / "stack.env"
    if not path.exists():
        pytest.fail(f"{path} not found: the local stack is not running; start it with `make up`")
    env = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            env[key.strip()] = value.strip()
    return Services(
        env["KAFKA_BOOTSTRAP"], env["S3_ENDPOINT"], env["S3_ACCESS_KEY"], env["S3_SECRET_KEY"]
    )


@pytest.fixture
def run_id() -> str:
    return f"rt{uuid.uuid4().hex[:8]}"


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[WorkerProcesses]:
    processes = WorkerProcesses(tmp_path)
    yield processes
    processes.kill_all()
