"""Helpers shared by the stack tests: the stack's endpoints and a bounded wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Stack:
    """The running local stack's endpoints."""

    kafka_bootstrap: str
    s3_endpoint: str
    s3_access_key: str
    s3_secret_key: str
    kubeconfig: str
    kubectl: str
    node: str
    pod_logs: Path


def read_env(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of PATH (comments and blank lines skipped)."""
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.3) -> Any:
    """Poll CHECK until it returns something truthy; fail naming WHAT after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
