"""The Kafka sink on the local stack: every result of a transaction reaches a `read_committed`
reader exactly once, also when the producer's queue fills and records are tried again; a commit
started in the background ends before anything goes into the next transaction, and its error
reaches the loop."""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Instance
from streamshift_engine.runtime.config import load
from streamshift_engine.runtime.sink import KafkaSink
from support.kafka import read_committed
from support.reference import reference

from .harness import Services, create_topics, nexmark_input, worker_env


def _q8_results(events: int) -> tuple[list[ResultBatch], list[str]]:
    """q8's results over `events` generated events, and the reference records."""
    plan = builtin("nexmark-q8")
    generated = nexmark_input(events, 4)
    inputs = {spec.name: generated[spec.name] for spec in plan.inputs}
    instance = Instance(plan, range(4))
    for name, batch in inputs.items():
        for partition in range(4):
            instance.feed(name, partition, batch.take(batch.partition == partition))
    return instance.poll(), reference("nexmark-q8", inputs, 4)


def test_full_queue_retries_each_result_once(services: Services, run_id: str) -> None:
    config = load(worker_env(services, run_id, "nexmark-q8"))
    topic = config.sinks[0].topic
    create_topics(services, [topic], config.sinks[0].partitions)
    results, expected = _q8_results(40_000)
    assert len(expected) > 50  # ten times the queue below: it fills again and again
    sink = KafkaSink(config, queue_records=5)
    group = Consumer({"bootstrap.servers": services.kafka, "group.id": uuid.uuid4().hex})
    try:
        assert sink.results(results) == len(expected)
        sink.start_commit({}, None, group)
        sink.settle()
    finally:
        sink.close()
        group.close()
    assert read_committed(services.kafka, topic, len(expected), 30) == expected


def test_background_commit_ends_before_the_next_transaction(
    services: Services, run_id: str
) -> None:
    config = load(worker_env(services, run_id, "nexmark-q8"))
    topic = config.sinks[0].topic
    create_topics(services, [topic], config.sinks[0].partitions)
    results, expected = _q8_results(40_000)
    first = [batch.take(slice(0, len(batch) // 2)) for batch in results]
    second = [batch.take(slice(len(batch) // 2, len(batch))) for batch in results]
    sink = KafkaSink(config)
    group = Consumer({"bootstrap.servers": services.kafka, "group.id": uuid.uuid4().hex})
    settled: list[str] = []
    ended = threading.Event()
    try:
        queued = sink.results(first)
        sink.start_commit(
            {}, None, group, lambda: settled.append(threading.current_thread().name), ended.set
        )
        assert ended.wait(30)  # on the commit thread
        assert sink.results(second) == len(expected) - queued  # settles the commit first
        assert settled == [threading.current_thread().name]
        visible = read_committed(services.kafka, topic, queued, 10)
        assert len(visible) == queued and set(visible) <= set(expected)
        sink.start_commit({}, None, group)
        sink.settle()
        assert sink.settle(wait=False)
    finally:
        sink.close()
        group.close()
    assert read_committed(services.kafka, topic, len(expected), 30) == expected


def test_a_failed_background_commit_is_raised_when_settled(services: Services, run_id: str) -> None:
    config = load(worker_env(services, run_id, "nexmark-q8"))
    create_topics(services, [config.sinks[0].topic], config.sinks[0].partitions)
    results, _ = _q8_results(20_000)
    sink = KafkaSink(config)
    group = Consumer({"bootstrap.servers": services.kafka, "group.id": uuid.uuid4().hex})
    successor = Producer({"bootstrap.servers": services.kafka, "transactional.id": config.writer})
    try:
        sink.results(results)
        successor.init_transactions(30)  # fences the sink's producer
        sink.start_commit({}, None, group)
        with pytest.raises(KafkaException):
            sink.settle()
        assert sink.settle(wait=False)  # nothing in flight any more
    finally:
        group.close()
        sink.committer.shutdown()
        sink.producer.purge()  # fenced: what it holds can never be delivered
