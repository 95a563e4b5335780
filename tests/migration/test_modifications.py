"""The runtime modifications of seed 003 (Bartnik et al., On-the-fly Reconfiguration) applied by
state-transfer exactly once: every result before the marker comes from the old plan, every result
after it from the new plan, none twice and none lost, checked against a brute-force reference of the
stateful map query (SMQ) with a function."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.cluster import Cluster
from streamshift_engine.migration.group import Group
from streamshift_engine.migration.log import TopicPartition
from streamshift_engine.migration.modifications import introduce_operator, replace_function
from streamshift_engine.migration.run import run_migration
from streamshift_engine.migration.state_moving import StateTransfer
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

from migration.plan_inputs import PARTITIONS, instances

SCHEMA = {"ts": "int", "key": "int", "value": "int"}
SCALED = {"key": "key", "output": "count"}


def scored_smq() -> Plan:
    source = {"name": "numbers", "topic": "numbers", "time_field": "ts", "key_field": "key"}
    counter = {"id": "counter", "type": "stateful_map", "input": "numbers", "params": SCALED}
    score: dict[str, Any] = {"id": "score", "type": "map", "input": "counter"}
    score["params"] = {"fields": {"score": "value * 2"}}
    return parse_plan(
        {
            "name": "smq",
            "inputs": [dict(source, schema=SCHEMA)],
            "operators": [counter, score],
            "output": "score",
        }
    )


def numbers(seed: int, count: int = 300) -> dict[str, Batch]:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 2_000, count))
    key = rng.integers(0, 5, count)
    columns = {"ts": ts, "key": key, "value": rng.integers(0, 10, count)}
    partition = (key % PARTITIONS).astype(np.int32)
    return {"numbers": Batch("numbers", ts, partition, np.zeros(count, np.int64), columns)}


class RecordingTransfer(StateTransfer):
    """State transfer that records where the new plan took over."""

    switches: ClassVar[list[dict[TopicPartition, int]]] = []

    def _install(self, cluster: Cluster, target: Group) -> None:
        super()._install(cluster, target)
        RecordingTransfer.switches.append(dict(self.travelled["positions"]))


def reference(data: Batch, switch: dict[TopicPartition, int], new_row: Any) -> dict[str, Any]:
    """Per record id its output row: counts over all records of its key so far; the old plan's
    fields before the switch position of its partition, the new plan's (or none) from it on."""
    order = np.lexsort((data.ts, data.partition))
    offsets: dict[int, int] = defaultdict(int)
    counts: dict[int, int] = defaultdict(int)
    rows = {}
    for index in order.tolist():
        p, key = int(data.partition[index]), int(data.columns["key"][index])
        offset = offsets[p]
        offsets[p] += 1
        counts[key] += 1
        row = {"ts": int(data.ts[index]), "key": key, "value": int(data.columns["value"][index])}
        row["count"] = counts[key]
        made = (
            {**row, "score": row["value"] * 2} if offset < switch[("numbers", p)] else new_row(row)
        )
        if made is not None:
            rows[f"smq|-1|-1|numbers@{p}:{offset}"] = made
    return rows


def run(new_plan: Plan, seed: int, start: int) -> tuple[dict[str, Any], dict[TopicPartition, int]]:
    data = numbers(seed)
    RecordingTransfer.switches.clear()
    outcome = run_migration(
        RecordingTransfer,
        scored_smq(),
        new_plan,
        data,
        PARTITIONS,
        instances(),
        50,
        start,
        seed=seed,
        max_delay=2,
    )
    emitted: dict[str, Any] = {}
    for entry in outcome.emitted:
        for record in entry.results.to_records():
            assert record["id"] not in emitted, "a result emitted twice"
            emitted[record["id"]] = {
                k: record[k] for k in ("ts", "key", "value", "count", "score") if k in record
            }
    (switch,) = RecordingTransfer.switches
    return emitted, switch


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6), start=st.integers(2, 35))
def test_a_replaced_function_applies_exactly_from_the_marker(seed: int, start: int) -> None:
    tripled = replace_function(scored_smq(), "score", {"fields": {"score": "value * 3"}})
    emitted, switch = run(tripled, seed, start)
    expected = reference(numbers(seed)["numbers"], switch, lambda r: {**r, "score": r["value"] * 3})
    assert emitted == expected
    assert any(v["score"] == 3 * v["value"] != 0 for v in emitted.values())
    assert any(v["score"] == 2 * v["value"] != 0 for v in emitted.values())


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6), start=st.integers(2, 35))
def test_an_introduced_operator_applies_exactly_from_the_marker(seed: int, start: int) -> None:
    small = {"id": "small", "type": "filter", "params": {"predicate": "value < 5"}}
    filtered = introduce_operator(scored_smq(), small, after="score")
    assert filtered.output == "small"
    emitted, switch = run(filtered, seed, start)
    expected = reference(
        numbers(seed)["numbers"],
        switch,
        lambda r: {**r, "score": r["value"] * 2} if r["value"] < 5 else None,
    )
    assert emitted == expected


def test_a_window_aggregate_cannot_get_a_new_function() -> None:
    aggregate: dict[str, Any] = {"id": "total", "type": "window_aggregate"}
    aggregate["params"] = {
        "window": {"kind": "time", "size": 100, "slide": 100},
        "aggregates": [{"name": "s", "fn": "sum", "field": "value"}],
    }
    summed = introduce_operator(scored_smq(), aggregate, after="score")
    with pytest.raises(ValueError, match="would change its state"):
        replace_function(summed, "total", aggregate["params"])
