"""Oversize input records of a worker process on the local stack: a record longer than
STREAMSHIFT_MAX_RECORD_BYTES arriving on an input is not fed to the engine; it goes to the
dead-letter topic truncated to that bound, with the reason, its original size and coordinates,
and the worker goes on with the rest of the input (its output is the reference's without the
record). Well-formed JSON or a columnar record of many events alike: the bound is on records."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import encode_columnar, encode_json
from support.kafka import produce, read_committed
from support.reference import reference

from .dead_letter_reader import dead_letters, ours
from .harness import (
    Services,
    WorkerProcesses,
    control,
    nexmark_input,
    wait_ready,
    worker_env,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]
PARTITIONS = 4
TOPIC_MAX_BYTES = 4_000_000  # the input topic takes records up to this long


def create_topics(services: Services, run_id: str) -> str:
    """The query's topics, the input one taking records of up to `TOPIC_MAX_BYTES`."""
    admin = AdminClient({"bootstrap.servers": services.kafka})
    topic = f"{run_id}-bid"
    config = {"max.message.bytes": str(TOPIC_MAX_BYTES)}
    topics = [
        NewTopic(topic, PARTITIONS, 1, config=config),
        NewTopic(f"{run_id}-out", PARTITIONS, 1),
        NewTopic(f"{run_id}-out.dead", PARTITIONS, 1),
    ]
    for future in admin.create_topics(topics).values():
        future.result(30)
    return topic


def produce_one(services: Services, topic: str, partition: int, value: bytes) -> int:
    """Produce one record with a `trace` header and answer its offset."""
    producer = Producer({"bootstrap.servers": services.kafka, "message.max.bytes": TOPIC_MAX_BYTES})
    offsets: list[int] = []
    producer.produce(
        topic,
        value,
        partition=partition,
        headers=[("trace", b"oversize")],
        on_delivery=lambda error, message: offsets.append(-1 if error else message.offset() or 0),
    )
    producer.flush(30)
    assert offsets and offsets[0] >= 0
    return offsets[0]


def check_letter(
    services: Services, run_id: str, record: bytes, partition: int, at: int, bound: int
) -> None:
    [letter] = dead_letters(services, f"{run_id}-out.dead", 1)
    headers = ours(letter)
    assert headers["reason"] == f"oversize: {len(record)} bytes, more than {bound}"
    assert (headers["topic"], headers["partition"], headers["offset"]) == (
        f"{run_id}-bid",
        str(partition),
        str(at),
    )
    assert (headers["size"], headers["truncated"], headers["original"]) == (
        str(len(record)),
        "true",
        "record",
    )
    assert letter["headers"][0] == ("trace", b"oversize")
    size = len(letter["value"]) + sum(len(k) + len(v or b"") for k, v in letter["headers"])
    assert bound - 1000 < size <= bound
    assert record.startswith(letter["value"])


def test_an_oversize_json_record_is_a_truncated_dead_letter_and_the_worker_goes_on(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    """A well-formed bid of 3 MB (the default bound is 1 MB): before, the engine was fed it."""
    bids = nexmark_input(3_000, PARTITIONS)["bid"]
    topic = create_topics(services, run_id)
    first = encode_json(bids.take(bids.partition == 2).take(slice(0, 1)))[0]
    record = json.dumps({**json.loads(first), "extra": "x" * 3_000_000}).encode()
    at = produce_one(services, topic, 2, record)
    produce(services.kafka, topic, bids, "json")
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    env = worker_env(services, run_id, "nexmark-q5")
    process = workers.start(env)
    wait_ready(env, process)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    check_letter(services, run_id, record, 2, at, 1_000_000)
    status = control(env, "GET", "/v1/status")[1]
    assert status["counts"]["dead_letters"] == 1
    assert status["counts"]["events_in"] == len(bids)
    assert process.poll() is None


def test_an_oversize_columnar_record_is_one_truncated_dead_letter(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    """A columnar record of many events over the bound is dead as a whole (its events are not
    fed), the record as produced rather than its first event sliced out."""
    bids = nexmark_input(4_000, PARTITIONS)["bid"]
    topic = create_topics(services, run_id)
    part = bids.take(bids.partition == 1)
    oversize, rest = part.take(slice(0, 600)), part.take(slice(600, None))
    record = encode_columnar(oversize)
    bound = 40_000
    assert len(record) > bound
    at = produce_one(services, topic, 1, record)
    others = bids.take(bids.partition != 1)
    kept = Batch.concat([others, rest])
    produce(services.kafka, topic, kept, "columnar", per_record=100)
    expected = reference("nexmark-q5", {"bid": kept}, PARTITIONS)
    env = worker_env(
        services,
        run_id,
        "nexmark-q5",
        STREAMSHIFT_INPUT_FORMAT="columnar",
        STREAMSHIFT_MAX_RECORD_BYTES=str(bound),
    )
    process = workers.start(env)
    wait_ready(env, process)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    check_letter(services, run_id, record, 1, at, bound)
    status = control(env, "GET", "/v1/status")[1]
    assert status["counts"]["dead_letters"] == 1
    assert status["counts"]["events_in"] == len(kept)
    assert process.poll() is None
