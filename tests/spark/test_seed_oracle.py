"""The Spark oracle agrees with the engine on the seed queries Q1, Q2, Q3 (seed 000 (Pham et al.,
UniMiCo), section 4) over generated `S`/`T` streams, and catches injected errors in them."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.runner import collect, run_plan
from streamshift_engine.spark.oracle import check, generator_source, reference
from streamshift_engine.spark.seed_streams import SeedStreamConfig, seed_streams

SEED = 5
EVENTS = 3_000
"""19 s of event time at the default 160 events/s: about 13,000 Q1 results."""
PIECES = 4


def _engine_output(query: str, events: int, config: SeedStreamConfig) -> list[dict[str, Any]]:
    """The engine's results over the streams fed in `PIECES` batches each (watermarks between)."""
    streams = seed_streams(SEED, 0, events, config)
    plan = builtin(query)
    inputs: dict[str, list[Batch]] = {}
    for spec in plan.inputs:
        batch = streams[spec.name]
        cuts = np.linspace(0, len(batch), PIECES + 1).astype(int).tolist()
        inputs[spec.name] = [batch.take(slice(a, b)) for a, b in pairwise(cuts)]
    return collect(run_plan(plan, inputs)[0])


@pytest.mark.parametrize(
    ("query", "config", "at_least"),
    [
        ("q1", SeedStreamConfig(), 10_000),
        ("q2", SeedStreamConfig(), EVENTS // 3),
        ("q3", SeedStreamConfig(), 10_000),
        ("q3", SeedStreamConfig(tick_ms=200, per_tick=8, keys=30, partitions=3), 10_000),
    ],
)
def test_oracle_equals_engine_on_seed_queries(
    spark: Any, query: str, config: SeedStreamConfig, at_least: int
) -> None:
    expected = reference(query, generator_source(spark, SEED, 0, EVENTS, seed_config=config))
    output = _engine_output(query, EVENTS, config)
    report = check(query, expected, output)
    assert report.ok, report.lines()
    assert report.expected == report.received == len(output) >= at_least


def test_seed_streams_have_ties_and_every_partition() -> None:
    streams = seed_streams(SEED, 0, EVENTS)
    s, t = streams["S"], streams["T"]
    assert len(s) + len(t) == EVENTS
    assert len(np.unique(s.ts)) < len(s)
    assert len(np.intersect1d(s.ts, t.ts)) > 100
    assert set(s.partition.tolist()) == set(t.partition.tolist()) == set(range(8))
    for batch in (s, t):
        for p in range(8):
            own = batch.take(batch.partition == p)
            assert own.offset.tolist() == list(range(len(own)))
            assert bool(np.all(np.diff(own.ts) >= 0))


def test_a_later_range_gives_the_same_events() -> None:
    whole = seed_streams(SEED, 0, 3_000)["T"]
    tail = seed_streams(SEED, 1_000, 2_000)["T"]
    late = whole.take(slice(len(whole) - len(tail), None))
    np.testing.assert_array_equal(late.ts, tail.ts)
    for name in ("l", "m"):
        np.testing.assert_array_equal(late.columns[name], tail.columns[name])
    np.testing.assert_array_equal(late.partition, tail.partition)


def test_oracle_catches_errors_in_q3(spark: Any) -> None:
    expected = reference("q3", generator_source(spark, SEED, 0, 2_000))
    output = _engine_output("q3", 2_000, SeedStreamConfig())
    wrong = {**output[5], "sum": output[5]["sum"] + 1}
    injected = [*output[1:5], wrong, *output[6:], output[9]]
    report = check("q3", expected, injected)
    assert (report.missing, report.duplicates, report.wrong, report.extra) == (1, 1, 1, 0)
