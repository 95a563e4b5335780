"""Worker processes for the runtime benchmarks: the shared launcher
(`streamshift_dev.workers`, also used by the stack tests) with the benchmarks' settings: four
partitions, their token and bucket, no periodic snapshot, logs in the temporary directory."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from streamshift_dev import workers
from streamshift_dev.workers import Services, services, stack_pid

PARTITIONS = 4
TOKEN = "bench"

__all__ = ["PARTITIONS", "Services", "services", "stack_pid"]


def send(producer: Producer, topic: str, value: bytes, partition: int) -> None:
    """Queue one record, serving the producer's queue (and waiting while it is full)."""
    while True:
        try:
            producer.produce(topic, value, partition=partition)
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.05)


def create_topics(stack: Services, names: list[str]) -> None:
    workers.create_topics(stack, names, PARTITIONS)


def delete_topics(stack: Services, names: list[str]) -> None:
    workers.delete_topics(stack, names)


def worker_env(
    stack: Services, run: str, plan_name: str, inputs: list[str], fmt: str, **extra: str
) -> dict[str, str]:
    """The environment of one worker of query `run` (input topics `{run}-{input}`)."""
    settings = {
        "STREAMSHIFT_INPUT_FORMAT": fmt,
        "STREAMSHIFT_SNAPSHOT_INTERVAL_S": "3600",
        "STREAMSHIFT_BATCH_SIZE": "20000",
        **extra,
    }
    return workers.worker_env(
        stack, run, plan_name, inputs, PARTITIONS, TOKEN, "bench-runtime", **settings
    )


def log_of(env: dict[str, str], name: str) -> Path:
    return Path(tempfile.gettempdir()) / f"{env['STREAMSHIFT_QUERY']}-{name}.log"


def start(env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    """Start a worker process; its output goes to `log_of(env, name)`."""
    return workers.start(env, log_of(env, name))


def control(env: dict[str, str], method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return workers.control(env, method, path, body)


def status(env: dict[str, str]) -> dict[str, Any]:
    code, body = control(env, "GET", "/v1/status")
    if code != 200:
        raise RuntimeError(f"status {code}: {body}")
    return dict(body)


def wait_ready(env: dict[str, str], process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    workers.wait_ready(env, process, timeout)
