"""Dead letters of a worker process on the local stack: a late record and a malformed one each
reach the dead-letter topic byte-identical to what was produced, with its headers and the
worker's (reason and coordinates), so they can be replayed; a record too long for the
dead-letter topic goes there truncated, with its original size and coordinates, and the worker
goes on (before, the produce failed with MSG_SIZE_TOO_LARGE at every restart: a crash loop)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from confluent_kafka import Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import decode_columnar, encode_columnar
from support.kafka import produce, read_committed
from support.reference import reference

from .dead_letter_reader import dead_letters, ours
from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    nexmark_input,
    wait_ready,
    worker_env,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]
PARTITIONS = 4
OURS = ("reason", "source", "topic", "partition", "offset", "event", "size", "original")


def produce_one(
    services: Services, topic: str, partition: int, value: bytes, headers: list[tuple[str, bytes]]
) -> int:
    """Produce one record (up to 2 MB) and answer its offset."""
    producer = Producer(
        {
            "bootstrap.servers": services.kafka,
            "enable.idempotence": True,
            "message.max.bytes": 2_000_000,
        }
    )
    offsets: list[int] = []
    producer.produce(
        topic,
        value,
        partition=partition,
        headers=headers,
        on_delivery=lambda error, message: offsets.append(-1 if error else message.offset()),
    )
    producer.flush(30)
    assert offsets and offsets[0] >= 0
    return offsets[0]


def setup_q5(services: Services, run_id: str, count: int) -> list[str]:
    bids = nexmark_input(count, PARTITIONS)["bid"]
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    produce(services.kafka, f"{run_id}-bid", bids, "json")
    return reference("nexmark-q5", {"bid": bids}, PARTITIONS)


def test_late_and_malformed_records_are_dead_letters_byte_identical_with_their_headers(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    expected = setup_q5(services, run_id, 5_000)
    topic = f"{run_id}-bid"
    # long before every other bid of its partition, spaced and ordered as no encoder would
    late = json.dumps(
        {"extra": "x", "price": 7, "date_time": 1, "bidder": 5, "auction": 1000}, indent=1
    ).encode()
    late_headers = [("trace", b"late-1"), ("empty", b"")]
    malformed = b'{"auction": 1000, "date_time": '
    bad_headers = [("trace", b"bad-1")]
    late_at = produce_one(services, topic, 1, late, late_headers)
    bad_at = produce_one(services, topic, 2, malformed, bad_headers)
    env = worker_env(services, run_id, "nexmark-q5")
    wait_ready(env, workers.start(env))
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    letters = dead_letters(services, f"{run_id}-out.dead", 2)
    by_reason = {ours(letter)["reason"].split(":")[0]: letter for letter in letters}
    assert len(letters) == 2 and set(by_reason) == {"late", "bad json"}
    for reason, value, headers, partition, offset in [
        ("late", late, late_headers, 1, late_at),
        ("bad json", malformed, bad_headers, 2, bad_at),
    ]:
        letter = by_reason[reason]
        assert letter["value"] == value
        assert letter["headers"][: len(headers)] == headers
        assert ours(letter) == {
            "reason": ours(letter)["reason"],
            "source": "bid",
            "topic": topic,
            "partition": str(partition),
            "offset": str(offset),
            "event": "0",
            "size": str(len(value)),
            "original": "record",
            "truncated": "false",
            "original-headers": str(len(headers)),
        }
    status = control(env, "GET", "/v1/status")[1]
    assert status["counts"]["dead_letters"] == 2


@pytest.mark.parametrize(("limit", "length"), [(None, 1_000_000), ("20000", 100_000)])
def test_a_record_too_long_for_the_dead_letter_topic_goes_there_truncated(
    services: Services, run_id: str, workers: WorkerProcesses, limit: str | None, length: int
) -> None:
    expected = setup_q5(services, run_id, 3_000)
    poison = b"{" + bytes(range(256)) * (length // 256) + b"x" * (length % 256 - 1)
    assert len(poison) == length
    at = produce_one(services, f"{run_id}-bid", 3, poison, [("trace", b"poison")])
    settings = {} if limit is None else {"STREAMSHIFT_MAX_RECORD_BYTES": limit}
    env = worker_env(services, run_id, "nexmark-q5", **settings)
    process = workers.start(env)
    wait_ready(env, process)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    [letter] = dead_letters(services, f"{run_id}-out.dead", 1)
    headers = ours(letter)
    bound = int(limit or 1_000_000)
    oversize = f"oversize: {length} bytes, more than {bound}"  # not read: longer than the bound
    assert headers["reason"].startswith("bad json" if length <= bound else oversize)
    assert (headers["topic"], headers["partition"], headers["offset"]) == (
        f"{run_id}-bid",
        "3",
        str(at),
    )
    assert (headers["size"], headers["truncated"]) == (str(length), "true")
    size = len(letter["value"]) + sum(len(k) + len(v or b"") for k, v in letter["headers"])
    assert bound - 1000 < size <= bound
    assert poison.startswith(letter["value"])
    assert process.poll() is None  # still running: no crash loop


def test_many_late_records_each_reach_the_dead_letter_topic_as_produced(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    """Read again in runs (not one seek per record): 2,000 late records, a gap of 3,000 on-time
    records in the middle, each dead letter its own record."""
    bids = nexmark_input(2_000, PARTITIONS)["bid"]
    topic = f"{run_id}-bid"
    create_topics(services, [topic, f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    produce(services.kafka, topic, bids, "json")
    producer = Producer({"bootstrap.servers": services.kafka, "enable.idempotence": True})
    late = {}
    newest = int(bids.ts.max())
    for i in range(3_000 + 2_000):
        if 1_000 <= i < 4_000:  # on time: later than everything before
            value = json.dumps({"auction": 1, "date_time": newest + i}).encode()
        else:
            value = json.dumps({"auction": i, "date_time": 1 + i, "n": f"late {i}"}).encode()
            late[value] = i
        producer.produce(topic, value, partition=0)
    producer.flush(30)
    env = worker_env(services, run_id, "nexmark-q5")
    wait_ready(env, workers.start(env))
    letters = dead_letters(services, f"{run_id}-out.dead", len(late))
    assert sorted(letter["value"] for letter in letters) == sorted(late)
    assert all(ours(letter)["original"] == "record" for letter in letters)
    assert {ours(letter)["reason"] for letter in letters} == {"late"}


def test_a_late_columnar_event_is_a_dead_letter_of_its_own_with_every_column(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    """A columnar record holds many events: a late one's dead letter is that event alone, as a
    columnar record with every column of the original (not only those the query reads)."""
    bids = nexmark_input(3_000, PARTITIONS)["bid"]
    topic = f"{run_id}-bid"
    create_topics(services, [topic, f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    produce(services.kafka, topic, bids, "columnar")
    first = bids.take(bids.partition == 1).take(slice(0, 3))  # the oldest of partition 1
    newest = int(bids.ts[bids.partition == 1].max())
    times = np.array([5, newest + 1, 7], np.int64)  # late, on time, late
    mixed = Batch(
        "bid", times, first.partition, first.offset, {**first.columns, "date_time": times}
    )
    at = produce_one(services, topic, 1, encode_columnar(mixed), [("trace", b"mixed")])
    env = worker_env(services, run_id, "nexmark-q5", STREAMSHIFT_INPUT_FORMAT="columnar")
    wait_ready(env, workers.start(env))
    letters = dead_letters(services, f"{run_id}-out.dead", 2)
    assert sorted(int(ours(letter)["event"]) for letter in letters) == [0, 2]
    for letter in letters:
        index = int(ours(letter)["event"])
        assert ours(letter)["offset"] == str(at) and ours(letter)["original"] == "event"
        assert letter["headers"][0] == ("trace", b"mixed")
        event = decode_columnar(letter["value"])
        assert len(event) == 1 and set(event.columns) == set(mixed.columns)
        for name, column in mixed.columns.items():
            assert event.columns[name].tolist() == column[index : index + 1].tolist()


def test_a_columnar_record_that_does_not_decode_is_a_dead_letter(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    """Before, Arrow's error ended the worker at every restart (a crash loop)."""
    bids = nexmark_input(3_000, PARTITIONS)["bid"]
    topic = f"{run_id}-bid"
    create_topics(services, [topic, f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    garbage = b"\xff\xff\xff\xff not an arrow stream"
    at = produce_one(services, topic, 2, garbage, [("trace", b"garbage")])
    produce(services.kafka, topic, bids, "columnar")
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    env = worker_env(services, run_id, "nexmark-q5", STREAMSHIFT_INPUT_FORMAT="columnar")
    process = workers.start(env)
    wait_ready(env, process)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    [letter] = dead_letters(services, f"{run_id}-out.dead", 1)
    assert letter["value"] == garbage and letter["headers"][0] == ("trace", b"garbage")
    assert ours(letter)["reason"].startswith("bad columnar record")
    assert (ours(letter)["offset"], ours(letter)["original"]) == (str(at), "record")
    assert process.poll() is None
