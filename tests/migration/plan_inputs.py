"""Inputs, plans and instances shared by the migration tests: random streams of `(ts, k, m)`
records keyed by `k`, over `PARTITIONS` partitions, a tumbling sum over them, and engine
instances."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.cluster import InstanceFactory
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan
from streamshift_engine.runner import Instance

SCHEMA = {"ts": "int", "k": "int", "m": "int"}
PARTITIONS = 2


def streams(
    names: Iterable[str], seed: int, count: int, keys: int = 4, partitions: int = PARTITIONS
) -> dict[str, Batch]:
    rng = np.random.default_rng(seed)
    data = {}
    for name in names:
        ts = np.sort(rng.integers(0, 2_000, count))
        k = rng.integers(0, keys, count)
        columns = {"ts": ts, "k": k, "m": rng.integers(0, 9, count)}
        partition = (k % partitions).astype(np.int32)
        data[name] = Batch(name, ts, partition, np.zeros(count, np.int64), columns)
    return data


def instances(partitions: Iterable[int] = range(PARTITIONS)) -> InstanceFactory:
    chosen = list(partitions)

    def factory(plan: Plan) -> Instance:
        return Instance(plan, chosen)

    return factory


def tumbling_plan(size: int) -> Plan:
    """A per-`k` sum of `m` over tumbling windows of `size` ms."""
    schema = {"ts": "int", "k": "int", "m": "int"}
    params = {
        "window": {"kind": "time", "size": size, "slide": size},
        "group_by": ["k"],
        "aggregates": [{"name": "sum", "fn": "sum", "field": "m"}],
    }
    return parse_plan(
        {
            "name": "sum",
            "inputs": [
                {"name": "S", "topic": "s", "time_field": "ts", "key_field": "k", "schema": schema}
            ],
            "operators": [{"id": "w", "type": "window_aggregate", "input": "S", "params": params}],
            "output": "w",
        }
    )
