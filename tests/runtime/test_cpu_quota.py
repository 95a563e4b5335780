"""The worker's CPU quota in cores, read from its cgroup as a pod's CPU limit sets it."""

from __future__ import annotations

from pathlib import Path

from streamshift_engine.runtime.cpu_quota import cores

V1 = """12:memory:/streamshift/pod-1
4:cpu,cpuacct:/streamshift/pod-1
0::/
"""


def v1_group(root: Path, group: str, quota: int, period: int = 100_000) -> None:
    directory = root / "cpu" / group
    directory.mkdir(parents=True)
    (directory / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (directory / "cpu.cfs_period_us").write_text(f"{period}\n")


def membership(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cgroup"
    path.write_text(text)
    return path


def test_a_cgroup_v1_quota_of_10_ms_per_100_ms_is_a_tenth_of_a_core(tmp_path: Path) -> None:
    v1_group(tmp_path / "sys", "", -1)  # the root group: unlimited
    v1_group(tmp_path / "sys", "streamshift/pod-1", 10_000)
    assert cores(tmp_path / "sys", membership(tmp_path, V1)) == 0.1


def test_no_quota_is_none(tmp_path: Path) -> None:
    v1_group(tmp_path / "sys", "streamshift/pod-1", -1)
    assert cores(tmp_path / "sys", membership(tmp_path, V1)) is None
    assert cores(tmp_path / "none", tmp_path / "missing") is None


def test_a_container_sees_its_own_group_at_the_mount_top(tmp_path: Path) -> None:
    v1_group(tmp_path / "sys", "", 250_000)  # cgroup namespace: the host path is not there
    assert cores(tmp_path / "sys", membership(tmp_path, V1)) == 2.5


def test_cgroup_v2_cpu_max(tmp_path: Path) -> None:
    group = tmp_path / "sys" / "kubepods" / "pod-1"
    group.mkdir(parents=True)
    (group / "cpu.max").write_text("50000 100000\n")
    assert cores(tmp_path / "sys", membership(tmp_path, "0::/kubepods/pod-1\n")) == 0.5
    (group / "cpu.max").write_text("max 100000\n")
    assert cores(tmp_path / "sys", membership(tmp_path, "0::/kubepods/pod-1\n")) is None
