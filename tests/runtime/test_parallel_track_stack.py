"""Parallel track between worker processes, driven through the control API as the operator
drives it: the origin splits old from new tuples at its watermark and reports where the target
must read from; the target runs the plan from there with empty state and holds its output;
the origin emits only results with an old tuple and hands the partitions over once it holds
none; the target's held output is then released. Input keeps arriving throughout; the output
read with `read_committed` equals the in-process reference exactly."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter

import pytest

from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    nexmark_input,
    produce,
    read_committed,
    reference,
    wait_ready,
    worker_env,
)
from .test_migrations_stack import wait_status

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]


def test_parallel_track_with_input_flowing_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    bids = nexmark_input(30_000, 4)["bid"]
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], 4)
    cuts = [int(bids.ts[len(bids) * i // 10]) for i in range(3, 10)]
    produce(services, f"{run_id}-bid", bids.take(bids.ts < cuts[0]), "json")
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
                services, f"{run_id}-bid", bids.take((bids.ts >= low) & (bids.ts < high)), "json"
            )
            time.sleep(0.5)

    producer = threading.Thread(target=feed)
    producer.start()
    everything = {"partitions": [0, 1, 2, 3]}
    status, split = control(origin, "POST", "/v1/migrations/p1/split", everything)
    assert status == 200 and split["role"] == "origin" and len(split["offsets"]) == 4
    assert control(origin, "POST", "/v1/migrations/p1/split", everything)[1] == split
    body = {
        "role": "target",
        "protocol": "parallel-track",
        "split": split["split"],
        "offsets": split["offsets"],
        **everything,
    }
    status, begun = control(target, "POST", "/v1/migrations/p1/begin", body)
    assert status == 200 and begun["role"] == "target"
    producer.join(60)
    wait_status(origin, lambda s: s["track"]["done"])
    assert control(origin, "GET", "/v1/status")[1]["partitions"] == []
    released = {"protocol": "parallel-track"}
    assert control(target, "POST", "/v1/migrations/p1/release-output", released)[0] == 200
    expected = reference("nexmark-q5", {"bid": bids}, 4)
    output = read_committed(services, f"{run_id}-out", len(expected), 40)
    assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
    assert output == expected
    assert control(target, "GET", "/v1/status")[1]["counts"]["results_out"] > 0
