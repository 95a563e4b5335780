"""The StreamQuery's dependency checks against the local stack's Kafka and MinIO: topics as the
spec says or the difference named, an unreachable bootstrap address or S3 endpoint named with
the field to fix, refused S3 credentials; the snapshot age judged against the interval."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from operator_stack import Stack, read_stack, stream_query
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.streamquery.dependencies import (
    KAFKA,
    SNAPSHOTS,
    STORE,
    Finding,
    kafka,
    snapshots,
    store,
)

NOW = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def stack() -> Stack:
    return read_stack()


def spec(stack: Stack, prefix: str, partitions: int = 4, **changes: Any) -> StreamQuerySpec:
    body = stream_query("q", "nexmark-q5", prefix, stack)["spec"]
    for source in body["sources"]:
        source["partitions"] = partitions
    for path, value in changes.items():
        section, field = path.split("__")
        body[section][field] = value
    return StreamQuerySpec.model_validate(body)


def topics(stack: Stack, prefix: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    wanted = [NewTopic(f"{prefix}-{n}", partitions, 1) for n in ("bid", "out")]
    for future in admin.create_topics(wanted).values():
        future.result(30)


@pytest.mark.stack
def test_kafka_with_topics_as_specified_or_the_difference_named(stack: Stack) -> None:
    prefix = f"dep-{uuid.uuid4().hex[:8]}"
    assert kafka(spec(stack, prefix), placed=False).ok  # the operator creates them
    assert kafka(spec(stack, prefix), placed=True) == Finding(
        KAFKA,
        False,
        "TopicsMismatch",
        f"topic {prefix}-bid (spec.sources) does not exist; "
        f"topic {prefix}-out (spec.sinks) does not exist",
    )
    topics(stack, prefix, 4)
    assert kafka(spec(stack, prefix), placed=True).ok
    found = kafka(spec(stack, prefix, partitions=8), placed=False)
    assert (found.ok, found.reason) == (False, "TopicsMismatch")
    assert found.message == (
        f"topic {prefix}-bid has 4 partitions, spec.sources says 8: fix spec.sources or the topic"
    )


@pytest.mark.stack
def test_an_unreachable_bootstrap_address_is_named(stack: Stack) -> None:
    found = kafka(spec(stack, "dep", kafka__bootstrapServers="127.0.0.1:9"), placed=False)
    assert (found.condition, found.ok, found.reason) == (KAFKA, False, "KafkaUnreachable")
    assert found.message.startswith(
        "Kafka at 127.0.0.1:9 (spec.kafka.bootstrapServers) is unreachable: "
    )


@pytest.mark.stack
def test_the_snapshot_store_reachable_unreachable_or_refusing(stack: Stack) -> None:
    access, secret = stack.s3_access_key, stack.s3_secret_key
    assert store(spec(stack, "dep"), access, secret) == Finding(
        STORE, True, "SnapshotStoreReachable", f"{stack.s3_endpoint} answers"
    )
    away = store(spec(stack, "dep", snapshot__endpoint="http://127.0.0.1:9"), access, secret)
    assert (away.ok, away.reason) == (False, "SnapshotStoreUnreachable")
    assert away.message.startswith(
        "the snapshot store at http://127.0.0.1:9 (spec.snapshot.endpoint) is unreachable: "
    )
    refused = store(spec(stack, "dep"), access, "not-the-secret")
    assert (refused.ok, refused.reason) == (False, "SnapshotStoreRefused")


def test_the_last_snapshot_is_judged_against_the_interval() -> None:
    assert snapshots(None, None, 30, NOW).ok
    assert snapshots(NOW - timedelta(seconds=80), None, 30, NOW) == Finding(
        SNAPSHOTS, True, "SnapshotsRecent", "the last snapshot is 80 s old"
    )
    assert snapshots(NOW - timedelta(seconds=95), None, 30, NOW) == Finding(
        SNAPSHOTS,
        False,
        "SnapshotsStale",
        "no new snapshot for 95 s (spec.snapshot.intervalSeconds is 30)",
    )
    assert not snapshots(NOW - timedelta(seconds=61), None, 2, NOW).ok  # at least 60 s
    assert snapshots(None, NOW - timedelta(seconds=30), 2, NOW).ok  # running for 30 s
    assert snapshots(None, NOW - timedelta(seconds=70), 2, NOW) == Finding(
        SNAPSHOTS,
        False,
        "SnapshotsStale",
        "no snapshot for 70 s (spec.snapshot.intervalSeconds is 2)",
    )
