"""Migrations between worker processes, driven through the control API as the operator drives
them. State-transfer: the origin pauses partitions 2 and 3, snapshots and releases them; the
target (started on hold) adopts them while input keeps arriving; output read with read_committed
has no duplicate, nothing outside the reference, and nothing missing up to the reference's
watermark. UniMiCo: the target reads from the log end and reports `ts_start`, the origin fixes
the activation and finishes the windows before it, the target's held output is released after,
while input keeps arriving; output equals the reference. Savepoint-restart: the origin stops
with a final snapshot, a new pod (next epoch) restores it; output equals the reference exactly."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from support.kafka import produce, read_committed
from support.reference import reference

from .flowing_q5 import EVERY_PARTITION, start_flowing_q5
from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    nexmark_input,
    reference_flushed,
    wait_ready,
    wait_status,
    worker_env,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]


def test_state_transfer_of_two_partitions_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    inputs = nexmark_input(40_000, 4)
    inputs = {"person": inputs["person"], "auction": inputs["auction"]}
    create_topics(services, [f"{run_id}-{n}" for n in [*inputs, "out", "out.dead"]], 4)
    half = int(inputs["auction"].ts[len(inputs["auction"]) // 2])
    for name, batch in inputs.items():
        produce(services.kafka, f"{run_id}-{name}", batch.take(batch.ts < half), "json")
    origin = worker_env(services, run_id, "nexmark-q8")
    wait_ready(origin, workers.start(origin))
    target = worker_env(
        services,
        run_id,
        "nexmark-q8",
        STREAMSHIFT_EPOCH="1",
        STREAMSHIFT_PARTITIONS="2,3",
        STREAMSHIFT_START="hold",
    )
    wait_ready(target, workers.start(target))
    assert control(target, "GET", "/v1/status")[1]["phase"] == "holding"
    deadline = time.monotonic() + 30
    while control(origin, "GET", "/v1/status")[1]["counts"]["results_out"] == 0:
        assert time.monotonic() < deadline, "origin produced nothing"
        time.sleep(0.2)
    moving = {"partitions": [2, 3]}
    while not control(origin, "POST", "/v1/migrations/m1/pause", moving)[1]["paused"]:
        assert time.monotonic() < deadline, "origin never reached its markers"
        time.sleep(0.1)
    status, manifest = control(origin, "POST", "/v1/migrations/m1/snapshot", moving)
    assert status == 200 and manifest["partitions"] == [2, 3] and manifest["migration"] == "m1"
    assert control(origin, "POST", "/v1/migrations/m1/snapshot", moving)[1] == manifest
    assert control(origin, "POST", "/v1/migrations/m1/release", moving)[0] == 200
    status, begun = control(target, "POST", "/v1/migrations/m1/begin", {"role": "target", **moving})
    # the migration's snapshot, or a periodic one taken while 2 and 3 were paused (same reach)
    assert status == 200 and len(begun["restored"]) == 1
    assert begun["restored"][0] >= manifest["object_key"]
    for name, batch in inputs.items():
        produce(services.kafka, f"{run_id}-{name}", batch.take(batch.ts >= half), "json")
    complete = reference_flushed("nexmark-q8", inputs)
    at_least = reference("nexmark-q8", inputs, 4)
    output = read_committed(services.kafka, f"{run_id}-out", len(at_least), 40)
    assert len(at_least) > 20
    assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
    assert set(output) <= set(complete), "results outside the reference"
    assert set(at_least) <= set(output), "missing results"
    assert control(origin, "GET", "/v1/status")[1]["partitions"] == [0, 1]
    assert control(target, "GET", "/v1/status")[1]["partitions"] == [2, 3]


def test_savepoint_restart_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    bids = nexmark_input(24_000, 4)["bid"]
    create_topics(services, [f"{run_id}-bid", f"{run_id}-out", f"{run_id}-out.dead"], 4)
    half = int(bids.ts[len(bids) // 2])
    produce(services.kafka, f"{run_id}-bid", bids.take(bids.ts < half), "json")
    origin = worker_env(services, run_id, "nexmark-q5", STREAMSHIFT_SNAPSHOT_INTERVAL_S="600")
    first = workers.start(origin)
    wait_ready(origin, first)
    deadline = time.monotonic() + 30
    while control(origin, "GET", "/v1/status")[1]["counts"]["results_out"] == 0:
        assert time.monotonic() < deadline, "origin produced nothing"
        time.sleep(0.2)
    status, manifest = control(origin, "POST", "/v1/migrations/m2/stop")
    assert status == 200 and manifest["partitions"] == [0, 1, 2, 3]
    assert first.wait(20) == 0
    produce(services.kafka, f"{run_id}-bid", bids.take(bids.ts >= half), "json")
    restarted = worker_env(services, run_id, "nexmark-q5", STREAMSHIFT_EPOCH="1")
    wait_ready(restarted, workers.start(restarted))
    expected = reference("nexmark-q5", {"bid": bids}, 4)
    assert read_committed(services.kafka, f"{run_id}-out", len(expected), 40) == expected


def test_unimico_with_input_flowing_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    flow = start_flowing_q5(services, run_id, workers)
    origin, target, everything = flow.origin, flow.target, EVERY_PARTITION
    status, begun = control(
        target,
        "POST",
        "/v1/migrations/m3/begin",
        {"role": "target", "protocol": "unimico", **everything},
    )
    assert status == 200 and begun["role"] == "target"
    probed = wait_status(target, lambda s: s["roles"]["m3"]["ts_start"] is not None)
    ts_start = probed["roles"]["m3"]["ts_start"]
    handoff = {"protocol": "unimico", "ts_start": ts_start, **everything}
    status, origin_handoff = control(origin, "POST", "/v1/migrations/m3/handoff", handoff)
    assert status == 200 and origin_handoff["ready"] and origin_handoff["activation"] >= ts_start
    assert control(target, "POST", "/v1/migrations/m3/activate", origin_handoff)[0] == 200
    flow.producer.join(60)
    done = wait_status(origin, lambda s: s["roles"]["m3"]["done"])["roles"]["m3"]
    release = {"handed_over_at": done["handed_over_at"]}
    assert control(target, "POST", "/v1/migrations/m3/release-output", release)[0] == 200
    flow.assert_exact()
    assert control(origin, "GET", "/v1/status")[1]["partitions"] == []
