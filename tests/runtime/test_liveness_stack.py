"""The worker's liveness on the local stack: a worker that read all its input stays alive while
it idles, also when its input was written in transactions (a `read_committed` reader steps over
commit markers and aborted records, which the partitions' high watermarks count: compared with
the last record read, input would seem to wait for ever and the pod would be restarted again
and again)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer
from streamshift_engine.events.wire import encode_json
from support.kafka import read_committed
from support.reference import reference

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
STALL_S = 3


def health(env: dict[str, str]) -> tuple[int, str]:
    url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def test_an_idle_worker_over_transactional_input_stays_alive(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    bids = nexmark_input(5_000, PARTITIONS)["bid"]
    topic = f"{run_id}-bid"
    create_topics(services, [topic, f"{run_id}-out", f"{run_id}-out.dead"], PARTITIONS)
    producer = Producer({"bootstrap.servers": services.kafka, "transactional.id": run_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value, partition in zip(encode_json(bids), bids.partition.tolist(), strict=True):
        producer.produce(topic, value, partition=partition)
    producer.commit_transaction(30)
    producer.begin_transaction()  # aborted: a tail of records no read_committed reader sees
    for partition in range(PARTITIONS):
        for _ in range(50):
            producer.produce(topic, b'{"never": "read"}', partition=partition)
    producer.flush(30)
    producer.abort_transaction(30)
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    env = worker_env(services, run_id, "nexmark-q5", STREAMSHIFT_STALL_S=str(STALL_S))
    wait_ready(env, workers.start(env))
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 30) == expected
    for _ in range(4 * STALL_S):  # idle for four times the stall limit
        assert health(env) == (200, '{"ok": true}')
        time.sleep(1)
    status = control(env, "GET", "/v1/status")[1]
    assert status["counts"]["dead_letters"] == 0 and status["phase"] == "running"
