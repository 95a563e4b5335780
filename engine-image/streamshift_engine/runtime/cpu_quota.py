"""The CPU quota this process runs under, in cores: a pod's `resources.limits.cpu` as the kubelet
(or the local node agent) enforces it, a CFS quota over a period in the process's cpu cgroup.

cgroup v1: `cpu.cfs_quota_us` over `cpu.cfs_period_us` in the group `/proc/self/cgroup` names
for the `cpu` controller, under `<root>/cpu`; a container that sees only its own group (a cgroup
namespace) finds the files at the mount's top instead. cgroup v2: `cpu.max` (`<quota> <period>`
or `max <period>`) in the unified group. No quota (-1, `max`), or no cgroup files, is None: the
process may use what the machine gives it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")


def cores(root: Path = ROOT, membership: Path = SELF) -> float | None:
    """The cores the process's CPU quota allows, or None when it has none."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return _v1(root / "cpu", group.lstrip("/"))
        if not controllers:
            unified = group.lstrip("/")
    return _v2(root, unified) if unified is not None else None


def _v1(mount: Path, group: str) -> float | None:
    for directory in (mount / group, mount):
        try:
            quota = int((directory / "cpu.cfs_quota_us").read_text())
            period = int((directory / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return quota / period if quota > 0 and period > 0 else None
    return None


def _v2(root: Path, group: str) -> float | None:
    for directory in (root / group, root):
        try:
            quota, period = (directory / "cpu.max").read_text().split()
        except (OSError, ValueError):
            continue
        return int(quota) / int(period) if quota != "max" and int(period) > 0 else None
    return None
