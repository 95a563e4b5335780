"""A q5 worker through a restart of its Kafka broker, on a private broker (the shared one serves
every other test): the worker is back to processing within 30 s of the broker's return, never
hangs (its control API answers throughout), and its committed output equals the in-process
engine's. A worker that cannot go on exits 1 with a log line saying so, and is started again as
its pod would be (the node agent restarts a container after 1 s)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from streamshift_dev.private_kafka import PrivateKafka
from support.kafka import produce, read_committed
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

pytestmark = [pytest.mark.stack, pytest.mark.timeout(360)]
PARTITIONS = 4
RECOVERY_GOAL_S = 30.0
RESTART_BACKOFF_S = 1.0  # the node agent's first restart delay


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[PrivateKafka]:
    kafka = PrivateKafka(tmp_path / "kafka")
    kafka.start()
    yield kafka
    kafka.stop(kill=True)


class OutputWatch:
    """A `read_committed` reader of the output topic: how many results are committed so far."""

    def __init__(self, kafka: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": kafka,
                "group.id": f"watch-{time.time_ns()}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([topic])
        self.count = 0

    def poll(self) -> int:
        for message in self.consumer.consume(1000, 0.2):
            if message.error() is None:
                self.count += 1
        return self.count

    def close(self) -> None:
        self.consumer.close()


class Pod:
    """A worker process restarted, as its pod's container would be, whenever it exits; each
    exit must be a failure that says so in its log."""

    def __init__(self, processes: WorkerProcesses, env: dict[str, str]) -> None:
        self.processes = processes
        self.env = env
        self.current = processes.start(env)
        self.restarts = 0

    def check(self) -> None:
        if self.current.poll() is None:
            return
        log = self.processes.log(len(self.processes.started) - 1)
        assert self.current.returncode == 1, log[-3000:]
        assert "worker exiting after a failure" in log, log[-3000:]
        self.restarts += 1
        time.sleep(RESTART_BACKOFF_S)
        self.current = self.processes.start(self.env)

    def logs(self) -> str:
        """The tail of every log, for a failure's message."""
        count = len(self.processes.started)
        return "\n".join(f"--- worker {i}\n{self.processes.log(i)[-4000:]}" for i in range(count))


def answers_quickly(env: dict[str, str], path: str) -> int:
    """The status code of a probe, which must come within 5 s (a hung worker's does not)."""
    url = f"http://127.0.0.1:{env['STREAMSHIFT_CONTROL_PORT']}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_worker_is_back_within_30_s_of_a_broker_restart_with_exact_output(
    services: Services, run_id: str, broker: PrivateKafka, tmp_path: Path
) -> None:
    private = Services(
        broker.bootstrap, services.s3_endpoint, services.s3_access_key, services.s3_secret_key
    )
    topic, out = f"{run_id}-bid", f"{run_id}-out"
    bids = nexmark_input(30_000, PARTITIONS)["bid"]
    create_topics(private, [topic, out, f"{out}.dead"], PARTITIONS)
    cuts = [int(bids.ts[len(bids) * i // 3]) for i in (1, 2)]
    produce(private.kafka, topic, bids.take(bids.ts < cuts[0]), "json")
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    env = worker_env(private, run_id, "nexmark-q5", STREAMSHIFT_COMMIT_INTERVAL_S="0.2")
    processes = WorkerProcesses(tmp_path)
    watch = OutputWatch(broker.bootstrap, out)
    try:
        pod = Pod(processes, env)
        wait_ready(env, pod.current)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = control(env, "GET", "/v1/status")[1]
            if status["last_snapshot"] and watch.poll() > 0:
                break
            time.sleep(0.2)
        assert status["last_snapshot"] and watch.count > 0
        produce(private.kafka, topic, bids.take((bids.ts >= cuts[0]) & (bids.ts < cuts[1])), "json")

        broker.stop()  # SIGTERM by its process id, as `kill` does
        for _ in range(3):  # the worker answers its probes while the broker is away
            time.sleep(2)
            assert answers_quickly(env, "/healthz") in (200, 503)
        broker.start()
        back = time.monotonic()
        before = watch.poll()
        produce(private.kafka, topic, bids.take(bids.ts >= cuts[1]), "json")
        recovered(pod, watch, before, len(expected), back, "the broker")
        assert read_committed(private.kafka, out, len(expected), 10) == expected, pod.logs()
        assert answers_quickly(env, "/healthz") == 200
    finally:
        watch.close()
        processes.kill_all()


def test_worker_rides_out_a_frozen_broker_with_exact_output(
    services: Services, run_id: str, broker: PrivateKafka, tmp_path: Path
) -> None:
    """A broker that hangs for 20 s (SIGSTOP: connections stay open, nothing answers), as a
    network partition looks to a client: the control API answers throughout, the worker is back
    within 30 s of the broker's return, and the output is exact."""
    private = Services(
        broker.bootstrap, services.s3_endpoint, services.s3_access_key, services.s3_secret_key
    )
    topic, out = f"{run_id}-bid", f"{run_id}-out"
    bids = nexmark_input(30_000, PARTITIONS)["bid"]
    create_topics(private, [topic, out, f"{out}.dead"], PARTITIONS)
    cut = int(bids.ts[len(bids) // 2])
    produce(private.kafka, topic, bids.take(bids.ts < cut), "json")
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    env = worker_env(private, run_id, "nexmark-q5", STREAMSHIFT_COMMIT_INTERVAL_S="0.2")
    processes = WorkerProcesses(tmp_path)
    watch = OutputWatch(broker.bootstrap, out)
    try:
        pod = Pod(processes, env)
        wait_ready(env, pod.current)
        deadline = time.monotonic() + 30
        while watch.poll() == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert watch.count > 0
        broker.freeze()
        for _ in range(4):
            time.sleep(5)
            pod.check()
            assert answers_quickly(env, "/healthz") in (200, 503)
        before = watch.poll()
        broker.thaw()
        back = time.monotonic()
        produce(private.kafka, topic, bids.take(bids.ts >= cut), "json")
        recovered(pod, watch, before, len(expected), back, "the thaw")
        assert read_committed(private.kafka, out, len(expected), 10) == expected, pod.logs()
    finally:
        watch.close()
        processes.kill_all()


def recovered(
    pod: Pod, watch: OutputWatch, before: int, expected: int, back: float, what: str
) -> None:
    """Wait until the committed output grows past `before` (the recovery, within the goal) and
    then reaches `expected` results, restarting the worker like its pod if it exits."""
    recovered_after = None
    while time.monotonic() - back < RECOVERY_GOAL_S + 30:
        pod.check()
        committed = watch.poll()
        if recovered_after is None and committed > before:
            recovered_after = time.monotonic() - back
        if committed >= expected:
            break
    assert recovered_after is not None, pod.logs()
    print(f"worker back {recovered_after:.1f} s after {what}, {pod.restarts} restarts")
    assert recovered_after <= RECOVERY_GOAL_S, pod.logs()


def test_a_loop_stalled_while_input_waits_is_not_alive(
    services: Services, run_id: str, broker: PrivateKafka, tmp_path: Path
) -> None:
    """Liveness on a real stall: the broker frozen (SIGSTOP) while a backlog waits, so the
    partitions stop returning records though the high watermarks the consumer last saw say
    input waits. Within the stall limit (plus what the client had fetched ahead) `/healthz`
    answers 503, which makes the kubelet restart the pod, and the control API still answers
    (`/v1/status` with the problem once the loop's thread does not answer); thawed, the worker
    (started again whenever it exited) catches up, exact."""
    stall_s = 3.0
    private = Services(
        broker.bootstrap, services.s3_endpoint, services.s3_access_key, services.s3_secret_key
    )
    topic, out = f"{run_id}-bid", f"{run_id}-out"
    bids = nexmark_input(400_000, PARTITIONS)["bid"]
    create_topics(private, [topic, out, f"{out}.dead"], PARTITIONS)
    produce(private.kafka, topic, bids, "json")
    expected = reference("nexmark-q5", {"bid": bids}, PARTITIONS)
    env = worker_env(
        private,
        run_id,
        "nexmark-q5",
        STREAMSHIFT_COMMIT_INTERVAL_S="0.2",
        STREAMSHIFT_STALL_S=str(stall_s),
    )
    processes = WorkerProcesses(tmp_path)
    watch = OutputWatch(broker.bootstrap, out)
    try:
        pod = Pod(processes, env)
        wait_ready(env, pod.current)
        deadline = time.monotonic() + 30
        while watch.poll() == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert watch.count > 0 and answers_quickly(env, "/healthz") == 200
        broker.freeze()
        frozen = time.monotonic()
        while answers_quickly(env, "/healthz") == 200:
            assert time.monotonic() - frozen < stall_s + 30, "alive though nothing advanced"
            time.sleep(0.5)
        print(f"not alive {time.monotonic() - frozen:.1f} s after the freeze")
        code, status = control(env, "GET", "/v1/status")  # the loop's thread is stuck: it says so
        assert code == 200 or (code == 503 and status["error"]), status
        broker.thaw()
        back = time.monotonic()
        recovered(pod, watch, watch.poll(), len(expected), back, "the thaw")
        assert read_committed(private.kafka, out, len(expected), 10) == expected, pod.logs()
    finally:
        watch.close()
        processes.kill_all()
