"""The elastic scenario's Spark load driver: the records it counts are the persons and auctions
among the events it wrote, and (on the stack) what a local Spark wrote under a step is exactly
the events `fed()` hands the reference, each partition in index order."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from streamshift_dev import elastic_load, elastic_spark
from streamshift_engine.events.wire import encode_json
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.spark.kafka import delete_topics, stack_env

PARTITIONS = 4
STEPPED = 500 * 2 + 2000 * 2  # the first 4 s of the step's event time


@pytest.mark.parametrize(("start", "count"), [(0, 0), (0, 1), (3, 9), (1234, 5001)])
def test_records_among_counts_the_persons_and_auctions_generated(start: int, count: int) -> None:
    generator = elastic_load.config(PARTITIONS, 1000)
    events = generate(elastic_load.SEED, start, count, generator)
    expected = len(events["person"]) + len(events["auction"])
    assert elastic_load.records_among(generator, start, count) == expected


def test_an_unknown_load_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="producer, spark, spark-kube"):
        elastic_spark.driver("flink", "127.0.0.1:1", "x", elastic_load.config(PARTITIONS, 1))


def partition_values(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        tp = TopicPartition(topic, partition)
        _, end = consumer.get_watermark_offsets(tp, timeout=10)
        consumer.assign([TopicPartition(topic, partition, 0)])
        got: list[bytes] = []
        while len(got) < end:
            message = consumer.poll(30)
            assert message is not None, f"timed out reading {topic}:{partition} at {len(got)}"
            assert message.error() is None, message.error()
            got.append(bytes(message.value() or b""))
        return got
    finally:
        consumer.close()


@pytest.mark.stack
@pytest.mark.timeout(300)
def test_a_local_spark_writes_the_step_the_reference_is_given() -> None:
    bootstrap = stack_env()["KAFKA_BOOTSTRAP"]
    prefix = f"elastic-spark-{uuid.uuid4().hex[:8]}"
    generator = elastic_load.config(PARTITIONS, 500, 2000, step_at_s=2, step_until_s=4)
    load = elastic_spark.driver("spark", bootstrap, prefix, generator)
    try:
        load.start()
        deadline = time.monotonic() + 120
        while load.events < STEPPED and time.monotonic() < deadline:
            time.sleep(0.5)  # a job takes 1-5 s on a busy machine: later ones write more
        load.stop()
        assert load.events >= STEPPED
        fed = load.fed()
        assert load.records == sum(len(batch) for batch in fed.values())
        for kind, batch in fed.items():
            for p in range(PARTITIONS):
                expected = encode_json(batch.take(batch.partition == p))
                assert partition_values(bootstrap, f"{prefix}-{kind}", p) == expected
    finally:
        delete_topics(bootstrap, [f"{prefix}-{kind}" for kind in ("person", "auction", "bid")])
