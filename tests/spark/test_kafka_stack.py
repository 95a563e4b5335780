"""On the local stack: Spark writes the engine's events to Kafka, the oracle reads Nexmark and
seed `S`/`T` input back from Kafka, and `verify` reads an output topic `read_committed` (aborted
results never count) and exits non-zero on a mismatch."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import decode_columnar, encode_json, encode_results_json
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.runner import collect, run_plan
from streamshift_engine.spark import cli
from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka
from streamshift_engine.spark.kafka import delete_topics, ensure_topics, stack_env
from streamshift_engine.spark.oracle import check, kafka_source, reference
from streamshift_engine.spark.seed_streams import SeedStreamConfig, seed_streams

pytestmark = pytest.mark.stack
SEED = 5
EVENTS = 60_000


@pytest.fixture(scope="module")
def bootstrap() -> str:
    try:
        return stack_env()["KAFKA_BOOTSTRAP"]
    except FileNotFoundError:
        pytest.fail("the local stack is not running (no stack.env): start it with `make up`")


@pytest.fixture
def prefix(bootstrap: str) -> Iterator[str]:
    name = f"spark-{uuid.uuid4().hex[:8]}-"
    yield name
    kinds = ("person", "auction", "bid", "out", "S", "T")
    delete_topics(bootstrap, [f"{name}{k}" for k in kinds])


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[Any]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[Any]] = defaultdict(list)
    pending = set(range(partitions))
    while pending:
        message = consumer.poll(30)
        assert message is not None, f"timed out reading {topic}"
        if message.error() is not None:
            pending.discard(message.partition())
            continue
        got[int(message.partition() or 0)].append(message)
    consumer.close()
    return got


@pytest.mark.parametrize("wire", ["json", "columnar"])
def test_spark_writes_the_engine_events_to_kafka_in_order(
    spark: Any, bootstrap: str, prefix: str, wire: str
) -> None:
    topics = {k: f"{prefix}{k}" for k in ("person", "auction", "bid")}
    ensure_topics(bootstrap, topics.values(), 8)
    spec = GenerateSpec(SEED, 0, EVENTS, wire, topics=topics)  # type: ignore[arg-type]
    assert generate_to_kafka(spark, spec, bootstrap) == EVENTS
    for kind, batch in generate(SEED, 0, EVENTS).items():
        records = _read_all(bootstrap, topics[kind], 8)
        for p in range(8):
            expected = batch.take(batch.partition == p)
            values = [m.value() for m in records[p]]
            if wire == "json":
                assert values == encode_json(expected)
                assert [m.offset() for m in records[p]] == expected.offset.tolist()
            else:
                decoded = Batch.concat([decode_columnar(v) for v in values])
                np.testing.assert_array_equal(decoded.ts, expected.ts)
                for name, column in expected.columns.items():
                    np.testing.assert_array_equal(decoded.columns[name], column)


def _produce_results(bootstrap: str, topic: str, values: list[bytes], commit: bool) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % 2)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.flush(30)
        producer.abort_transaction(30)


def test_verify_reads_committed_output_and_fails_on_a_duplicate(
    spark: Any, bootstrap: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    batches = generate(SEED, 0, EVENTS)
    plan = builtin("nexmark-q8")
    results, _ = run_plan(plan, {i.name: [batches[i.name]] for i in plan.inputs})
    values = [v for r in results for v in encode_results_json(r)]
    topic = f"{prefix}out"
    ensure_topics(bootstrap, [topic], 2)
    _produce_results(bootstrap, topic, values, commit=True)
    _produce_results(bootstrap, topic, values[:5], commit=False)
    argv = ["verify", "--query", "nexmark-q8", "--topic", topic, "--seed", str(SEED)]
    argv += ["--events", str(EVENTS), "--bootstrap", bootstrap]

    assert cli.main(argv) == 0
    assert f"expected={len(values)} received={len(values)} missing=0" in capsys.readouterr().out

    _produce_results(bootstrap, topic, values[3:4], commit=True)
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "duplicates=1" in out and "MISMATCH" in out


def test_oracle_over_kafka_input_equals_engine_output(
    spark: Any, bootstrap: str, prefix: str
) -> None:
    topics = {k: f"{prefix}{k}" for k in ("person", "auction", "bid")}
    ensure_topics(bootstrap, topics.values(), 8)
    generate_to_kafka(spark, GenerateSpec(SEED, 0, EVENTS, "json", topics=topics), bootstrap)
    source = kafka_source(spark, bootstrap, topics)
    batches = generate(SEED, 0, EVENTS)
    for query in ("nexmark-q7", "nexmark-q8"):
        plan = builtin(query)
        results, _ = run_plan(plan, {i.name: [batches[i.name]] for i in plan.inputs})
        output = collect(results)
        report = check(query, reference(query, source), output)
        assert report.ok, report.lines()
        assert report.expected == len(output) > 0


def test_oracle_over_seed_streams_read_back_from_kafka_equals_engine_output(
    spark: Any, bootstrap: str, prefix: str
) -> None:
    """q2 reads `S`; q3 reads both and keys each result by a q1 pair's parts, so it covers
    q1's pairs and their Kafka identities too."""
    config = SeedStreamConfig(partitions=4)
    streams = seed_streams(SEED, 0, 2_000, config)
    topics = {name: f"{prefix}{name}" for name in streams}
    ensure_topics(bootstrap, topics.values(), config.partitions)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    )
    for name, batch in streams.items():
        for p in range(config.partitions):
            for value in encode_json(batch.take(batch.partition == p)):
                producer.produce(topics[name], value, partition=p)
    assert producer.flush(30) == 0
    source = kafka_source(spark, bootstrap, topics)
    for query, at_least in (("q2", 900), ("q3", 5_000)):
        plan = builtin(query)
        output = collect(run_plan(plan, {i.name: [streams[i.name]] for i in plan.inputs})[0])
        report = check(query, reference(query, source), output)
        assert report.ok, report.lines()
        assert report.expected == len(output) >= at_least, query


def test_verify_command_reads_its_input_back_from_kafka(
    spark: Any, bootstrap: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`streamshift verify --input S=topic`: the seeds' q2 over input read from Kafka, against
    its output topic; a wrong value in the output makes it fail."""
    config = SeedStreamConfig(partitions=2)
    stream = seed_streams(SEED + 1, 0, 1_000, config)["S"]
    topic_in, topic_out = f"{prefix}S", f"{prefix}q2-out"
    ensure_topics(bootstrap, [topic_in, topic_out], config.partitions)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    )
    for p in range(config.partitions):
        for value in encode_json(stream.take(stream.partition == p)):
            producer.produce(topic_in, value, partition=p)
    assert producer.flush(30) == 0
    results, _ = run_plan(builtin("q2"), {"S": [stream]})
    values = [v for r in results for v in encode_results_json(r)]
    _produce_results(bootstrap, topic_out, values, commit=True)
    argv = ["verify", "--query", "q2", "--topic", topic_out, "--bootstrap", bootstrap]
    argv += ["--input", f"S={topic_in}"]

    assert cli.main(argv) == 0
    assert f"received={len(values)} missing=0" in capsys.readouterr().out

    wrong = orjson.loads(values[7])
    wrong["sum"] = wrong["sum"] + 1
    _produce_results(bootstrap, topic_out, [orjson.dumps(wrong)], commit=True)
    assert cli.main(argv) == 1
    assert "MISMATCH" in capsys.readouterr().out
