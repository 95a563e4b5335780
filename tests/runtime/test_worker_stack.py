"""A worker process on real Kafka and MinIO: exact output, crash recovery, dead letters, auth."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from confluent_kafka import Consumer, Producer
from support.kafka import produce, read_committed
from support.reference import reference

from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    metric,
    nexmark_input,
    wait_ready,
    worker_env,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(90)]
PARTITIONS = 4


def setup_q5(services: Services, run_id: str, fmt: str, count: int) -> list[str]:
    bids = nexmark_input(count, PARTITIONS)["bid"]
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    produce(services.kafka, f"{run_id}-bid", bids, fmt)
    return reference("nexmark-q5", {"bid": bids}, PARTITIONS)


@pytest.mark.parametrize("fmt", ["json", "columnar"])
def test_worker_output_equals_the_in_process_engine(
    services: Services, run_id: str, workers: WorkerProcesses, fmt: str
) -> None:
    expected = setup_q5(services, run_id, fmt, 20_000)
    assert len(expected) > 30
    env = worker_env(services, run_id, "nexmark-q5", STREAMSHIFT_INPUT_FORMAT=fmt)
    wait_ready(env, workers.start(env))
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 40) == expected
    status, body = control(env, "GET", "/v1/status")
    assert status == 200 and body["counts"]["events_in"] > 0
    assert body["offsets"] and body["watermark"] is not None
    assert metric(env, "streamshift_events_in_total") == body["counts"]["events_in"]
    assert metric(env, "streamshift_results_out_total") == len(expected)
    assert metric(env, "streamshift_migration_phase", phase="running") == 1.0
    assert metric(env, "streamshift_latency_seconds_count") > 0
    load = body["load"]  # the autoscaler's inputs: busy time excludes waiting for input
    assert load["busy_seconds"] > 0 and load["processed"] > 0
    assert set(load["lag_records"]) == {f"bid:{p}" for p in range(PARTITIONS)}
    assert metric(env, "streamshift_records_processed_total") == load["processed"]
    if fmt == "json":
        assert load["processed"] == body["counts"]["events_in"]
    time.sleep(2.0)  # idle: the consume waits, which is not busy time
    idle = control(env, "GET", "/v1/status")[1]["load"]
    assert idle["busy_seconds"] - load["busy_seconds"] < 0.5


@pytest.mark.parametrize(("fmt", "batch"), [("json", "500"), ("columnar", "1")])
def test_sigkill_mid_stream_and_restart_gives_exact_output(
    services: Services, run_id: str, workers: WorkerProcesses, fmt: str, batch: str
) -> None:
    """Killed while input is arriving, after a snapshot and some committed output."""
    bids = nexmark_input(30_000, PARTITIONS)["bid"]
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    cuts = [int(bids.ts[len(bids) * i // 4]) for i in (1, 2)]
    topic = f"{run_id}-bid"
    produce(services.kafka, topic, bids.take(bids.ts < cuts[0]), fmt)
    env = worker_env(
        services,
        run_id,
        "nexmark-q5",
        STREAMSHIFT_BATCH_SIZE=batch,
        STREAMSHIFT_INPUT_FORMAT=fmt,
        STREAMSHIFT_COMMIT_INTERVAL_S="0.2",
    )
    first = workers.start(env)
    wait_ready(env, first)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = control(env, "GET", "/v1/status")[1]
        if status["last_snapshot"] and status["counts"]["results_out"] > 0:
            break
        time.sleep(0.2)
    produce(services.kafka, topic, bids.take((bids.ts >= cuts[0]) & (bids.ts < cuts[1])), fmt)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    assert status["last_snapshot"] and status["counts"]["results_out"] > 0
    produce(services.kafka, topic, bids.take(bids.ts >= cuts[1]), fmt)
    wait_ready(env, workers.start(env))
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 40) == expected


def test_bad_events_reach_the_dead_letter_topic_with_their_reason(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    expected = setup_q5(services, run_id, "json", 5_000)
    producer = Producer({"bootstrap.servers": services.kafka, "enable.idempotence": True})
    producer.produce(f"{run_id}-bid", b"{not json", partition=1)
    producer.produce(f"{run_id}-bid", json.dumps({"auction": 1}).encode(), partition=2)
    producer.flush(10)
    env = worker_env(services, run_id, "nexmark-q5")
    wait_ready(env, workers.start(env))
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    reasons = dead_letters(services, f"{run_id}-out.dead", 2)
    assert sorted(reasons) == [("1", "bad json"), ("2", "missing field 'date_time'")]


def dead_letters(services: Services, topic: str, expect: int) -> list[tuple[str, str]]:
    consumer = Consumer(
        {
            "bootstrap.servers": services.kafka,
            "group.id": f"dlq-{time.time_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    found: list[tuple[str, str]] = []
    deadline = time.monotonic() + 20
    while len(found) < expect and time.monotonic() < deadline:
        for message in consumer.consume(100, 0.5):
            if message.error() is None:
                headers = {k: _text(v) for k, v in list(message.headers() or [])}
                found.append((headers["partition"], headers["reason"].split(":")[0]))
    consumer.close()
    return found


def test_control_api_needs_the_token(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    setup_q5(services, run_id, "json", 1_000)
    env = worker_env(services, run_id, "nexmark-q5")
    wait_ready(env, workers.start(env))
    assert control(env, "GET", "/v1/status", token="wrong")[0] == 401
    assert control(env, "POST", "/v1/migrations/m1/stop", token="")[0] == 401
    assert control(env, "GET", "/v1/status")[0] == 200
    assert control(env, "GET", "/healthz", token="wrong")[0] == 200


def _text(value: str | bytes | None) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
