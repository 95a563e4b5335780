"""Worker processes on the local stack, shared by the runtime's stack tests and `make
bench-runtime`: the stack's Kafka and MinIO endpoints, topics, a worker's environment, starting
one with its output in a log file, its control API and its readiness."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic


@dataclass(frozen=True)
class Services:
    """The stack's endpoints a worker needs."""

    kafka: str
    s3_endpoint: str
    s3_access_key: str
    s3_secret_key: str


def cache_dir() -> Path:
    """`$STREAMSHIFT_CACHE` (default `~/.cache/streamshift`): binaries, data and logs."""
    return Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache" / "streamshift"))


def stack_env_path() -> Path:
    return cache_dir() / "run" / "stack.env"


def stack_env() -> dict[str, str]:
    """The running stack's settings (`$STREAMSHIFT_CACHE/run/stack.env`)."""
    env = {}
    for line in stack_env_path().read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            env[key.strip()] = value.strip()
    return env


def stack_pid(part: str) -> int | None:
    """The process id of one part of the running stack (`kafka`, `minio`, ...) from the pid
    file `make up` wrote, or None without one."""
    try:
        return int((cache_dir() / "run" / "pids" / f"{part}.pid").read_text())
    except (OSError, ValueError):
        return None


def services() -> Services:
    """The running stack's endpoints."""
    env = stack_env()
    return Services(
        env["KAFKA_BOOTSTRAP"], env["S3_ENDPOINT"], env["S3_ACCESS_KEY"], env["S3_SECRET_KEY"]
    )


def create_topics(stack: Services, names: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(30)


def delete_topics(stack: Services, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    for future in admin.delete_topics(names).values():
        future.result(30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_env(
    stack: Services,
    query: str,
    plan: str,
    inputs: list[str],
    partitions: int,
    token: str,
    bucket: str,
    **extra: str,
) -> dict[str, str]:
    """The environment of instance 0 of `query` running the built-in `plan` on every partition
    (input topics `{query}-{input}`, output `{query}-out`); `extra` overrides any setting."""
    env = {
        **os.environ,
        "STREAMSHIFT_QUERY": query,
        "STREAMSHIFT_INSTANCE": "0",
        "STREAMSHIFT_PARTITIONS": ",".join(map(str, range(partitions))),
        "STREAMSHIFT_PLAN": json.dumps({"builtin": plan}),
        "STREAMSHIFT_SOURCES": json.dumps(
            [{"name": n, "topic": f"{query}-{n}", "partitions": partitions} for n in inputs]
        ),
        "STREAMSHIFT_SINKS": json.dumps(
            [{"name": "out", "topic": f"{query}-out", "partitions": partitions}]
        ),
        "STREAMSHIFT_KAFKA_BOOTSTRAP": stack.kafka,
        "STREAMSHIFT_S3_ENDPOINT": stack.s3_endpoint,
        "STREAMSHIFT_S3_BUCKET": bucket,
        "STREAMSHIFT_S3_PREFIX": f"{query}/",
        "STREAMSHIFT_S3_ACCESS_KEY": stack.s3_access_key,
        "STREAMSHIFT_S3_SECRET_KEY": stack.s3_secret_key,
        "STREAMSHIFT_CONTROL_TOKEN": token,
        "STREAMSHIFT_CONTROL_PORT": str(free_port()),
        "POD_IP": "127.0.0.1",
    }
    env.update(extra)
    return env


def start(
    env: dict[str, str], log: Path, enter: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    """Start a worker process; its output goes to `log`. `enter` runs in the child before the
    worker (a `cgroups.CpuLimit`'s: limited from its first instruction)."""
    with log.open("wb") as out:
        command = [sys.executable, "-m", "streamshift_engine.runtime"]
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=enter
        )


def control(
    env: dict[str, str], method: str, path: str, body: Any = None, token: str | None = None
) -> tuple[int, Any]:
    """Call a worker's control API (with its own token unless `token` is given); returns
    (status, parsed JSON)."""
    url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}{path}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    given = env["STREAMSHIFT_CONTROL_TOKEN"] if token is None else token
    request.add_header("Authorization", f"Bearer {given}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def wait_ready(
    env: dict[str, str], process: subprocess.Popen[bytes], timeout: float, log: Path | None = None
) -> None:
    """Until the worker answers `/readyz`; RuntimeError (with the tail of `log`) when it exits
    or is not ready in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"worker exited with {process.returncode}:\n{tail}")
        try:
            url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}/readyz"
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("worker not ready in time")
