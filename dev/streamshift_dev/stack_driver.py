"""StreamQuery and Migration objects on the local stack, driven as an operator's user drives them:
shared by `make verify-runtime` (`bench.verify_runtime`) and its stack test.

The operator runs as its own process (`kopf run`, the code users deploy) watching every
namespace that matches a pattern; `Kube` applies CRDs, namespaces, Secrets, StreamQuery and
Migration objects and reads their status; records are produced to given partitions in a given
order (so Kafka offsets are positions in that order) and read back `read_committed`, with their
headers (the dead-letter topic says why each record was dropped in them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException
from minio import Minio
from streamshift_operator.crdgen.kinds import KINDS, crd
from streamshift_operator.resources.pods import CONTROL_PORT

from streamshift_dev.workers import free_port, stack_env

GROUP, VERSION, SQ, MIG = "streamshift.io", "v1alpha1", "streamqueries", "migrations"
TOKEN = "verify-runtime-token"
BUCKET = "verify-runtime"
TERMINAL = ("Succeeded", "Failed", "RolledBack")
SNAPSHOT_S = 10
"""Seconds between a worker's periodic snapshots: a few per case (every 2 s, the snapshots of
ten cases at once kept MinIO at a fifth of a core)."""


@dataclass(frozen=True)
class Stack:
    """The local stack's endpoints (`make up` wrote them to stack.env)."""

    kafka: str
    s3_endpoint: str
    s3_access_key: str
    s3_secret_key: str
    kubeconfig: str

    @classmethod
    def running(cls) -> Stack:
        env = stack_env()
        return cls(
            env["KAFKA_BOOTSTRAP"],
            env["S3_ENDPOINT"],
            env["S3_ACCESS_KEY"],
            env["S3_SECRET_KEY"],
            env["KUBECONFIG"],
        )


class TimedOut(Exception):
    """A bounded wait ran out; the message says what for and what was last seen."""


def wait_for(what: str, check: Callable[[], Any], timeout: float, every: float = 0.3) -> Any:
    """`check()`'s first truthy answer, polled every `every` seconds for at most `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise TimedOut(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


class Kube:
    """The API server as a user of the operator sees it."""

    def __init__(self, stack: Stack) -> None:
        loader: Any = kube_config
        self.api: Any = loader.new_client_from_config(config_file=stack.kubeconfig)
        self.core: Any = client.CoreV1Api(self.api)
        self.custom: Any = client.CustomObjectsApi(self.api)
        self.stack = stack

    def install_crds(self) -> None:
        """Create the generated CRDs, or replace them with the current generation."""
        extensions: Any = client.ApiextensionsV1Api(self.api)
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
        for kind in KINDS:
            name = crd(kind)["metadata"]["name"]
            wait_for(f"CRD {name} established", partial(self._established, name), 30)

    def _established(self, name: str) -> bool:
        extensions: Any = client.ApiextensionsV1Api(self.api)
        conditions = extensions.read_custom_resource_definition(name).status.conditions or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    def namespace(self, name: str) -> None:
        """A namespace with the Secrets a query needs (control token, S3 keys)."""
        self.core.create_namespace({"metadata": {"name": name}})
        for secret, data in {
            "control": {"token": TOKEN},
            "s3": {"access": self.stack.s3_access_key, "secret": self.stack.s3_secret_key},
        }.items():
            body = {"metadata": {"name": secret}, "stringData": data}
            self.core.create_namespaced_secret(name, body)

    def delete_namespace(self, name: str, timeout: float = 60.0) -> None:
        """Delete the namespace and wait until it is gone (its pods' processes ended)."""
        try:
            self.core.delete_namespace(name)
        except ApiException as error:
            if error.status != 404:
                raise
        wait_for(f"namespace {name} gone", lambda: not self._exists(name), timeout, every=1.0)

    def _exists(self, name: str) -> bool:
        try:
            self.core.read_namespace(name)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)

    def status(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        found = self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        return dict(found.get("status") or {})

    def running(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The query's status once it is Running with its current spec."""
        found = self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, SQ, name)
        status = dict(found.get("status") or {})
        current = status.get("observedGeneration") == found["metadata"]["generation"]
        return status if current and status.get("phase") == "Running" else None

    def pods(self, namespace: str) -> list[str]:
        return sorted(p.metadata.name for p in self.core.list_namespaced_pod(namespace).items)

    def worker_states(self, namespace: str) -> list[str]:
        """What each worker pod of `namespace` says of itself (`/v1/status`: phase, partitions,
        offsets, watermarks, migration roles), one line each: why a migration waits."""
        lines = []
        for pod in self.core.list_namespaced_pod(namespace).items:
            name, ip = pod.metadata.name, pod.status.pod_ip
            request = urllib.request.Request(
                f"http://{ip}:{CONTROL_PORT}/v1/status",
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
            try:
                with urllib.request.urlopen(request, timeout=12) as response:
                    report = json.loads(response.read())
            except (OSError, ValueError) as error:
                lines.append(f"{name}: no status ({error})")
                continue
            keep = ("phase", "partitions", "offsets", "watermark", "committed_watermark", "roles")
            lines.append(f"{name}: {json.dumps({k: report.get(k) for k in keep})}")
        return lines

    def warnings(self, namespace: str, name: str) -> list[str]:
        events = self.core.list_namespaced_event(namespace).items
        return [
            str(e.message) for e in events if e.involved_object.name == name and e.type == "Warning"
        ]


def stream_query(
    name: str,
    plan: dict[str, Any],
    inputs: Iterable[str],
    prefix: str,
    partitions: int,
    parallelism: int,
    stack: Stack,
) -> dict[str, Any]:
    """A StreamQuery of the inline `plan` reading `{prefix}-{input}` and writing `{prefix}-out`
    (its dead letters go to `{prefix}-out.dead`), snapshots under `{namespace}/q/`
    (retained: no finalizer holds the namespace's deletion; `delete_snapshots` removes them)."""
    spec = {
        "plan": {"inline": plan},
        "kafka": {"bootstrapServers": stack.kafka},
        "sources": [
            {"name": i, "topic": f"{prefix}-{i}", "partitions": partitions} for i in inputs
        ],
        "sinks": [{"name": "out", "topic": f"{prefix}-out", "partitions": partitions}],
        "parallelism": parallelism,
        "snapshot": {
            "endpoint": stack.s3_endpoint,
            "bucket": BUCKET,
            "intervalSeconds": SNAPSHOT_S,
            "credentials": {
                "accessKey": {"name": "s3", "key": "access"},
                "secretKey": {"name": "s3", "key": "secret"},
            },
        },
        "controlToken": {"name": "control", "key": "token"},
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "StreamQuery",
        "metadata": {"name": name},
        "spec": spec,
    }


def migration(name: str, query: str, protocol: str, target: dict[str, Any]) -> dict[str, Any]:
    """A verified Migration of `query` by `protocol` to `target`."""
    spec = {"queryRef": {"name": query}, "protocol": protocol, "target": target, "verify": True}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Migration",
        "metadata": {"name": name},
        "spec": spec,
    }


class OperatorProcess:
    """The operator as users run it (`kopf run`), watching the namespaces matching `pattern`
    (or each of a list of names); its output goes to `log`.

    Kopf serves only the namespaces it has seen, named exactly or by a glob alike: it lists the
    namespaces, then starts a watch of them with a listing of its own whose items it ignores, so
    a namespace created between the two goes unseen until it next changes (a StreamQuery was
    first handled 120 s late, as its namespace was deleted; kopf 1.45.2's
    `observation.namespace_observer`). Create a namespace before the operator that watches it
    starts, or once it has run a while."""

    def __init__(self, stack: Stack, pattern: str | Sequence[str], log: Path) -> None:
        kopf = Path(sys.executable).parent / "kopf"
        health = f"http://127.0.0.1:{free_port()}/healthz"
        names = [pattern] if isinstance(pattern, str) else list(pattern)
        watched = [arg for name in names for arg in ("--namespace", name)]
        args = [str(kopf), "run", "--standalone", *watched, "--liveness", health]
        self.log = log
        self.process = subprocess.Popen(
            [*args, "-m", "streamshift_operator.handlers"],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": stack.kubeconfig},
        )
        wait_for("the operator's liveness endpoint", lambda: _answers(health), 60, every=0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _store(stack: Stack) -> Minio:
    host = stack.s3_endpoint.removeprefix("http://")
    return Minio(host, access_key=stack.s3_access_key, secret_key=stack.s3_secret_key, secure=False)


def ensure_bucket(stack: Stack) -> None:
    """The snapshot bucket (a StreamQuery needs it to exist)."""
    store = _store(stack)
    if not store.bucket_exists(BUCKET):
        store.make_bucket(BUCKET)


def delete_snapshots(stack: Stack, prefix: str) -> None:
    """Remove every snapshot object under `prefix` in the bucket."""
    store = _store(stack)
    for item in store.list_objects(BUCKET, prefix=prefix, recursive=True):
        store.remove_object(BUCKET, str(item.object_name))


UNSENT_S = 90
"""How long `produce` waits for its records: a chaos scenario's broker, stopped 8 s, takes a
while to start again on a loaded machine and then to load its transaction and producer-id
coordinators ("Coordinator load in progress"): 30 s was too short once, at load 3."""


def produce(stack: Stack, records: Iterable[tuple[str, int, bytes]]) -> None:
    """Write `(topic, partition, value)` records in the order given (idempotent producer: no
    gaps, so each partition's offsets are the positions of its records in that order)."""
    producer = Producer(
        {"bootstrap.servers": stack.kafka, "linger.ms": 2, "enable.idempotence": True}
    )
    for topic, partition, value in records:
        producer.produce(topic, value, partition=partition)
        producer.poll(0)
    if producer.flush(UNSENT_S):
        raise TimedOut(f"records still unsent after {UNSENT_S} s")


Headers = dict[str, str]


def read_committed(
    stack: Stack, topic: str, expect: int, timeout: float, quiet: float = 2.0
) -> list[tuple[bytes, Headers]]:
    """The committed records of `topic` (value and headers) once at least `expect` arrived and
    `quiet` seconds passed without more, or at the deadline."""
    consumer = Consumer(
        {
            "bootstrap.servers": stack.kafka,
            "group.id": f"verify-runtime-{time.time_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[tuple[bytes, Headers]] = []
    deadline = time.monotonic() + timeout
    calm = time.monotonic() + quiet
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.3):
                if message.error() is None:
                    headers = _headers(message.headers())
                    records.append((message.value() or b"", headers))
                    calm = time.monotonic() + quiet
            if len(records) >= expect and time.monotonic() > calm:
                break
    finally:
        consumer.close()
    return records


def _headers(raw: Any) -> Headers:
    pairs = raw.items() if isinstance(raw, dict) else raw or []
    return {str(k): (v.decode() if isinstance(v, bytes) else str(v or "")) for k, v in pairs}


def delete_topics(stack: Stack, prefix: str) -> None:
    """Delete every topic whose name starts with `prefix`."""
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    if names:
        for future in admin.delete_topics(names).values():
            try:
                future.result(30)
            except KafkaException:  # gone already: what we want
                continue
