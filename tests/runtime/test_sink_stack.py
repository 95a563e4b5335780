"""The Kafka sink on the local stack: every result of a transaction reaches a `read_committed`
reader exactly once, also when the producer's queue fills and records are tried again."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Instance
from streamshift_engine.runtime.config import load
from streamshift_engine.runtime.sink import KafkaSink

from .harness import Services, create_topics, nexmark_input, read_committed, reference, worker_env


def test_full_queue_retries_each_result_once(services: Services, run_id: str) -> None:
    config = load(worker_env(services, run_id, "nexmark-q8"))
    topic = config.sinks[0].topic
    create_topics(services, [topic], config.sinks[0].partitions)
    plan = builtin("nexmark-q8")
    events = nexmark_input(40_000, 4)
    inputs = {spec.name: events[spec.name] for spec in plan.inputs}
    instance = Instance(plan, range(4))
    for name, batch in inputs.items():
        for partition in range(4):
            instance.feed(name, partition, batch.take(batch.partition == partition))
    results = instance.poll()
    expected = reference("nexmark-q8", inputs, 4)
    assert len(expected) > 50  # ten times the queue below: it fills again and again
    sink = KafkaSink(config, queue_records=5)
    group = Consumer({"bootstrap.servers": services.kafka, "group.id": uuid.uuid4().hex})
    try:
        assert sink.results(results) == len(expected)
        sink.commit({}, None, group)
    finally:
        sink.close()
        group.close()
    assert read_committed(services, topic, len(expected), 30) == expected
