"""The verifier tests' query and input: per-key sums over 1 s windows of a stream `S` with an
unread field, its records as Kafka holds them, and the output as the workers write it."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
from streamshift_engine.events.wire import decode_json, encode_results_json
from streamshift_engine.runner import Instance
from streamshift_engine.runtime.projection import input_schemas, projected
from streamshift_operator.migration.verification_diff import plan_of

WINDOW_MS = 1000
SUMS = {
    "name": "sums",
    "inputs": [
        {
            "name": "S",
            "topic": "s",
            "time_field": "ts",
            "key_field": "k",
            "schema": {"ts": "int", "k": "int", "m": "int", "note": "int"},
        }
    ],
    "operators": [
        {
            "id": "sum",
            "type": "window_aggregate",
            "input": "S",
            "params": {
                "window": {"kind": "time", "size": WINDOW_MS},
                "group_by": ["k"],
                "aggregates": [{"name": "total", "fn": "sum", "field": "m"}],
            },
        }
    ],
    "output": "sum",
}
PARTITIONS = 2
Inputs = dict[str, dict[int, list[tuple[int, bytes]]]]


def sums_input(count: int = 60, note: Any = 7) -> Inputs:
    """`count` records a partition, one every 100 ms, key = partition, m = offset."""
    return {
        "S": {
            p: [
                (i, orjson.dumps({"ts": i * 100, "k": p, "m": i, "note": note}))
                for i in range(count)
            ]
            for p in range(PARTITIONS)
        }
    }


def worker_output(plan_doc: dict[str, Any], inputs: Inputs) -> list[dict[str, Any]]:
    """The output as the workers write it: one instance a partition, each running the
    projected plan, its results encoded by the sink's JSON encoder and read back."""
    plan = plan_of(plan_doc)
    schemas = input_schemas(plan)
    output = []
    for partition in range(PARTITIONS):
        instance = Instance(projected(plan), [partition])
        for name, by_partition in inputs.items():
            records = by_partition[partition]
            batch, _ = decode_json(
                name,
                [value for _, value in records],
                np.full(len(records), partition, np.int32),
                np.array([offset for offset, _ in records], np.int64),
                schemas[name],
            )
            instance.feed(name, partition, batch)
        for results in instance.poll():
            output += [orjson.loads(value) for value in encode_results_json(results)]
    return output
