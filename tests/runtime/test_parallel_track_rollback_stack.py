"""Parallel-track migrations rolled back.

The origin crashes while the target holds (after a
`release-until` with the origin's committed watermark), input flows on, then the target goes too
and a new origin adopts the partitions, as the operator's rollback does (it replaces the origin
pods). The new origin recovers from the query's consumer group and snapshots, shared by all its
instances: a target commits no positions and takes no snapshot of partitions it does not own
yet (`Worker.taking_over`), so the origin restores its own and the output read with
`read_committed` equals the in-process reference, once each. With the target's commits and
snapshots the new origin skipped the results the crashed origin had not emitted (19 missing).

The target is lost while it holds results it never released, and the origin, stopped as the
rollback replaces it, is followed by a new one: results of new tuples in windows that closed
during the split are in no one's output, and the committed watermark is past them. The origin
took no snapshot while it split its output and marked its commits, so the new one replays from
before the split and emits what the output lacks (`runtime.published`). Before, its final
snapshot covered those windows, and 34 results were missing."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from typing import Any

import pytest
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

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]
EVERY_PARTITION = {"partitions": [0, 1, 2, 3]}


def consumed_all(status: dict[str, Any], fed: int) -> bool:
    """The worker read the `fed` records and committed at the watermark they make."""
    mark = status["watermark"]
    return bool(sum(status["offsets"].values()) == fed and mark == status["committed_watermark"])


def crash(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)


Pair = tuple[dict[str, str], subprocess.Popen[bytes], dict[str, str], subprocess.Popen[bytes]]


def origin_and_target(
    services: Services, run_id: str, workers: WorkerProcesses, **origin_settings: str
) -> Pair:
    """A q5 origin reading every partition and a target holding for a migration, both ready:
    (origin env, origin process, target env, target process)."""
    origin = worker_env(services, run_id, "nexmark-q5", **origin_settings)
    first = workers.start(origin)
    wait_ready(origin, first)
    target = worker_env(
        services, run_id, "nexmark-q5", STREAMSHIFT_EPOCH="1", STREAMSHIFT_START="hold"
    )
    second = workers.start(target)
    wait_ready(target, second)
    return origin, first, target, second


def test_rollback_while_the_target_holds_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    bids = nexmark_input(30_000, 4)["bid"]
    topic = f"{run_id}-bid"
    create_topics(services, [topic, f"{run_id}-out", f"{run_id}-out.dead"], 4)
    cuts = [int(bids.ts[len(bids) * i // 100]) for i in (30, 34, 60)]
    produce(services.kafka, topic, bids.take(bids.ts < cuts[0]), "json")
    origin, first, target, second = origin_and_target(services, run_id, workers)
    wait_status(origin, lambda s: s["counts"]["results_out"] > 0)
    track = {"protocol": "parallel-track", **EVERY_PARTITION}
    split = control(origin, "POST", "/v1/migrations/r1/split", track)[1]
    body = {"role": "target", **track}
    body |= {k: split[k] for k in ("split", "offsets", "rows_counted")}
    assert control(target, "POST", "/v1/migrations/r1/begin", body)[0] == 200
    produce(services.kafka, topic, bids.take((bids.ts >= cuts[0]) & (bids.ts < cuts[1])), "json")
    fed = int((bids.ts < cuts[1]).sum())
    due = wait_status(origin, lambda s: consumed_all(s, fed))
    wait_status(target, lambda s: consumed_all(s, fed))
    until = {"protocol": "parallel-track", "until": due["committed_watermark"]}
    assert control(target, "POST", "/v1/migrations/r1/release-until", until)[0] == 200
    assert not due["roles"]["r1"]["done"]  # the origin still holds old tuples
    crash(first)
    produce(services.kafka, topic, bids.take((bids.ts >= cuts[1]) & (bids.ts < cuts[-1])), "json")
    fed = int((bids.ts < cuts[-1]).sum())
    wait_status(target, lambda s: consumed_all(s, fed))
    time.sleep(1.5)  # a snapshot interval and more: the target commits and snapshots meanwhile
    crash(second)
    wait_ready(origin, workers.start(origin))
    produce(services.kafka, topic, bids.take(bids.ts >= cuts[-1]), "json")
    expected = reference("nexmark-q5", {"bid": bids}, 4)
    output = read_committed(services.kafka, f"{run_id}-out", len(expected), 40)
    assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
    assert output == expected


@pytest.mark.parametrize(
    ("lost", "snapshot_s"), [("origin", "1"), ("target", "1"), ("origin", "600")]
)
def test_rollback_after_a_lost_pod_is_exact(
    services: Services, run_id: str, workers: WorkerProcesses, lost: str, snapshot_s: str
) -> None:
    """The lost pod is killed, the other stopped as the rollback deletes it (a final
    snapshot), then a new origin starts: from the origin's snapshot before the split, or from
    none (the query younger than a snapshot interval)."""
    bids = nexmark_input(30_000, 4)["bid"]
    topic = f"{run_id}-bid"
    create_topics(services, [topic, f"{run_id}-out", f"{run_id}-out.dead"], 4)
    cut = int(bids.ts[len(bids) * 30 // 100])
    produce(services.kafka, topic, bids.take(bids.ts < cut), "json")
    origin, first, target, second = origin_and_target(
        services, run_id, workers, STREAMSHIFT_SNAPSHOT_INTERVAL_S=snapshot_s
    )
    wait_status(origin, lambda s: consumed_all(s, int((bids.ts < cut).sum())))
    time.sleep(1.5)  # a snapshot interval and more: the origin snapshots before the split
    track = {"protocol": "parallel-track", **EVERY_PARTITION}
    split = control(origin, "POST", "/v1/migrations/r2/split", track)[1]
    assert split["splitting_output"] == [0, 1, 2, 3]
    body = {"role": "target", **track}
    body |= {k: split[k] for k in ("split", "offsets", "rows_counted")}
    assert control(target, "POST", "/v1/migrations/r2/begin", body)[0] == 200
    # q5's windows (10 s, slide 2 s) that straddle the split close within 10 s of it, the old
    # box done once the last of them closed: stop a second before that one's end
    later = split["split"] // 2_000 * 2_000 + 9_000
    produce(services.kafka, topic, bids.take((bids.ts >= cut) & (bids.ts < later)), "json")
    fed = int((bids.ts < later).sum())
    due = wait_status(origin, lambda s: consumed_all(s, fed))
    wait_status(target, lambda s: sum(s["offsets"].values()) == fed)
    assert not due["roles"]["r2"]["done"]  # the origin still holds old tuples
    time.sleep(1.5)  # a snapshot interval and more: none may be taken during the split
    killed, stopped = (first, second) if lost == "origin" else (second, first)
    crash(killed)
    stopped.send_signal(signal.SIGTERM)  # the rollback deletes the other pod
    stopped.wait(30)
    wait_ready(origin, workers.start(origin))
    produce(services.kafka, topic, bids.take(bids.ts >= later), "json")
    expected = reference("nexmark-q5", {"bid": bids}, 4)
    output = read_committed(services.kafka, f"{run_id}-out", len(expected), 40)
    assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
    assert output == expected
