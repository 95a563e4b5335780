"""A plan change by moving state between worker processes (seed 001 (Zhu et al., Dynamic Plan
Migration), 4.1): the origin runs the 3-way range join `(S join T) join U`, the target
`(S join U) join T`. The target matches the states by state id (S, U and T move, the state of S-T
pairs is discarded), recomputes the state of S-U pairs from the moved S and U states (Algorithm 1)
and resumes; input keeps arriving throughout, and the output read with `read_committed` equals the
in-process reference exactly (both join orders give the same results, named by their base
tuples)."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from typing import Any

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan
from streamshift_engine.plan.parse import plan_document
from support.kafka import produce, read_committed
from support.reference import reference

from .harness import (
    Services,
    WorkerProcesses,
    control,
    create_topics,
    wait_ready,
    wait_status,
    worker_env,
)

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]
SCHEMA = {"ts": "int", "k": "int", "m": "int"}
OLD: JoinTree = (("S", "T"), "U")
NEW: JoinTree = (("S", "U"), "T")


def document(tree: JoinTree) -> dict[str, Any]:
    """The plan of `tree` as the document a worker's STREAMSHIFT_PLAN carries."""
    return plan_document(join_tree_plan("joins", tree, 100, "k", SCHEMA))


def streams(count: int, partitions: int) -> dict[str, Batch]:
    """`count` records per stream over 15 s of event time, 8 keys, partitioned by key, with
    the offsets Kafka gives them."""
    rng = np.random.default_rng(11)
    data = {}
    for name in "STU":
        ts = np.sort(rng.integers(0, 15_000, count))
        k = rng.integers(0, 8, count)
        columns = {"ts": ts, "k": k, "m": rng.integers(0, 9, count)}
        partition = (k % partitions).astype(np.int32)
        offset = np.zeros(count, np.int64)  # each partition's records reach Kafka in ts order
        for p in range(partitions):
            offset[partition == p] = np.arange(int(np.sum(partition == p)))
        data[name] = Batch(name, ts, partition, offset, columns)
    return data


def test_moving_state_changes_the_join_order_exactly(
    services: Services, run_id: str, workers: WorkerProcesses
) -> None:
    inputs = streams(1_500, 4)
    create_topics(services, [f"{run_id}-{n}" for n in [*inputs, "out", "out.dead"]], 4)
    cuts = [i * 1_500 for i in range(3, 10)]

    def chunk(low: int, high: int) -> None:
        for name, batch in inputs.items():
            produce(
                services.kafka,
                f"{run_id}-{name}",
                batch.take((batch.ts >= low) & (batch.ts < high)),
                "json",
            )

    chunk(0, cuts[0])
    sources = json.dumps([{"name": n, "topic": f"{run_id}-{n}", "partitions": 4} for n in inputs])
    old, new = document(OLD), document(NEW)
    origin = worker_env(
        services,
        run_id,
        "nexmark-q5",
        STREAMSHIFT_PLAN=json.dumps(old),
        STREAMSHIFT_SOURCES=sources,
    )
    wait_ready(origin, workers.start(origin))
    target = worker_env(
        services,
        run_id,
        "nexmark-q5",
        STREAMSHIFT_PLAN=json.dumps(new),
        STREAMSHIFT_SOURCES=sources,
        STREAMSHIFT_EPOCH="1",
        STREAMSHIFT_START="hold",
    )
    wait_ready(target, workers.start(target))
    wait_status(origin, lambda s: s["counts"]["results_out"] > 0)

    def feed() -> None:
        for low, high in itertools.pairwise([*cuts, 15_001]):
            chunk(low, high)
            time.sleep(0.5)

    producer = threading.Thread(target=feed)
    producer.start()
    everything = {"partitions": [0, 1, 2, 3]}
    address = f"127.0.0.1:{origin['STREAMSHIFT_CONTROL_PORT']}"
    paused_at = time.monotonic()
    while not control(origin, "POST", "/v1/migrations/j1/pause", everything)[1]["paused"]:
        assert time.monotonic() < paused_at + 30, "origin never reached its markers"
        time.sleep(0.05)
    begin = {
        "role": "target",
        "protocol": "moving-state",
        "origins": [{"address": address, **everything}],
        "origin_plan": old,
        **everything,
    }
    status, begun = control(target, "POST", "/v1/migrations/j1/begin", begin)
    assert status == 200, begun
    assert begun["matched"] == ["join_SU/left", "join_SU/right", "join_SUT/right"]
    assert begun["unmatched"] == ["join_SUT/left"] and begun["discarded"] == ["join_STU/left"]
    status, resumed = control(target, "POST", "/v1/migrations/j1/recompute", everything)
    assert status == 200 and resumed["recomputed_tuples"] > 0, resumed
    print(
        f"moving-state join order: state bytes {begun['state_bytes']}, recomputed "
        f"{resumed['recomputed_tuples']} tuples, pause {time.monotonic() - paused_at:.3f} s"
    )
    producer.join(60)
    expected = reference(join_tree_plan("joins", OLD, 100, "k", SCHEMA), inputs, 4)
    output = read_committed(services.kafka, f"{run_id}-out", len(expected), 40)
    assert len(expected) > 100
    assert not [r for r, n in Counter(output).items() if n > 1], "duplicates"
    assert output == expected
    assert control(target, "GET", "/v1/status")[1]["counts"]["results_out"] > 0
