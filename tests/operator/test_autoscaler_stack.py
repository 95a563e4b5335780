"""The autoscaler's step on real parts: a worker process (this tree's engine) reading input that
arrives steadily in Kafka, the topic's end offsets, and the local API server. With a target
utilization far below what the input needs, the step records its recommendation in status and
creates one Migration to the most instances allowed, owned by the query, its reason annotated.

No operator runs: the step is called as the StreamQuery pass calls it, with the status naming
the worker as the query's one instance, so the Migration is created but not run (and its Event
not posted: kopf posts Events, and kopf does not run). Needs `make up`.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from operator_stack import (
    GROUP,
    MIG,
    PARTITIONS,
    SQ,
    VERSION,
    Cluster,
    feed_steadily,
    nexmark,
    read_stack,
    stream_query,
)
from streamshift_dev import workers
from streamshift_operator.autoscaler import reconcile
from streamshift_operator.autoscaler.reconcile import WINDOWS, autoscale
from streamshift_operator.autoscaler.record import REASON_ANNOTATION
from streamshift_operator.clients.kube import STREAM_QUERIES, Kube
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus

pytestmark = [pytest.mark.stack, pytest.mark.timeout(180)]

TOKEN = "autoscaler-test-token"
PLAN = "nexmark-q8"  # keyed: the autoscaler keeps a global plan (q5's top bid) at one instance
INPUTS = ("person", "auction")
AUTOSCALER = {
    "enabled": True,
    "minParallelism": 1,
    "maxParallelism": 2,
    "targetUtilization": 0.001,  # the worker would have to idle 99.9% of the time
    "metricWindowSeconds": 5,
    "stabilizationSeconds": 0,
}


def current(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    """The query, with this tree's CRDs on the shared API server. Other branches' stack tests
    install theirs, which may not know spec.autoscaler yet: the API server then drops the
    field from what it stores, so it is installed again, and the field given back, if so."""
    cluster.install_crds()
    body = cluster.get(SQ, namespace, name)
    if "autoscaler" not in body["spec"]:
        patch = {"spec": {"autoscaler": AUTOSCALER}}
        cluster.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, SQ, name, patch)
        body = cluster.get(SQ, namespace, name)
    return body


def test_the_step_scales_a_busy_worker_up_by_an_owned_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    announced: list[str] = []  # Events go through kopf's queue, which runs in an operator only
    monkeypatch.setattr(
        reconcile.events, "normal", lambda _body, reason, _m: announced.append(reason)
    )
    stack = read_stack()
    cluster = Cluster(stack.kubeconfig)
    cluster.install_crds()
    namespace = name = f"as-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    services = workers.services()
    topics = [f"{name}-{topic}" for topic in (*INPUTS, "out", "out.dead")]
    workers.create_topics(services, topics, PARTITIONS)
    env = workers.worker_env(
        services, name, PLAN, list(INPUTS), PARTITIONS, TOKEN, "operator-tests"
    )
    log = tmp_path / "worker.log"
    process = workers.start(env, log)
    feeder = threading.Thread(
        target=feed_steadily, args=(stack, name, nexmark(PLAN, 40_000), 30, 0.5)
    )
    try:
        workers.wait_ready(env, process, 60, log)
        feeder.start()
        cluster.create(SQ, namespace, stream_query(name, PLAN, name, stack, autoscaler=AUTOSCALER))
        kube = Kube(cluster.api)
        placed = {"epoch": 0, "instances": [{"id": 0, "pod": "w0", "partitions": [0, 1, 2, 3]}]}
        asyncio.run(kube.patch_status(STREAM_QUERIES, namespace, name, placed))
        deadline = time.monotonic() + 60
        while not cluster.list(MIG, namespace):
            assert time.monotonic() < deadline, str(
                cluster.status(SQ, namespace, name)["autoscaler"]
            )
            body = current(cluster, namespace, name)
            load = workers.control(env, "GET", "/v1/status")[1]["load"]
            spec = StreamQuerySpec.model_validate(body["spec"])
            status = StreamQueryStatus.model_validate(body["status"])
            asyncio.run(autoscale(kube, body, spec, status, {"w0": load}))
            time.sleep(1.0)
        [migration] = cluster.list(MIG, namespace)
        query = cluster.get(SQ, namespace, name)
        assert migration["metadata"]["name"] == f"{name}-autoscale-e0-p2"
        assert migration["metadata"]["ownerReferences"][0]["uid"] == query["metadata"]["uid"]
        assert migration["spec"]["target"] == {"parallelism": 2}
        reason = migration["metadata"]["annotations"][REASON_ANNOTATION]
        assert "records per busy second" in reason
        autoscaler = query["status"]["autoscaler"]
        assert (autoscaler["action"], autoscaler["recommendedParallelism"]) == ("scale-up", 2)
        assert autoscaler["inputRate"] > 0 and autoscaler["trueRate"] > 0
        assert [h["migration"] for h in autoscaler["history"]] == [migration["metadata"]["name"]]
        assert announced == ["AutoscalerRescale"]
    finally:
        WINDOWS.clear()
        process.terminate()
        process.wait(30)
        feeder.join(60)
        cluster.core.delete_namespace(namespace)
        workers.delete_topics(services, topics)
