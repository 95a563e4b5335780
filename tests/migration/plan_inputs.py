"""Inputs and instances shared by the plan-change, modification and rescale tests: random
streams of `(ts, k, m)` records keyed by `k`, over `PARTITIONS` partitions, and engine instances."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.cluster import InstanceFactory
from streamshift_engine.plan.model import Plan
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
