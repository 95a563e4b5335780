"""Fixtures for tests against the local stack (`make up`): its endpoints come from the env file
that dev/up.sh writes, $STREAMSHIFT_CACHE/run/stack.env."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from .helpers import Stack, read_env


@pytest.fixture(scope="session")
def stack() -> Stack:
    """The stack's endpoints; fails (never skips) when the stack is not up."""
    cache = Path(os.environ.get("STREAMSHIFT_CACHE", Path.home() / ".cache" / "streamshift"))
    path = cache / "run" / "stack.env"
    if not path.exists():
        pytest.fail(f"{path} not found: the local stack is not running; start it with `make up`")
    env = read_env(path)
    return Stack(
        kafka_bootstrap=env["KAFKA_BOOTSTRAP"],
        s3_endpoint=env["S3_ENDPOINT"],
        s3_access_key=env["S3_ACCESS_KEY"],
        s3_secret_key=env["S3_SECRET_KEY"],
        kubeconfig=env["KUBECONFIG"],
        kubectl=env["KUBECTL"],
        node=env["STREAMSHIFT_NODE"],
        pod_logs=Path(env["STREAMSHIFT_POD_LOGS"]),
    )


@pytest.fixture(scope="session")
def core(stack: Stack) -> Any:
    """A CoreV1Api on the local API server."""
    api_client = config.new_client_from_config(config_file=stack.kubeconfig)  # type: ignore[no-untyped-call]
    return client.CoreV1Api(api_client)


@pytest.fixture
def namespace(core: Any) -> Iterator[str]:
    """A fresh namespace, deleted afterwards (the controller manager empties it)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)
