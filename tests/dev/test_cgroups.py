"""A pod's CPU limit as cgroup files: quantities to quotas, where the groups go, when a pod gets
none. On a directory standing in for /sys/fs/cgroup (the kernel's own groups:
tests/stack/test_cpu_limits_stack.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamshift_dev.cgroups import PERIOD_US, CpuLimit, millicores, pod_limit, quota_us


@pytest.mark.parametrize(
    ("quantity", "milli"),
    [
        ("250m", 250),
        ("0.25", 250),
        ("1", 1000),
        ("2", 2000),
        ("1.5", 1500),
        (".1", 100),
        ("0.0001", 1),
        ("100m", 100),
    ],
)
def test_cpu_quantities_in_millicores(quantity: str, milli: int) -> None:
    assert millicores(quantity) == milli


@pytest.mark.parametrize("quantity", ["", "m", "1Gi", "-1", "a quarter"])
def test_what_is_not_a_cpu_quantity_is_refused(quantity: str) -> None:
    with pytest.raises(ValueError, match="not a CPU quantity"):
        millicores(quantity)


def test_the_quota_is_the_share_of_the_kubelets_period() -> None:
    assert PERIOD_US == 100_000
    assert quota_us(250) == 25_000
    assert quota_us(2000) == 200_000
    assert quota_us(1) == 1_000  # the kernel's smallest


def fake_root(tmp_path: Path, together: bool = False) -> Path:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    if together:
        (tmp_path / "cpuacct").symlink_to(tmp_path / "cpu")
    else:
        (tmp_path / "cpuacct").mkdir()
    return tmp_path


def container(cpu: str | None) -> dict[str, object]:
    limits = {"memory": "1Gi"} if cpu is None else {"memory": "1Gi", "cpu": cpu}
    return {"name": "main", "resources": {"limits": limits}}


def test_a_limited_pod_gets_a_quota_under_the_streamshift_group(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    limit = pod_limit("uid-1", container("250m"), root)
    assert isinstance(limit, CpuLimit)
    limit.create()
    group = root / "cpu" / "streamshift" / "uid-1"
    assert (group / "cpu.cfs_quota_us").read_text() == "25000\n"
    assert (group / "cpu.cfs_period_us").read_text() == "100000\n"
    assert (root / "cpuacct" / "streamshift" / "uid-1").is_dir()
    assert limit.groups() == [group, root / "cpuacct" / "streamshift" / "uid-1"]


def test_the_throttled_time_is_read_from_the_groups_cpu_stat(tmp_path: Path) -> None:
    limit = CpuLimit("uid-3", 100, fake_root(tmp_path))
    limit.create()
    (limit.cpu / "cpu.stat").write_text(
        "nr_periods 120\nnr_throttled 7\nthrottled_time 250000000\n"
    )
    assert limit.throttled_seconds() == 0.25


def test_cpu_and_cpuacct_mounted_together_make_one_group(tmp_path: Path) -> None:
    limit = pod_limit("uid-2", container("1"), fake_root(tmp_path, together=True))
    assert limit is not None and limit.groups() == [tmp_path / "cpu" / "streamshift" / "uid-2"]


def test_no_cpu_limit_or_no_cpu_controller_means_no_group(tmp_path: Path) -> None:
    assert pod_limit("uid-3", container(None), fake_root(tmp_path)) is None
    assert pod_limit("uid-3", {"name": "main"}, tmp_path) is None
    assert pod_limit("uid-3", container("1"), tmp_path / "elsewhere") is None
