"""A query's input written to Kafka the way the reference reads it, and its committed output read
back, for the tests on the local stack's (or a private) broker."""

from __future__ import annotations

import json
import time

from confluent_kafka import Consumer, Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import encode_columnar, encode_json


def produce(
    bootstrap: str, topic: str, batch: Batch, fmt: str = "json", per_record: int = 500
) -> None:
    """Each partition's events in offset order: one JSON record per event, or columnar records
    of `per_record` events. Idempotent: a retried request (a fresh topic's leader not ready
    yet) neither reorders nor repeats a partition's records, which the reference assumes."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    )
    for partition in sorted(set(batch.partition.tolist())):
        part = batch.take(batch.partition == partition)
        if fmt == "json":
            for value in encode_json(part):
                _send(producer, topic, value, partition)
        else:
            for start in range(0, len(part), per_record):
                chunk = part.take(slice(start, start + per_record))
                _send(producer, topic, encode_columnar(chunk), partition)
    producer.flush(30)


def _send(producer: Producer, topic: str, value: bytes, partition: int) -> None:
    """Queue one record, waiting for deliveries while the producer's local queue is full (a
    backlog of hundreds of thousands of records outruns the broker)."""
    while True:
        try:
            producer.produce(topic, value, partition=partition)
        except BufferError:
            producer.poll(0.5)
            continue
        producer.poll(0)
        return


def read_committed(bootstrap: str, topic: str, expect: int, timeout: float) -> list[str]:
    """Every committed record of `topic` (sorted JSON), once `expect` arrived and nothing more
    for 3 s, as soon as more than `expect` arrived, or once nothing more arrived for 3 s after
    the deadline."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[str] = []
    deadline = time.monotonic() + timeout
    quiet_until = time.monotonic() + 3
    while time.monotonic() < deadline or time.monotonic() < quiet_until:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                records.append(json.dumps(json.loads(message.value() or b""), sort_keys=True))
                quiet_until = time.monotonic() + 3
        if len(records) > expect or (len(records) == expect and time.monotonic() > quiet_until):
            break
    consumer.close()
    return sorted(records)
