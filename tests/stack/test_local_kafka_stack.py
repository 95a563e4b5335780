"""The local Kafka broker (KRaft, one node): produce, and consume in a consumer group."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .helpers import Stack

pytestmark = pytest.mark.stack


def test_produce_and_consume_in_a_group(stack: Stack) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)

    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "enable.idempotence": True})
    sent = {f"value-{i}" for i in range(300)}
    for i, value in enumerate(sorted(sent)):
        producer.produce(topic, key=f"key-{i % 17}", value=value)
    assert producer.flush(30) == 0

    conf = {
        "bootstrap.servers": stack.kafka_bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    consumer = Consumer(conf)
    consumer.subscribe([topic])
    got: list[str] = []
    for _ in range(120):
        for msg in consumer.consume(num_messages=500, timeout=0.5):
            assert msg.error() is None, msg.error()
            got.append(msg.value().decode())
        if len(got) >= len(sent):
            break
    consumer.commit(asynchronous=False)
    assignment = consumer.assignment()
    consumer.close()
    assert sorted(got) == sorted(sent)
    assert {tp.partition for tp in assignment} == {0, 1, 2}

    # the group's committed offsets cover every record: a new member of the group reads nothing
    check = Consumer(conf)
    committed = check.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    assert sum(tp.offset for tp in committed) == len(sent)
    check.close()
