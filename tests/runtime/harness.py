"""Test harness for worker processes: topics with Nexmark input, the in-process reference with
the end of input flushed, and worker processes (launched by `streamshift_dev.workers`, shared with
`make bench-runtime`) and their control API. Writing the input, reading the output and the
reference without a flush are `support.kafka` and `support.reference`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from streamshift_dev import workers
from streamshift_dev.workers import Services as Services
from streamshift_dev.workers import free_port as free_port
from streamshift_engine.events.batch import Batch
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.runner import collect, run_plan

TOKEN = "test-token"
LOGS: dict[int, Path] = {}


def create_topics(services: Services, names: list[str], partitions: int) -> None:
    workers.create_topics(services, names, partitions)


def nexmark_input(count: int, partitions: int, start: int = 0) -> dict[str, Batch]:
    """Nexmark events at 200 per second of event time (so windows fire within the input)."""
    config = GeneratorConfig(partitions=partitions, events_per_second=200)
    return generate(7, start, count, config)


def reference_flushed(plan_name: str, inputs: dict[str, Batch]) -> list[str]:
    """Sorted result records of the in-process engine, end of input flushed: every result the
    input can ever give."""
    results, _ = run_plan(builtin(plan_name), {name: [b] for name, b in inputs.items()})
    return sorted(json.dumps(r, sort_keys=True) for r in collect(results))


def worker_env(services: Services, run_id: str, plan: str, **extra: str) -> dict[str, str]:
    inputs = [s.name for s in builtin(plan).inputs]
    settings = {"STREAMSHIFT_NAMESPACE": "test", "STREAMSHIFT_EPOCH": "0", **extra}
    settings.setdefault("STREAMSHIFT_SNAPSHOT_INTERVAL_S", "1")
    return workers.worker_env(services, run_id, plan, inputs, 4, TOKEN, "runtime-tests", **settings)


class WorkerProcesses:
    """Worker processes started by a test; each is killed by its PID at the end."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, env: dict[str, str]) -> subprocess.Popen[bytes]:
        path = self.logs / f"worker-{len(self.started)}.log"
        process = workers.start(env, path)
        self.started.append(process)
        LOGS[process.pid] = path
        return process

    def log(self, index: int) -> str:
        return (self.logs / f"worker-{index}.log").read_text()

    def kill_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(10)


def control(
    env: dict[str, str], method: str, path: str, body: Any = None, token: str = TOKEN
) -> tuple[int, Any]:
    """Call a worker's control API; returns (status, parsed JSON)."""
    return workers.control(env, method, path, body, token)


def wait_ready(env: dict[str, str], process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    try:
        workers.wait_ready(env, process, timeout, LOGS.get(process.pid))
    except RuntimeError as error:
        raise AssertionError(str(error)) from None


def metric(env: dict[str, str], sample: str, **labels: str) -> float:
    """The value of one sample on a worker's /metrics page: its name and its own `labels`; every
    sample must also name the worker's query and instance (the identity labels)."""
    url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}/metrics"
    identity = {"query": env["STREAMSHIFT_QUERY"], "instance": env["STREAMSHIFT_INSTANCE"]}
    with urllib.request.urlopen(url, timeout=10) as response:
        families = text_string_to_metric_families(response.read().decode())
    for family in families:
        for found in family.samples:
            assert found.labels.items() >= identity.items(), found
            if found.name == sample and found.labels.items() >= labels.items():
                return float(found.value)
    raise AssertionError(f"{sample} {labels} not on /metrics")


def wait_status(env: dict[str, str], ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        body: dict[str, Any] = control(env, "GET", "/v1/status")[1]
        if ok(body):
            return body
        time.sleep(0.2)
    raise AssertionError(f"condition not met; last status {body}")
