"""A pod's CPU limit as a kubelet enforces it: a CFS quota in a cgroup of its own (cgroup v1).

`resources.limits.cpu` of the container the agent runs becomes `cpu.cfs_quota_us` over a
`cpu.cfs_period_us` of 100 ms (the kubelet's period) in `<root>/cpu/streamshift/<pod uid>`,
and a cpuacct group of the same name counts the CPU time used (`cpuacct.usage`, ns). The
process enters the groups before it executes its command (so every thread and child it makes is
limited), and the groups are removed once the pod's process has ended for good. A pod without a
CPU limit runs unconfined, as before; so does every pod on a machine without the cgroup v1 cpu
controller (a warning says so), while a group that cannot be made where the controller is keeps
the pod from starting (CreateContainerConfigError), as a kubelet would.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

log = logging.getLogger("streamshift.node")

ROOT = Path("/sys/fs/cgroup")
PARENT = "streamshift"
PERIOD_US = 100_000
MIN_QUOTA_US = 1_000  # the kernel refuses a smaller quota
_CPU = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(m?)$")


def millicores(quantity: str) -> int:
    """A CPU quantity (`250m`, `0.25`, `2`) in thousandths of a core, rounded up as the kubelet
    does."""
    match = _CPU.match(quantity.strip())
    if match is None:
        raise ValueError(f"not a CPU quantity: {quantity!r}")
    value = Decimal(match.group(1))
    milli = value if match.group(2) else value * 1000
    return int(milli.to_integral_value(rounding=ROUND_CEILING))


def quota_us(milli: int) -> int:
    """The CFS quota per `PERIOD_US` that gives `milli` thousandths of a core."""
    return max(MIN_QUOTA_US, milli * PERIOD_US // 1000)


class CpuLimit:
    """The cgroups of one pod: its CPU quota (`cpu`) and its CPU accounting (`cpuacct`)."""

    def __init__(self, uid: str, milli: int, root: Path = ROOT) -> None:
        self.milli = milli
        self.cpu = root / "cpu" / PARENT / uid
        self.cpuacct = root / "cpuacct" / PARENT / uid

    def groups(self) -> list[Path]:
        """The group directories, once each where cpu and cpuacct are mounted together."""
        same = self.cpu.parent.parent.resolve() == self.cpuacct.parent.parent.resolve()
        return [self.cpu] if same else [self.cpu, self.cpuacct]

    def create(self) -> None:
        """Make the groups (again, if they exist) and set the quota."""
        for group in self.groups():
            group.mkdir(parents=True, exist_ok=True)
        (self.cpu / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        (self.cpu / "cpu.cfs_quota_us").write_text(f"{quota_us(self.milli)}\n")

    def enter(self) -> None:
        """Move the calling process into the groups (run in the child, before its exec)."""
        pid = f"{os.getpid()}\n"
        for group in self.groups():
            (group / "cgroup.procs").write_text(pid)

    def usage_seconds(self) -> float:
        """CPU time the group's processes have used."""
        return int((self.cpuacct / "cpuacct.usage").read_text()) / 1e9

    def throttled_seconds(self) -> float:
        """Time the quota has held the group's threads back (`cpu.stat`'s `throttled_time`)."""
        stat = dict(line.split() for line in (self.cpu / "cpu.stat").read_text().splitlines())
        return int(stat["throttled_time"]) / 1e9

    def remove(self) -> bool:
        """Kill what is left in the groups and remove them; True once they are gone."""
        gone = True
        for group in self.groups():
            if not group.exists():
                continue
            for pid in _pids(group):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            try:
                group.rmdir()
            except OSError as error:  # busy until the killed processes are reaped
                log.info("cgroup %s not removed yet: %s", group, error)
                gone = False
        return gone


def _pids(group: Path) -> list[int]:
    try:
        return [int(line) for line in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def pod_limit(uid: str, container: dict[str, object], root: Path = ROOT) -> CpuLimit | None:
    """The CPU limit of the container the agent runs for pod `uid`, or None without one."""
    resources = container.get("resources")
    limits = resources.get("limits") if isinstance(resources, dict) else None
    cpu = limits.get("cpu") if isinstance(limits, dict) else None
    if cpu is None:
        return None
    limit = CpuLimit(uid, millicores(str(cpu)), root)
    if not (root / "cpu" / "cpu.cfs_quota_us").exists():
        log.warning(
            "no cgroup v1 cpu controller at %s: pod %s runs without its CPU limit", root, uid
        )
        return None
    return limit
