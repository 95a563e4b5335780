"""A pod's CPU limit on the process node agent: a pod limited to 0.25 CPU running a busy loop
gets about a quarter of a core, and its cgroups are gone once it stops.

The pod runs through the agent's own `PodRunner` on the kernel's cgroups (v1 cpu and cpuacct
controllers; needs root), not through the shared agent, which runs /work/main's code.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from streamshift_dev.cgroups import PARENT, ROOT, CpuLimit
from streamshift_dev.runner import Paths, PodRunner

pytestmark = pytest.mark.stack

BUSY = "while True: pass"
MOST_SHARES = "262144"  # the kernel's largest cpu.shares
MEASURE_S = 4.0


def pod(cpu: str) -> dict[str, Any]:
    uid = str(uuid.uuid4())
    container = {
        "name": "main",
        "image": "streamshift/none",
        "command": ["python3", "-c", BUSY],
        "resources": {"limits": {"cpu": cpu}},
    }
    return {
        "metadata": {"name": f"busy-{uid[:8]}", "namespace": "cpu-test", "uid": uid},
        "spec": {"containers": [container], "restartPolicy": "Never"},
    }


def cpu_stat(group: Path) -> dict[str, int]:
    """The group's CFS counters: periods it ran in, and those it was throttled in."""
    pairs = (line.split() for line in (group / "cpu.stat").read_text().splitlines())
    return {key: int(value) for key, value in pairs}


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_a_quarter_cpu_limit_holds_a_busy_loop_to_a_quarter_core(tmp_path: Path) -> None:
    assert (ROOT / "cpu" / "cpu.cfs_quota_us").exists(), "no cgroup v1 cpu controller"
    spec = pod("250m")
    runner = PodRunner(spec, "127.0.0.1", Paths(tmp_path / "logs", tmp_path / "work", tmp_path))
    runner.tick(lambda _pod, _container, _ip: {"PATH": os.environ["PATH"]})
    assert runner.proc is not None and runner.limit is not None, runner.view.waiting
    pid, group = runner.proc.pid, runner.limit.cpu
    parent_shares = (group.parent / "cpu.shares").read_text()
    try:
        assert (group / "cpu.cfs_quota_us").read_text().strip() == "25000"
        # the shared machine is often saturated: with the most weight (its group's and the
        # streamshift group's), the loop would take a whole core whatever else runs, so what
        # holds it to a quarter is the quota alone
        (group.parent / "cpu.shares").write_text(MOST_SHARES)
        (group / "cpu.shares").write_text(MOST_SHARES)
        membership = Path(f"/proc/{pid}/cgroup").read_text()
        assert f":cpu:/{PARENT}/{spec['metadata']['uid']}" in membership
        time.sleep(1.0)  # past the start-up
        wall0, group0 = time.monotonic(), runner.limit.usage_seconds()
        proc0, stat0 = process_cpu_seconds(pid), cpu_stat(group)
        time.sleep(MEASURE_S)
        wall = time.monotonic() - wall0
        by_group = (runner.limit.usage_seconds() - group0) / wall
        by_proc = (process_cpu_seconds(pid) - proc0) / wall
        stat = {key: value - stat0[key] for key, value in cpu_stat(group).items()}
        # the quota allows 0.25 of a core, used up in most 100 ms periods
        assert 0.20 < by_group < 0.30, by_group
        assert abs(by_proc - by_group) < 0.05, (by_proc, by_group)
        assert stat["nr_periods"] >= 0.75 * MEASURE_S * 10, stat
        assert stat["nr_throttled"] >= 0.5 * stat["nr_periods"], stat
    finally:
        (group.parent / "cpu.shares").write_text(parent_shares)
        deadline = time.monotonic() + 10
        while not runner.stop(0):
            assert time.monotonic() < deadline, "the pod's process or cgroups outlived 10 s"
            time.sleep(0.1)
    assert not group.exists() and not (ROOT / "cpuacct" / PARENT / spec["metadata"]["uid"]).exists()


def test_a_limited_pod_that_ends_by_itself_leaves_no_cgroup(tmp_path: Path) -> None:
    spec = pod("100m")
    spec["spec"]["containers"][0]["command"] = ["python3", "-c", "print('done')"]
    runner = PodRunner(spec, "127.0.0.1", Paths(tmp_path / "logs", tmp_path / "work", tmp_path))
    deadline = time.monotonic() + 20
    while not runner.done:
        assert time.monotonic() < deadline, runner.view
        runner.tick(lambda _pod, _container, _ip: {"PATH": os.environ["PATH"]})
        time.sleep(0.1)
    assert runner.phase == "Succeeded" and runner.limit is None
    assert not (ROOT / "cpu" / PARENT / spec["metadata"]["uid"]).exists()


def test_a_process_that_cannot_enter_its_cgroup_fails_to_start_and_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(_limit: CpuLimit) -> None:
        raise OSError("cgroup.procs refused the process")

    monkeypatch.setattr(CpuLimit, "enter", refuse)
    spec = pod("100m")
    runner = PodRunner(spec, "127.0.0.1", Paths(tmp_path / "logs", tmp_path / "work", tmp_path))
    runner.tick(lambda _pod, _container, _ip: {"PATH": os.environ["PATH"]})
    assert runner.phase == "Failed" and runner.view.terminated is not None
    assert runner.view.terminated["reason"] == "StartError"
    assert not (ROOT / "cpu" / PARENT / spec["metadata"]["uid"]).exists()
