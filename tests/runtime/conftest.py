"""Fixtures for worker tests on the local stack: endpoints from $STREAMSHIFT_CACHE/run/stack.env,
fresh topics (deleted after the test) and S3 prefixes per test, worker processes (killed by
PID), output readers. A failed test's worker logs, output, dead letters and input order are kept
under `$STREAMSHIFT_CACHE/log/test-failures/` (pytest keeps only its last three temporary
folders; CI keeps the log folder)."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from call_report import evidence_folder, failure, input_order, read_topic
from confluent_kafka.admin import AdminClient
from streamshift_dev import workers as launcher

from .harness import Services, WorkerProcesses


@pytest.fixture(scope="session")
def services() -> Services:
    """The stack's Kafka and MinIO; fails (never skips) when the stack is not up."""
    path = launcher.stack_env_path()
    if not path.exists():
        pytest.fail(f"{path} not found: the local stack is not running; start it with `make up`")
    return launcher.services()


@pytest.fixture
def run_id() -> str:
    return f"rt{uuid.uuid4().hex[:8]}"


@pytest.fixture
def workers(
    tmp_path: Path, request: pytest.FixtureRequest, services: Services, run_id: str
) -> Iterator[WorkerProcesses]:
    processes = WorkerProcesses(tmp_path)
    yield processes
    processes.kill_all()
    listed = AdminClient({"bootstrap.servers": services.kafka}).list_topics(timeout=10).topics
    made = [topic for topic in listed if topic.startswith(f"{run_id}-")]
    if failure(request) is not None:
        kept = evidence_folder() / f"{request.node.name}-{time.time_ns()}"
        kept.mkdir()
        for log in tmp_path.glob("worker-*.log"):
            shutil.copy(log, kept / log.name)
        for topic in (f"{run_id}-out", f"{run_id}-out.dead"):
            records = read_topic(services.kafka, topic, timeout=10)
            (kept / f"{topic}.json").write_text(json.dumps(records, indent=1))
        inputs = [t for t in made if not t.startswith(f"{run_id}-out")]
        order = {topic: input_order(services.kafka, topic) for topic in inputs}
        (kept / "input-order.json").write_text(json.dumps(order, indent=1))
    if made:  # a stack kept up for development would otherwise load every test's topics
        launcher.delete_topics(services, made)
