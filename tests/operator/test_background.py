"""The verification's child processes run at the lowest CPU priority, so the workers and the
broker on the node come first."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from streamshift_operator.migration.background import NICENESS, pool


def test_the_verification_children_run_at_the_lowest_priority() -> None:
    assert os.getpriority(os.PRIO_PROCESS, 0) < NICENESS
    child = pool().submit(os.getpriority, os.PRIO_PROCESS, 0).result(timeout=60)
    assert child == NICENESS
    assert pool().submit(os.getpid).result(timeout=60) != os.getpid()


def test_a_verification_child_ends_with_the_operator_process() -> None:
    """An operator process (here a child of the test) starts the pool, then is killed: its
    verification child does not outlive it."""
    script = (
        "import os, time\n"
        "from streamshift_operator.migration.background import pool\n"
        "print(pool().submit(os.getpid).result(timeout=60), flush=True)\n"
        "time.sleep(60)\n"
    )
    operator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert operator.stdout is not None
        child = int(operator.stdout.readline())
        assert _alive(child)
    finally:
        operator.kill()
        operator.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not reaped by its init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
