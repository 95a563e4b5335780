"""Spark streams a step in the event rate into Kafka: one job a second writes the events whose
event time is due, and the topics hold exactly the generator's events, their timestamps
following the step (500 events a second of event time, then 1,500). Needs `make up`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from confluent_kafka import Consumer, TopicPartition
from streamshift_engine.events.wire import encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka
from streamshift_engine.spark.kafka import delete_topics, ensure_topics, stack_env
from streamshift_engine.spark.pacing import paced

pytestmark = pytest.mark.stack
PARTITIONS = 4
STEP = GeneratorConfig(
    partitions=PARTITIONS,
    events_per_second=500,
    rate_shape="step",
    next_events_per_second=1500,
    step_at_s=2,
)


@pytest.fixture
def topics() -> Iterator[dict[str, str]]:
    bootstrap = stack_env()["KAFKA_BOOTSTRAP"]
    prefix = f"paced-{uuid.uuid4().hex[:8]}-"
    named = {k: f"{prefix}{k}" for k in ("person", "auction", "bid")}
    ensure_topics(bootstrap, named.values(), PARTITIONS)
    yield named
    delete_topics(bootstrap, list(named.values()))


def values(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    consumer.assign([TopicPartition(topic, partition, 0)])
    got: list[bytes] = []
    while len(got) < count:
        message = consumer.poll(30)
        assert message is not None, f"timed out reading {topic}:{partition} at {len(got)}"
        assert message.error() is None, message.error()
        got.append(bytes(message.value() or b""))
    consumer.close()
    return got


def test_spark_streams_a_step_in_the_event_rate(spark: Any, topics: dict[str, str]) -> None:
    bootstrap = stack_env()["KAFKA_BOOTSTRAP"]
    spec = GenerateSpec(3, 0, 0, "json", config=STEP, topics=topics)
    log = paced(spec, 4.0, lambda s: generate_to_kafka(spark, s, bootstrap))
    assert [n for _, n in log] == [500, 500, 1500, 1500]
    events = generate(3, 0, 4000, STEP)
    times = np.sort(np.concatenate([b.ts for b in events.values()])) - STEP.base_time_ms
    assert np.bincount(times // 1000).tolist() == [500, 500, 1500, 1500]
    for kind, batch in events.items():
        for p in range(PARTITIONS):
            expected = encode_json(batch.take(batch.partition == p))
            assert values(bootstrap, topics[kind], p, len(expected)) == expected
