"""Fixtures of the operator's stack tests: the local stack's endpoints, its API server with the
CRDs installed, and a namespace per test with the Secrets a query needs (what a failed test left
there is written to a file first)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from call_report import failure
from failure_dump import dump
from operator_stack import Cluster, Stack, read_stack


@pytest.fixture(scope="module")
def stack() -> Stack:
    return read_stack()


@pytest.fixture(scope="module")
def cluster(stack: Stack) -> Cluster:
    found = Cluster(stack.kubeconfig)
    found.install_crds()
    return found


@pytest.fixture
def namespace(
    cluster: Cluster, stack: Stack, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> Iterator[str]:
    """A namespace with the query's Secrets; when the test failed, what it left there is written
    to a file (`failure_dump`) before the namespace is deleted."""
    name = f"op-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": name}})
    cluster.secrets(name, stack)
    yield name
    failed = failure(request)
    if failed is not None:
        path = dump(cluster, stack, name, request.node.nodeid, failed, caplog.text)
        print(f"failure evidence: {path}")
    cluster.core.delete_namespace(name)
