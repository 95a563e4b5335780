"""Nexmark q5 moving between two worker processes with input flowing: the origin runs on the first
three tenths of the bids, a target waits on hold, and a producer thread feeds the rest in seven
steps while the test drives a protocol; `assert_exact` then compares the committed output with
the in-process reference."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from dataclasses import dataclass

from streamshift_engine.events.batch import Batch
from support.kafka import produce, read_committed
from support.reference import reference

from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    nexmark_input,
    wait_ready,
    wait_status,
    worker_env,
)

EVERY_PARTITION = {"partitions": [0, 1, 2, 3]}


@dataclass
class FlowingQ5:
    services: Services
    run_id: str
    bids: Batch
    origin: dict[str, str]
    target: dict[str, str]
    producer: threading.Thread

    def assert_exact(self) -> None:
        """Once the producer is done: the committed output is the reference, once each, and
        the target holds every partition and has emitted."""
        self.producer.join(60)
        expected = reference("nexmark-q5", {"bid": self.bids}, 4)
        output = read_committed(self.services.kafka, f"{self.run_id}-out", len(expected), 40)
        assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
        assert output == expected
        status = control(self.target, "GET", "/v1/status")[1]
        assert status["partitions"] == [0, 1, 2, 3] and status["counts"]["results_out"] > 0


def start_flowing_q5(services: Services, run_id: str, workers: WorkerProcesses) -> FlowingQ5:
    """Origin emitting, target ready on hold, the producer feeding the remaining input."""
    bids = nexmark_input(30_000, 4)["bid"]
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], 4)
    cuts = [int(bids.ts[len(bids) * i // 10]) for i in range(3, 10)]
    produce(services.kafka, f"{run_id}-bid", bids.take(bids.ts < cuts[0]), "json")
    origin = worker_env(services, run_id, "nexmark-q5")
    wait_ready(origin, workers.start(origin))
    target = worker_env(
        services, run_id, "nexmark-q5", STREAMSHIFT_EPOCH="1", STREAMSHIFT_START="hold"
    )
    wait_ready(target, workers.start(target))
    wait_status(origin, lambda s: s["counts"]["results_out"] > 0)

    def feed() -> None:
        bounds = [*cuts, int(bids.ts[-1]) + 1]
        for low, high in itertools.pairwise(bounds):
            produce(
                services.kafka,
                f"{run_id}-bid",
                bids.take((bids.ts >= low) & (bids.ts < high)),
                "json",
            )
            time.sleep(0.5)

    producer = threading.Thread(target=feed)
    producer.start()
    return FlowingQ5(services, run_id, bids, origin, target, producer)
