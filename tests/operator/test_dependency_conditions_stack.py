"""A StreamQuery's dependencies in its status, on the local stack (operator in-process): a topic
with fewer partitions than the query's, an unreachable bootstrap address and an unreachable S3
endpoint each make the query Degraded with the dependency's condition, its reason and message,
and a Warning Event. Before, the first two kept an empty phase (the reason only in the operator's
log) and the third said Deploying and Degraded=False while the workers crash-looped."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from operator_stack import SQ, Cluster, Stack, operator, stream_query, wait_for

pytestmark = pytest.mark.stack


def condition(cluster: Cluster, namespace: str, name: str, kind: str) -> dict[str, Any] | None:
    status = cluster.status(SQ, namespace, name)
    found = [c for c in status.get("conditions") or [] if c["type"] == kind]
    return found[0] if found else None


def degraded_by(
    cluster: Cluster, namespace: str, name: str, kind: str, reason: str
) -> dict[str, Any] | None:
    status = cluster.status(SQ, namespace, name)
    found = condition(cluster, namespace, name, kind)
    degraded = condition(cluster, namespace, name, "Degraded")
    if status.get("phase") != "Degraded" or found is None or degraded is None:
        return None
    if (found["status"], found["reason"]) != ("False", reason) or degraded["status"] != "True":
        return None
    return {"status": status, "condition": found, "degraded": degraded}


def warnings(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str]]:
    found = cluster.core.list_namespaced_event(namespace).items
    return [
        (e.reason, e.message)
        for e in found
        if e.type == "Warning" and e.involved_object.name == name
    ]


def check(cluster: Cluster, namespace: str, name: str, kind: str, reason: str, says: str) -> None:
    seen = wait_for(
        f"{name} Degraded by {kind}",
        lambda: degraded_by(cluster, namespace, name, kind, reason),
        60,
    )
    assert says in seen["condition"]["message"], seen
    assert seen["degraded"]["reason"] == reason and says in seen["status"]["message"], seen
    wait_for(
        f"a Warning Event {reason} on {name}",
        lambda: [m for r, m in warnings(cluster, namespace, name) if r == reason and says in m],
        30,
    )


def test_topics_kafka_and_s3_problems_are_conditions_and_warning_events(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    for future in admin.create_topics([NewTopic(f"{namespace}-few-bid", 4, 1)]).values():
        future.result(30)
    few = stream_query("few", "nexmark-q5", f"{namespace}-few", stack)
    few["spec"]["sources"][0]["partitions"] = 8
    away = stream_query("away", "nexmark-q5", f"{namespace}-away", stack)
    away["spec"]["kafka"]["bootstrapServers"] = "127.0.0.1:9"
    nos3 = stream_query("nos3", "nexmark-q5", f"{namespace}-nos3", stack)
    nos3["spec"]["snapshot"]["endpoint"] = "http://127.0.0.1:9"
    with operator(namespace, stack):
        for body in (few, away, nos3):
            cluster.create(SQ, namespace, body)
        check(
            cluster,
            namespace,
            "few",
            "KafkaReady",
            "TopicsMismatch",
            f"topic {namespace}-few-bid has 4 partitions, spec.sources says 8",
        )
        check(
            cluster,
            namespace,
            "away",
            "KafkaReady",
            "KafkaUnreachable",
            "Kafka at 127.0.0.1:9 (spec.kafka.bootstrapServers) is unreachable",
        )
        check(
            cluster,
            namespace,
            "nos3",
            "SnapshotStoreReady",
            "SnapshotStoreUnreachable",
            "the snapshot store at http://127.0.0.1:9 (spec.snapshot.endpoint) is unreachable",
        )
        ok = condition(cluster, namespace, "nos3", "KafkaReady")
        assert ok is not None and ok["status"] == "True", ok
