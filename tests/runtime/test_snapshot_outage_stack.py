"""MinIO unreachable during snapshots: retried with backoff, the query keeps running, and no
manifest ever names a missing or partial object. The MinIO here is the test's own (a second
server on a free port, stopped and started by its PID), so the stack's MinIO is never touched."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamshift_engine.runtime.config import S3Settings
from streamshift_engine.runtime.snapshots import SnapshotStore
from support.kafka import produce, read_committed
from support.reference import reference

from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    free_port,
    nexmark_input,
    wait_ready,
    worker_env,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]
KEY, SECRET = "outage", "outage-secret"


class OwnMinio:
    """A MinIO server of this test on its own port and data directory."""

    def __init__(self, data: Path) -> None:
        caches = [os.environ.get("STREAMSHIFT_CACHE", ""), str(Path.home() / ".cache/streamshift")]
        found = [
            p
            for c in caches
            if c
            for p in glob.glob(f"{c}/*/minio*/minio") + glob.glob(f"{c}/bin/minio")
        ]
        if not found:
            pytest.fail("no minio binary in the stack cache: run `make setup`")
        self.binary, self.data, self.port = found[0], data, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {
            **os.environ,
            "MINIO_ROOT_USER": KEY,
            "MINIO_ROOT_PASSWORD": SECRET,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        }
        command = [
            self.binary,
            "server",
            "--quiet",
            "--address",
            f"127.0.0.1:{self.port}",
            str(self.data),
        ]
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.endpoint}/minio/health/ready", timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        pytest.fail("own MinIO did not become ready")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture
def minio(tmp_path: Path) -> Iterator[OwnMinio]:
    server = OwnMinio(tmp_path / "minio")
    server.start()
    yield server
    server.stop()


def status_when(
    env: dict[str, str], ok: Callable[[dict[str, Any]], bool], timeout: float = 40
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = control(env, "GET", "/v1/status")[1]
        if ok(body):
            return body
        time.sleep(0.3)
    raise AssertionError(f"status condition not met: {body}")


def test_snapshots_survive_an_unreachable_store(
    services: Services, run_id: str, workers: WorkerProcesses, minio: OwnMinio
) -> None:
    events = nexmark_input(24_000, 4)["bid"]
    first = events.take(events.ts < events.ts[len(events) // 2])
    second = events.take(events.ts >= events.ts[len(events) // 2])
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], 4)
    produce(services.kafka, f"{run_id}-bid", first, "json")
    env = worker_env(
        services,
        run_id,
        "nexmark-q5",
        STREAMSHIFT_S3_ENDPOINT=minio.endpoint,
        STREAMSHIFT_S3_ACCESS_KEY=KEY,
        STREAMSHIFT_S3_SECRET_KEY=SECRET,
    )
    wait_ready(env, workers.start(env))
    status_when(env, lambda s: s["last_snapshot"] is not None)
    minio.stop()
    produce(services.kafka, f"{run_id}-bid", second, "json")
    expected = reference("nexmark-q5", {"bid": events}, 4)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 40) == expected
    down = status_when(env, lambda s: s["counts"]["snapshots_failed"] >= 1)
    minio.start()
    status_when(env, lambda s: s["last_snapshot"] != down["last_snapshot"])
    store = SnapshotStore(
        S3Settings(
            minio.endpoint.removeprefix("http://"),
            False,
            "runtime-tests",
            f"{run_id}/",
            KEY,
            SECRET,
        )
    )
    manifests = store.manifests()
    assert manifests
    for manifest in manifests:
        assert len(store.load(manifest)) == manifest.size  # checksum verified by load
