"""The Helm chart rendered by the stack's helm binary, for the tests that check the chart, the
images it names and its install on the stack."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm/streamshift"
CACHE = Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache" / "streamshift"))


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the stack's helm (installed by `make setup`)."""
    binary = CACHE / "bin" / "helm"
    if not binary.exists():
        pytest.fail(f"{binary} not found: install it with `make setup`")
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60)


def render(*settings: str, namespace: str = "ops") -> list[dict[str, Any]]:
    """The chart's objects for `--set` SETTINGS, in release `rel` of NAMESPACE."""
    sets = [arg for setting in settings for arg in ("--set", setting)]
    done = helm("template", "rel", str(CHART), "--namespace", namespace, *sets)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [deployment] = of_kind(objects, "Deployment")
    [found] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(found)
