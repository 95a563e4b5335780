"""A verification that is not exact, through the operator on the local stack: the migration
Succeeds (the hand-off happened), but its Verified condition is False with the reason, a Warning
Event says so, its message says so, and the query's `status.lastMigration.verified` is false."""

from __future__ import annotations

import threading
import time

import orjson
import pytest
from confluent_kafka import Producer
from operator_stack import (
    MIG,
    SQ,
    Cluster,
    Stack,
    feed_steadily,
    finished,
    migration,
    nexmark,
    operator,
    ready,
    stream_query,
)
from support.waiting import wait_for

pytestmark = pytest.mark.stack


def test_output_the_reference_does_not_have_fails_the_verification(
    cluster: Cluster,
    namespace: str,
    stack: Stack,
) -> None:
    inputs = nexmark("nexmark-q8", 40_000)
    first = min(int(batch.ts.min()) for batch in inputs.values())
    bogus = {
        "id": f"nexmark-q8|{first}|{first + 1}|bogus",
        "window_start": first,
        "window_end": first + 1,
    }
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", "nexmark-q8", namespace, stack, 2))
        wait_for("q Running", lambda: ready(cluster, namespace, "q"), 60)
        hurry = threading.Event()  # the rest of the input at once when the migration finished
        feeder = threading.Thread(
            target=feed_steadily, args=(stack, namespace, inputs, 40, 0.75, hurry)
        )
        feeder.start()
        time.sleep(3)
        producer = Producer({"bootstrap.servers": stack.kafka})
        producer.produce(f"{namespace}-out", orjson.dumps(bogus), partition=0)
        assert producer.flush(30) == 0
        move = migration("move", "q", "state-transfer", {"parallelism": 3}, verify=True)
        cluster.create(MIG, namespace, move)
        status = wait_for("move finished", lambda: finished(cluster, namespace, "move"), 180)
        hurry.set()
        feeder.join(60)
    assert status["phase"] == "Succeeded", status
    check = status["verification"]
    assert check["exact"] is False and check["extra"] == 1, check
    assert check["missing"] == check["differing"] == check["duplicate"] == 0, check
    assert bogus["id"] in check["message"]
    verified = {c["type"]: c for c in status["conditions"]}["Verified"]
    assert (verified["status"], verified["reason"]) == ("False", "NotExact")
    assert "not exact" in status["message"]
    warnings = [
        e
        for e in cluster.core.list_namespaced_event(namespace).items
        if e.involved_object.name == "move" and e.type == "Warning"
    ]
    assert [e.reason for e in warnings] == ["NotExact"]
    last = cluster.get(SQ, namespace, "q")["status"]["lastMigration"]
    assert (last["name"], last["phase"], last["verified"]) == ("move", "Succeeded", False)
