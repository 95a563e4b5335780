"""`_fastconsume` on the local stack's Kafka: what a batched consume from a confluent-kafka
Consumer's handle returns (values, partitions, offsets, topic indices of several topics, null
values as b""), a batch asked larger than what is queued, error records raised, the checks on
the handle it reads, and values left in the consumer's memory (Payload) until released: by
KafkaSource's columnar decode before its fetch returns."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
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
from streamshift_engine.events.batch import Batch
from streamshift_engine.runtime import _fastconsume
from streamshift_engine.runtime.config import load
from streamshift_engine.runtime.source import KafkaSource, Position
from support.kafka import produce

from .harness import Services, create_topics, nexmark_input, worker_env

CLIENT = "fastconsume-test"
Row = tuple[int, int, int, bytes]  # topic index, partition, offset, value


@pytest.fixture
def topics(services: Services, run_id: str) -> Iterator[tuple[str, str]]:
    """Two topics: `a` with three partitions, `b` with two, each record's value naming its
    place; partition 1 of `a` has a null value (a tombstone) at offset 2."""
    names = (f"{run_id}-a", f"{run_id}-b")
    create_topics(services, [names[0]], 3)
    create_topics(services, [names[1]], 2)
    producer = Producer(
        {"bootstrap.servers": services.kafka, "linger.ms": 5, "enable.idempotence": True}
    )
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


def _rows(batch: tuple[list[_fastconsume.Payload], bytes, bytes, bytes]) -> list[Row]:
    """(topic index, partition, offset, value copied out) of each record of a consume."""
    values, partitions, offsets, codes = batch
    columns = (np.frombuffer(codes, np.int32), np.frombuffer(partitions, np.int32))
    return [
        (int(t), int(p), int(o), bytes(memoryview(v)))
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
        _fastconsume.consume(Producer({"bootstrap.servers": services.kafka}), CLIENT, topics, 1, 0)  # type: ignore[call-overload]
    consumer.close()
    with pytest.raises(RuntimeError, match="closed"):
        _fastconsume.consume(consumer, CLIENT, topics, 10, 0.1)


def test_payloads_hold_their_records_until_released(
    services: Services, run_id: str, topics: tuple[str, str]
) -> None:
    """Payloads are the records themselves: read in place (by Arrow too), freed with the last
    reference. librdkafka's close waits for every record it handed out, so they go first."""
    consumer = _consumer(services, run_id, topics)
    alive = _fastconsume.payloads_alive()
    held: list[_fastconsume.Payload] = []
    try:
        rows: list[Row] = []
        deadline = time.monotonic() + 20
        while len(rows) < 200 and time.monotonic() < deadline:
            values, partitions, offsets, codes = _fastconsume.consume(
                consumer, CLIENT, topics, 50, 0.2
            )
            held += values
            rows += _rows((values, partitions, offsets, codes))
            del values
        assert set(rows) == _expected()
        assert _fastconsume.payloads_alive() == alive + 200
        assert sorted(map(len, held)) == sorted(len(row[3]) for row in rows)
        arrow = pa.py_buffer(held[-1])  # Arrow reads the record in place
        assert arrow.to_pybytes() == bytes(memoryview(held[-1]))
        held.clear()
        assert _fastconsume.payloads_alive() == alive + 1  # the one Arrow still views
        del arrow
        assert _fastconsume.payloads_alive() == alive
    finally:
        held.clear()
        consumer.close()


def test_a_consumer_dropped_while_payloads_live_waits_for_them(
    services: Services, run_id: str, topics: tuple[str, str]
) -> None:
    """Payloads keep their Consumer: dropping it does not close it under them (librdkafka's
    close would wait for them forever); it closes once the last one goes."""
    consumer = _consumer(services, run_id, topics)
    alive = _fastconsume.payloads_alive()
    held: list[_fastconsume.Payload] = []
    deadline = time.monotonic() + 20
    while not held and time.monotonic() < deadline:
        held = _fastconsume.consume(consumer, CLIENT, topics, 10, 0.2)[0]
    assert held
    del consumer
    first = bytes(memoryview(held[0]))
    assert first == b"" or first.startswith(b"t")
    held.clear()
    assert _fastconsume.payloads_alive() == alive


def test_a_columnar_source_keeps_no_record_after_a_fetch(services: Services, run_id: str) -> None:
    """KafkaSource decodes columnar records where the consumer holds them; its batches are
    its own copies of the columns read (the events produced), no view of a record."""
    config = load(worker_env(services, run_id, "nexmark-q8", STREAMSHIFT_INPUT_FORMAT="columnar"))
    create_topics(services, [s.topic for s in config.sources], 2)
    inputs = nexmark_input(4000, 2)
    try:
        for spec in config.sources:
            produce(services.kafka, spec.topic, inputs[spec.name], "columnar", per_record=300)
        source = KafkaSource(config)
        source.seek({(s.name, p): 0 for s in config.sources for p in range(2)})
        alive = _fastconsume.payloads_alive()
        read: dict[Position, list[Batch]] = {}
        deadline = time.monotonic() + 20
        while (
            sum(len(b) for bs in read.values() for b in bs) < 4000 and time.monotonic() < deadline
        ):
            batches, dead = source.fetch(0.2)
            assert dead == []
            assert _fastconsume.payloads_alive() == alive
            for position, batch in batches.items():
                read.setdefault(position, []).append(batch)
        source.close()
        for (name, partition), parts in read.items():
            got = Batch.concat(parts)
            sent = inputs[name].take(inputs[name].partition == partition)
            assert got.offset.tolist() == list(range(len(sent)))  # record r, event i: r * 2**20 + i
            assert got.ts.tolist() == sent.ts.tolist()
            for column in config.schemas[name].names:
                assert got.columns[column].tolist() == sent.columns[column].tolist()
        assert sum(len(bs) for bs in read.values()) and set(read) == {
            (s.name, p) for s in config.sources for p in range(2)
        }
    finally:
        workers.delete_topics(services, [s.topic for s in config.sources])
