"""Helpers shared by the stack tests: the stack's endpoints (the bounded wait is
`support.waiting`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
