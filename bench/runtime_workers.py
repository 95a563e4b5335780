"""Worker processes for the runtime benchmarks: the stack's endpoints, topics, a worker's
environment, starting one, its control API and its readiness."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

PARTITIONS = 4
TOKEN = "bench"


def stack_env() -> dict[str, str]:
    cache = Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache" / "streamshift"))
    lines = (cache / "run" / "stack.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def create_topics(stack: dict[str, str], names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": stack["KAFKA_BOOTSTRAP"]})
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in names]).values():
        future.result(30)


def delete_topics(stack: dict[str, str], names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": stack["KAFKA_BOOTSTRAP"]})
    for future in admin.delete_topics(names).values():
        future.result(30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_env(
    stack: dict[str, str], run: str, plan_name: str, inputs: list[str], fmt: str, **extra: str
) -> dict[str, str]:
    """The environment of one worker of query `run` (input topics `{run}-{input}`)."""
    env = {
        **os.environ,
        "STREAMSHIFT_QUERY": run,
        "STREAMSHIFT_INSTANCE": "0",
        "STREAMSHIFT_PARTITIONS": ",".join(map(str, range(PARTITIONS))),
        "STREAMSHIFT_PLAN": json.dumps({"builtin": plan_name}),
        "STREAMSHIFT_SOURCES": json.dumps(
            [{"name": n, "topic": f"{run}-{n}", "partitions": PARTITIONS} for n in inputs]
        ),
        "STREAMSHIFT_SINKS": json.dumps(
            [{"name": "out", "topic": f"{run}-out", "partitions": PARTITIONS}]
        ),
        "STREAMSHIFT_KAFKA_BOOTSTRAP": stack["KAFKA_BOOTSTRAP"],
        "STREAMSHIFT_S3_ENDPOINT": stack["S3_ENDPOINT"],
        "STREAMSHIFT_S3_BUCKET": "bench-runtime",
        "STREAMSHIFT_S3_PREFIX": f"{run}/",
        "STREAMSHIFT_S3_ACCESS_KEY": stack["S3_ACCESS_KEY"],
        "STREAMSHIFT_S3_SECRET_KEY": stack["S3_SECRET_KEY"],
        "STREAMSHIFT_CONTROL_TOKEN": TOKEN,
        "STREAMSHIFT_CONTROL_PORT": str(free_port()),
        "POD_IP": "127.0.0.1",
        "STREAMSHIFT_INPUT_FORMAT": fmt,
        "STREAMSHIFT_SNAPSHOT_INTERVAL_S": "3600",
        "STREAMSHIFT_BATCH_SIZE": "20000",
    }
    env.update(extra)
    return env


def start(env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    """Start a worker process; its output goes to a log file in the temporary directory."""
    log = Path(tempfile.gettempdir()) / f"{env['STREAMSHIFT_QUERY']}-{name}.log"
    with log.open("wb") as out:
        command = [sys.executable, "-m", "streamshift_engine.runtime"]
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def control(env: dict[str, str], method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """Call a worker's control API; returns (status, parsed JSON)."""
    url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}{path}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def status(env: dict[str, str]) -> dict[str, Any]:
    code, body = control(env, "GET", "/v1/status")
    if code != 200:
        raise RuntimeError(f"status {code}: {body}")
    return dict(body)


def wait_ready(env: dict[str, str], process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"worker exited with {process.returncode}")
        try:
            url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}/readyz"
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("worker not ready in time")
