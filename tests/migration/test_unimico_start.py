"""UniMiCo's `ts_start` when the target connects inside a run of equal timestamps (seed 000 (Pham
et al.) 3.1.1): a Kafka producer's batches need not end between two timestamps, so records with
the target's first timestamp may lie just before its connect offset, unread by it."""

from __future__ import annotations

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.run import compare, run_migration, run_reference
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.model import Plan

from migration.plan_inputs import instances, tumbling_plan


def runs_of_equal_timestamps() -> dict[str, Batch]:
    """One partition, three records at each timestamp 0, 10, 20, ...: with five records written
    per step, two connect offsets in three fall inside a run, some of them on a window start."""
    ts = np.repeat(np.arange(0, 1_000, 10), 3).astype(np.int64)
    n = len(ts)
    keys = np.arange(n) % 3
    columns = {"ts": ts, "k": keys, "m": np.arange(n) % 11}
    return {"S": Batch("S", ts, np.zeros(n, np.int32), np.zeros(n, np.int64), columns)}


@pytest.mark.parametrize("start", [4, 9, 16, 21, 28, 33, 40])
def test_the_target_starts_after_its_first_timestamp_run(start: int) -> None:
    plan: Plan = tumbling_plan(40)
    data = runs_of_equal_timestamps()
    reference = run_reference(plan, data, 1, instances([0]), 50)
    outcome = run_migration(
        UniMiCo, plan, plan, data, 1, instances([0]), 50, start, records_per_step=5
    )
    assert compare(reference.emitted, outcome.emitted) == []
    assert {e.owner for e in outcome.emitted} == {"origin", "target"}
