"""`_fastconsume` on the local stack's Kafka: what a batched consume from a confluent-kafka
Consumer's handle returns (values, partitions, offsets, topic indices of several topics, null
values as b""), a batch asked larger than what is queued, error records raised, and the checks
on the handle it reads."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from streamshift_dev import workers
from streamshift_engine.runtime import _fastconsume

from .harness import Services, create_topics

CLIENT = "fastconsume-test"
Row = tuple[int, int, int, bytes]  # topic index, partition, offset, value


@pytest.fixture
def topics(services: Services, run_id: str) -> Iterator[tuple[str, str]]:
    """Two topics: `a` with three partitions, `b` with two, each record's value naming its
    place; partition 1 of `a` has a null value (a tombstone) at offset 2."""
    names = (f"{run_id}-a", f"{run_id}-b")
    create_topics(services, [names[0]], 3)
    create_topics(services, [names[1]], 2)
    producer = Producer({"bootstrap.servers": services.kafka, "linger.ms": 5})
    for index, (name, partitions) in enumerate(zip(names, (3, 2), strict=True)):
        for partition in range(partitions):
            for offset in range(40):
                value = (
                    None
                    if (index, partition, offset) == (0, 1, 2)
                    else _value(index, partition, offset)
                )
                producer.produce(name, value, partition=partition)
    producer.flush(30)
    yield names
    workers.delete_topics(services, list(names))


def _value(index: int, partition: int, offset: int) -> bytes:
    return f"t{index}-p{partition}-o{offset}".encode()


def _expected() -> set[Row]:
    rows = set()
    for index, partitions in enumerate((3, 2)):
        for partition in range(partitions):
            for offset in range(40):
                tombstone = (index, partition, offset) == (0, 1, 2)
                rows.add(
                    (
                        index,
                        partition,
                        offset,
                        b"" if tombstone else _value(index, partition, offset),
                    )
                )
    return rows


def _consumer(services: Services, run_id: str, names: tuple[str, str], **extra: object) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": services.kafka,
            "client.id": CLIENT,
            "group.id": run_id,
            "enable.auto.commit": False,
            **extra,
        }
    )
    consumer.assign(
        [TopicPartition(names[0], p, OFFSET_BEGINNING) for p in range(3)]
        + [TopicPartition(names[1], p, OFFSET_BEGINNING) for p in range(2)]
    )
    return consumer


def _rows(batch: tuple[list[bytes], bytes, bytes, bytes]) -> list[Row]:
    values, partitions, offsets, codes = batch
    columns = (np.frombuffer(codes, np.int32), np.frombuffer(partitions, np.int32))
    return [
        (int(t), int(p), int(o), v)
        for t, p, o, v in zip(*columns, np.frombuffer(offsets, np.int64), values, strict=True)
    ]


def _read_all(consumer: Consumer, names: tuple[str, ...], count: int) -> list[Row]:
    rows: list[Row] = []
    deadline = time.monotonic() + 20
    while len(rows) < count and time.monotonic() < deadline:
        rows += _rows(_fastconsume.consume(consumer, CLIENT, names, 37, 0.2))
    return rows


def test_values_partitions_offsets_and_topics_of_a_batched_consume(
    services: Services, run_id: str, topics: tuple[str, str]
) -> None:
    consumer = _consumer(services, run_id, topics)
    try:
        rows = _read_all(consumer, topics, 200)
        assert len(rows) == 200  # no record twice
        assert set(rows) == _expected()
        for index, partition in {(t, p) for t, p, _, _ in rows}:  # each partition in order
            offsets = [o for t, p, o, _ in rows if (t, p) == (index, partition)]
            assert offsets == list(range(40))
        started = time.monotonic()  # more asked than is queued: what there is, at the timeout
        assert _fastconsume.consume(consumer, CLIENT, topics, 100_000, 0.3)[0] == []
        assert 0.25 <= time.monotonic() - started < 5
    finally:
        consumer.close()


def test_a_batch_larger_than_what_is_queued_returns_all_of_it(
    services: Services, run_id: str, topics: tuple[str, str]
) -> None:
    consumer = _consumer(services, run_id, topics)
    try:
        rows: list[Row] = []
        deadline = time.monotonic() + 20
        while len(rows) < 200 and time.monotonic() < deadline:
            rows += _rows(_fastconsume.consume(consumer, CLIENT, topics, 1_000_000, 0.5))
        assert sorted(rows) == sorted(_expected())
    finally:
        consumer.close()


def test_an_error_record_is_raised_not_dropped(
    services: Services, run_id: str, topics: tuple[str, str]
) -> None:
    """With `enable.partition.eof` on, the end of a partition comes as an error record."""
    consumer = _consumer(services, run_id, topics, **{"enable.partition.eof": True})
    try:
        with pytest.raises(KafkaException) as raised:
            for _ in range(100):
                _fastconsume.consume(consumer, CLIENT, topics, 1000, 0.2)
        error = raised.value.args[0]
        assert error.code() == KafkaError._PARTITION_EOF
        assert "partition" in error.str() and run_id in error.str()
    finally:
        consumer.close()


def test_the_handle_is_checked(services: Services, run_id: str, topics: tuple[str, str]) -> None:
    consumer = _consumer(services, run_id, topics)
    with pytest.raises(RuntimeError, match="named fastconsume-test#consumer"):
        _fastconsume.consume(consumer, "another-client", topics, 10, 0.1)
    with pytest.raises(ValueError, match="not one of the topics given"):
        _read_all(consumer, (topics[0],), 200)
    with pytest.raises(TypeError):
        _fastconsume.consume(Producer({"bootstrap.servers": services.kafka}), CLIENT, topics, 1, 0)  # type: ignore[arg-type]
    consumer.close()
    with pytest.raises(RuntimeError, match="closed"):
        _fastconsume.consume(consumer, CLIENT, topics, 10, 0.1)
