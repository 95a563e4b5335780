"""The verifier's Kafka half on the local Kafka: input and committed output in real topics, the
workers' committed watermark in the group's offset metadata, as a worker writes them. It waits
for windows that close after it started, and says when they never close."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from operator_stack import read_stack
from streamshift_operator.migration.verification import TIMEOUT_S, group_of, verify
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.resources.pods import QueryIdentity
from verify_cases import PARTITIONS, SUMS, sums_input, worker_output

pytestmark = pytest.mark.stack
PLAN = {"inline": SUMS}


class Query:
    """A query's topics on the local Kafka, written as its workers write them."""

    def __init__(self, bootstrap: str, sink_partitions: int = PARTITIONS) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.source, self.sink = f"verify-in-{suffix}", f"verify-out-{suffix}"
        self.identity = QueryIdentity(f"q{suffix}", "verify", "uid")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [NewTopic(self.source, PARTITIONS, 1), NewTopic(self.sink, sink_partitions, 1)]
        for future in admin.create_topics(topics).values():
            future.result(30)
        self.spec = StreamQuerySpec.model_validate(
            {
                "plan": PLAN,
                "kafka": {"bootstrapServers": bootstrap},
                "sources": [{"name": "S", "topic": self.source, "partitions": PARTITIONS}],
                "sinks": [{"name": "out", "topic": self.sink, "partitions": sink_partitions}],
                "snapshot": {
                    "endpoint": "http://unused",
                    "bucket": "unused",
                    "credentials": {
                        "accessKey": {"name": "s", "key": "a"},
                        "secretKey": {"name": "s", "key": "b"},
                    },
                },
                "controlToken": {"name": "c", "key": "t"},
            }
        )
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": f"verify-{suffix}"}
        )
        self.producer.init_transactions(30)

    def feed(self, inputs: dict[str, dict[int, list[tuple[int, bytes]]]]) -> None:
        plain = Producer({"bootstrap.servers": self.bootstrap})
        for partition, records in inputs["S"].items():
            for _, value in records:
                plain.produce(self.source, value, partition=partition)
        assert plain.flush(30) == 0

    def emit(self, results: list[dict[str, Any]], watermark: int, offset: int = 1) -> None:
        """Results in one transaction with the input offset and watermark they reach in the
        group's offsets."""
        group = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group})
        self.producer.begin_transaction()
        for result in results:
            self.producer.produce(
                self.sink, orjson.dumps(result), partition=result["k"] % PARTITIONS
            )
        offsets = [
            TopicPartition(self.source, p, offset, f"{offset}:{watermark}")
            for p in range(PARTITIONS)
        ]
        self.producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), 30)
        self.producer.commit_transaction(30)
        group.close()

    @property
    def group(self) -> str:
        return group_of(self.identity)


@pytest.fixture
def query() -> Query:
    return Query(read_stack().kafka)


def _before(results: list[dict[str, Any]], end: int) -> list[dict[str, Any]]:
    return [r for r in results if r["window_end"] <= end]


def test_exact_output_passes_and_lost_windows_fail(query: Query) -> None:
    inputs = sums_input()
    query.feed(inputs)
    output = worker_output(PLAN, inputs)
    query.emit([r for r in _before(output, 4000) if r["window_end"] != 2000], 4000)
    verdict = verify(query.spec, PLAN, query.identity, touched_to=2500, wait_s=10)
    assert not verdict.exact and verdict.missing == 2 and verdict.bound == 4000
    query.emit([r for r in output if r["window_end"] == 2000], 4000)
    verdict = verify(query.spec, PLAN, query.identity, touched_to=2500, wait_s=10)
    assert verdict.exact, verdict.message
    assert verdict.compared == 8


def test_it_waits_for_windows_that_close_after_it_started(query: Query) -> None:
    inputs = sums_input()
    query.feed(inputs)
    output = worker_output(PLAN, inputs)
    query.emit(_before(output, 3000), 3000)

    def later() -> None:
        time.sleep(3)
        query.emit([r for r in output if r["window_end"] > 3000], 5900)

    emitter = threading.Thread(target=later)
    emitter.start()
    began = time.monotonic()
    verdict = verify(query.spec, PLAN, query.identity, touched_to=3500, wait_s=30)
    emitter.join()
    assert time.monotonic() - began >= 3
    assert verdict.exact, verdict.message
    assert verdict.bound == 5900 and verdict.compared == 10


def test_windows_that_never_close_make_it_not_exact(query: Query) -> None:
    inputs = sums_input()
    query.feed(inputs)
    query.emit(_before(worker_output(PLAN, inputs), 3000), 3000)
    verdict = verify(query.spec, PLAN, query.identity, touched_to=3500, wait_s=3)
    assert not verdict.exact
    assert verdict.missing == verdict.extra == 0  # what was compared is right
    assert "close by event time 4500" in (verdict.message or "")


def test_with_the_input_stopped_it_compares_what_exists_without_waiting(query: Query) -> None:
    """The workers committed the end of the input: windows still open there have no result in
    the reference either, so the comparison ends at the input's watermark at once."""
    inputs = sums_input()
    query.feed(inputs)
    query.emit(worker_output(PLAN, inputs), 5900, offset=60)
    began = time.monotonic()
    verdict = verify(query.spec, PLAN, query.identity, touched_to=5500, wait_s=30)
    assert verdict.exact, verdict.message
    assert verdict.bound == 5900 and verdict.compared == 10
    assert time.monotonic() - began < 20


def test_steady_output_and_an_empty_output_partition_do_not_hold_it_up() -> None:
    """Output keeps coming (results beyond the compared span, committed every 0.2 s) while one
    output partition holds nothing, as q5's single hottest auction leaves it: the reads end at
    each partition's end as it was when they began, not at their timeout."""
    query = Query(read_stack().kafka, sink_partitions=PARTITIONS + 1)
    inputs = sums_input()
    query.feed(inputs)
    query.emit(worker_output(PLAN, inputs), 5900)
    stop = threading.Event()

    def steadily() -> None:
        producer = Producer(
            {"bootstrap.servers": query.bootstrap, "transactional.id": f"{query.sink}-later"}
        )
        producer.init_transactions(30)
        late = 10**12  # a window far beyond the bound: never compared
        while not stop.is_set():
            producer.begin_transaction()
            later = {"id": f"later|{late}", "window_start": late, "window_end": late + 1}
            producer.produce(query.sink, orjson.dumps(later), partition=0)
            producer.commit_transaction(30)
            time.sleep(0.2)

    emitter = threading.Thread(target=steadily)
    emitter.start()
    began = time.monotonic()
    try:
        verdict = verify(query.spec, PLAN, query.identity, touched_to=3500, wait_s=30)
    finally:
        stop.set()
        emitter.join()
    assert verdict.exact, verdict.message
    assert verdict.bound == 5900 and verdict.compared == 10
    assert time.monotonic() - began < TIMEOUT_S  # before: both reads of the output timed out


def test_input_that_only_paused_at_its_end_is_waited_for(query: Query) -> None:
    """The workers' commits reach the end of the input, but it is live: more arrives a moment
    later and closes windows the migration touched. They are compared, not left out."""
    inputs = sums_input()
    query.feed(inputs)
    query.emit(worker_output(PLAN, inputs), 5900, offset=60)  # at the input's end, for now
    more = {
        "S": {
            p: [
                (i, orjson.dumps({"ts": i * 100, "k": p, "m": i, "note": 7})) for i in range(60, 80)
            ]
            for p in range(PARTITIONS)
        }
    }
    whole = {"S": {p: inputs["S"][p] + more["S"][p] for p in range(PARTITIONS)}}

    def later() -> None:
        time.sleep(1.5)  # after the previous verify.py compared, before STOPPED_S
        query.feed(more)
        query.emit([r for r in worker_output(PLAN, whole) if r["window_end"] > 5900], 7900, 80)

    emitter = threading.Thread(target=later)
    emitter.start()
    verdict = verify(query.spec, PLAN, query.identity, touched_to=5500, wait_s=30)
    emitter.join()
    assert verdict.exact, verdict.message
    assert verdict.bound == 7900 and verdict.compared == 14  # before: 5900 and 10, at once
