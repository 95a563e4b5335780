"""Moving state between worker processes, driven through the control API as the operator drives
it: the origin pauses all four partitions at markers and drains; the target (started on hold)
`begin`s by pulling the states straight from the origin's control API (the origin releases
them), matches them by state id, then `recompute`s (nothing to recompute for the same plan) and
resumes from the positions the state covers. Input keeps arriving throughout; the output read
with `read_committed` equals the in-process reference exactly."""

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


def test_moving_state_with_input_flowing_is_exact(
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
    address = f"127.0.0.1:{origin['STREAMSHIFT_CONTROL_PORT']}"
    begin = {
        "role": "target",
        "protocol": "moving-state",
        "origins": [{"address": address, **everything}],
        **everything,
    }
    assert control(origin, "POST", "/v1/migrations/s1/export", everything)[0] == 409  # not paused
    paused_at = time.monotonic()
    while not control(origin, "POST", "/v1/migrations/s1/pause", everything)[1]["paused"]:
        assert time.monotonic() < paused_at + 30, "origin never reached its markers"
        time.sleep(0.05)
    status, begun = control(target, "POST", "/v1/migrations/s1/begin", begin)
    assert status == 200 and begun["state_bytes"] > 0 and begun["unmatched"] == []
    assert begun["matched"] == ["counts/*", "hottest/*"] and begun["discarded"] == []
    assert control(target, "POST", "/v1/migrations/s1/begin", begin)[1] == begun
    assert control(origin, "GET", "/v1/status")[1]["partitions"] == []
    status, resumed = control(target, "POST", "/v1/migrations/s1/recompute", everything)
    pause = time.monotonic() - paused_at
    assert status == 200 and resumed["recomputed_tuples"] == 0
    assert control(target, "POST", "/v1/migrations/s1/recompute", everything)[1] == resumed
    print(f"moving-state q5: state bytes {begun['state_bytes']}, pause {pause:.3f} s")
    producer.join(60)
    expected = reference("nexmark-q5", {"bid": bids}, 4)
    output = read_committed(services, f"{run_id}-out", len(expected), 40)
    assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
    assert output == expected
    assert control(target, "GET", "/v1/status")[1]["partitions"] == [0, 1, 2, 3]
    assert control(target, "GET", "/v1/status")[1]["counts"]["results_out"] > 0
