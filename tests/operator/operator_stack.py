"""Helpers of the operator's stack tests: the local stack's endpoints, the CRDs, a namespace with
the Secrets a query needs, the operator run in-process (KopfRunner) and Nexmark input in Kafka.
The bounded wait, the reference and the `read_committed` reader are `support`'s."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from kopf.testing import KopfRunner
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException
from minio import Minio
from streamshift_dev.stack_driver import Stack
from streamshift_dev.workers import stack_env_path
from streamshift_engine.events.batch import Batch
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_operator.crdgen.kinds import KINDS, crd
from support.kafka import produce
from support.waiting import wait_for

GROUP, VERSION, SQ, MIG = "streamshift.io", "v1alpha1", "streamqueries", "migrations"
TOKEN = "operator-test-token"
PARTITIONS = 4


def read_stack() -> Stack:
    """The running local stack's endpoints; the test fails saying how to start it if none runs."""
    path = stack_env_path()
    if not path.exists():
        pytest.fail(f"{path} not found: the local stack is not running; start it with `make up`")
    return Stack.running()


class Cluster:
    """The API server, as the tests use it."""

    def __init__(self, kubeconfig: str) -> None:
        loader: Any = kube_config
        self.api: Any = loader.new_client_from_config(config_file=kubeconfig)
        self.core: Any = client.CoreV1Api(self.api)
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.apps: Any = client.AppsV1Api(self.api)

    def install_crds(self) -> None:
        extensions: Any = client.ApiextensionsV1Api(self.api)
        apply_crds(extensions)
        for kind in KINDS:
            name = crd(kind)["metadata"]["name"]
            wait_for(f"CRD {name} established", partial(_established, extensions, name), 30)

    def secrets(self, namespace: str, stack: Stack) -> None:
        for name, data in {
            "control": {"token": TOKEN},
            "s3": {"access": stack.s3_access_key, "secret": stack.s3_secret_key},
        }.items():
            body = {"metadata": {"name": name}, "stringData": data}
            self.core.create_namespaced_secret(namespace, body)

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name
        )
        return found

    def status(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        return dict(self.get(plural, namespace, name).get("status") or {})

    def list(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        found = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
        return list(found["items"])

    def pods(self, namespace: str) -> dict[str, Any]:
        return {p.metadata.name: p for p in self.core.list_namespaced_pod(namespace).items}


def apply_crds(extensions: Any) -> None:
    """Create the generated CRDs, or replace them with the current generation."""
    for kind in KINDS:
        body = crd(kind)
        name = body["metadata"]["name"]
        try:
            current = extensions.read_custom_resource_definition(name)
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            extensions.replace_custom_resource_definition(name, body)
        except ApiException as error:
            if error.status != 404:
                raise
            extensions.create_custom_resource_definition(body)


def _established(extensions: Any, name: str) -> bool:
    conditions = extensions.read_custom_resource_definition(name).status.conditions or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def stream_query(
    name: str, plan: str, prefix: str, stack: Stack, parallelism: int = 1, **extra: Any
) -> dict[str, Any]:
    """A StreamQuery reading `{prefix}-{input}` topics and writing `{prefix}-out` (an unknown
    plan reads `bid`)."""
    try:
        inputs = [spec.name for spec in builtin(plan).inputs]
    except KeyError:
        inputs = ["bid"]
    spec = {
        "plan": {"builtin": plan},
        "kafka": {"bootstrapServers": stack.kafka},
        "sources": [
            {"name": i, "topic": f"{prefix}-{i}", "partitions": PARTITIONS} for i in inputs
        ],
        "sinks": [{"name": "out", "topic": f"{prefix}-out", "partitions": PARTITIONS}],
        "parallelism": parallelism,
        "snapshot": {
            "endpoint": stack.s3_endpoint,
            "bucket": "operator-tests",
            "intervalSeconds": 2,
            "credentials": {
                "accessKey": {"name": "s3", "key": "access"},
                "secretKey": {"name": "s3", "key": "secret"},
            },
        },
        "controlToken": {"name": "control", "key": "token"},
        **extra,
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "StreamQuery",
        "metadata": {"name": name},
        "spec": spec,
    }


def migration(
    name: str, query: str, protocol: str, target: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    spec = {"queryRef": {"name": query}, "protocol": protocol, "target": target, **extra}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Migration",
        "metadata": {"name": name},
        "spec": spec,
    }


def nexmark(plan: str, count: int, start: int = 0) -> dict[str, Batch]:
    """The plan's inputs among `count` Nexmark events, 200 per second of event time."""
    config = GeneratorConfig(partitions=PARTITIONS, events_per_second=200)
    events = generate(7, start, count, config)
    return {spec.name: events[spec.name] for spec in builtin(plan).inputs}


def produce_inputs(stack: Stack, prefix: str, inputs: dict[str, Batch]) -> None:
    """Each input to its topic `{prefix}-{input}`, one JSON record per event."""
    for name, batch in inputs.items():
        produce(stack.kafka, f"{prefix}-{name}", batch)


@contextmanager
def operator(namespace: str, stack: Stack) -> Iterator[KopfRunner]:
    """The operator in this process, watching `namespace`; its exit is checked afterwards."""
    os.environ["KUBECONFIG"] = stack.kubeconfig
    os.environ["STREAMSHIFT_WORKER_IMAGE"] = "streamshift/worker:test"
    args = ["run", "--standalone", "--namespace", namespace, "-m", "streamshift_operator.handlers"]
    with KopfRunner(args, timeout=60) as runner:
        yield runner
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None, runner.exception


def feed_steadily(
    stack: Stack,
    prefix: str,
    inputs: dict[str, Batch],
    chunks: int,
    every: float,
    hurry: threading.Event | None = None,
) -> None:
    """Produce the inputs in `chunks` slices of event time, one slice every `every` seconds
    (each slice a prefix of what is left in every partition: event time grows with offsets).
    Once `hurry` is set (the migration the flow was for has finished), the slices left follow
    at once."""
    low = min(int(b.ts.min()) for b in inputs.values())
    high = max(int(b.ts.max()) for b in inputs.values()) + 1
    bounds = [low + (high - low) * i // chunks for i in range(chunks + 1)]
    hurry = hurry or threading.Event()
    for begin, end in itertools.pairwise(bounds):
        chunk = {n: b.take((b.ts >= begin) & (b.ts < end)) for n, b in inputs.items()}
        produce_inputs(stack, prefix, chunk)
        hurry.wait(every)


def snapshots(stack: Stack, prefix: str) -> list[str]:
    """The object names under `prefix` in the tests' snapshot bucket."""
    host = stack.s3_endpoint.removeprefix("http://")
    store = Minio(
        host, access_key=stack.s3_access_key, secret_key=stack.s3_secret_key, secure=False
    )
    if not store.bucket_exists("operator-tests"):
        return []
    listed = store.list_objects("operator-tests", prefix=prefix, recursive=True)
    return [str(o.object_name) for o in listed]


def ready(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The query's status once it is Running at its current generation, else None."""
    body = cluster.get(SQ, namespace, name)
    status = body.get("status") or {}
    current = status.get("observedGeneration") == body["metadata"]["generation"]
    return status if current and status.get("phase") == "Running" else None


def finished(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The migration's status once it has ended (Succeeded, Failed or RolledBack), else None."""
    status = cluster.status(MIG, namespace, name)
    return status if status.get("phase") in ("Succeeded", "Failed", "RolledBack") else None


def namespace_gone(cluster: Cluster, name: str) -> bool:
    try:
        cluster.core.read_namespace(name)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False
