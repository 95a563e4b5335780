"""A worker held to a twentieth of a core with input waiting on every partition stays alive and
ready: it reads every partition, not some of them for longer than its liveness allows; and it
answers its status from the moment it is ready.

q8 reads two inputs of 4 partitions each. With per-partition fetch shares larger than a fetch
response (`source.partition_fetch_bytes`), a worker behind on all of them read the auctions and
left person partitions unread until its liveness called it stalled: `/healthz` and `/readyz`
failed, and the operator took a scale-up's saturated origin for lost. The worker runs in a
cgroup v1 CPU quota of its own, as the node agent runs a pod with `limits.cpu: 50m` (needs
root and the cpu controller).
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from streamshift_dev.cgroups import ROOT, CpuLimit
from streamshift_dev.elastic_load import Producing, config
from streamshift_dev.workers import start

from .harness import LOGS, Services, WorkerProcesses, control, create_topics, wait_ready, worker_env

pytestmark = [pytest.mark.stack, pytest.mark.timeout(300)]
PARTITIONS = 4
STALL_S = 10  # the liveness limit: starved partitions went unread for 20 s and more
WATCH_S = 40
MILLICORES = 50
BACKLOG_S = 20.0  # seconds of input produced flat out: far more than the worker reads meanwhile


def get(env: dict[str, str], path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def start_limited(
    env: dict[str, str], limit: CpuLimit, workers: WorkerProcesses, log: Path
) -> subprocess.Popen[bytes]:
    """A worker process inside `limit`'s cgroups from its first instruction."""
    process = start(env, log, limit.enter)
    workers.started.append(process)  # killed by PID at the end
    LOGS[process.pid] = log
    return process


def test_a_worker_at_its_cpu_limit_reads_every_partition_and_stays_ready(
    services: Services, run_id: str, workers: WorkerProcesses, tmp_path: Path
) -> None:
    assert (ROOT / "cpu" / "cpu.cfs_quota_us").exists(), "no cgroup v1 cpu controller"
    names = [f"{run_id}-person", f"{run_id}-auction", f"{run_id}-out", f"{run_id}-out.dead"]
    create_topics(services, names, PARTITIONS)
    producing = Producing(services.kafka, run_id, config(PARTITIONS, 1000), flat_out=True)
    producing.start()
    time.sleep(BACKLOG_S)
    producing.stop()
    env = worker_env(services, run_id, "nexmark-q8", STREAMSHIFT_STALL_S=str(STALL_S))
    limit = CpuLimit(f"test-{run_id}", MILLICORES)
    limit.create()
    try:
        process = start_limited(env, limit, workers, tmp_path / "worker-0.log")
        wait_ready(env, process, timeout=60)
        answers, waiting = [], []
        for _ in range(WATCH_S):
            answers.append((get(env, "/healthz"), get(env, "/readyz")[0]))
            lags = control(env, "GET", "/v1/status")[1]["load"]["lag_records"]
            waiting.append(len(lags) == 2 * PARTITIONS and min(lags.values()) > 0)
            time.sleep(1)
        cpu_seconds = limit.usage_seconds()
    finally:
        workers.kill_all()
        limit.remove()
    # the premise: the quota held it, and input waited on every partition for twice the
    # liveness limit (the persons' backlog, a quarter of the records, runs out first)
    assert cpu_seconds < 2 * MILLICORES / 1000 * (WATCH_S + 60), cpu_seconds
    longest = max(len(run) for run in "".join("w" if w else " " for w in waiting).split(" "))
    assert longest >= 2 * STALL_S, waiting
    failed = [answer for answer in answers if answer != ((200, '{"ok": true}'), 200)]
    assert not failed, failed
