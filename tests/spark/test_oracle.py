"""The Spark oracle agrees with the engine on exact output and catches injected errors.

The engine's `run_plan` over the same generated input is the exact output; the oracle computes
its reference in Spark SQL, sharing only the generator with the engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from streamshift_engine.events.batch import Batch
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.runner import collect, run_plan
from streamshift_engine.spark.compare import result_id
from streamshift_engine.spark.oracle import check, generator_source, key_names, reference

SEED = 11
EVENTS = 120_000
"""12 s of event time at the default 10,000 events/s: two q7/q8 windows, seven of q5."""


def _engine_output(query: str, events: int) -> list[dict[str, Any]]:
    batches = generate(SEED, 0, events)
    if query == "smq":
        bid = batches["bid"]
        columns = {"ts": bid.ts, "key": bid.columns["auction"], "value": bid.columns["price"]}
        inputs = {"numbers": [Batch("numbers", bid.ts, bid.partition, bid.offset, columns)]}
    else:
        inputs = {i.name: [batches[i.name]] for i in builtin(query).inputs}
    return collect(run_plan(builtin(query), inputs)[0])


@pytest.fixture(scope="module")
def q8_reference(spark: Any) -> dict[str, dict[str, Any]]:
    return reference("nexmark-q8", generator_source(spark, SEED, 0, EVENTS))


@pytest.mark.parametrize(
    ("query", "events", "at_least"),
    [
        ("nexmark-q5", EVENTS, 7),
        ("nexmark-q7", EVENTS, 2),
        ("smq", 40_000, 30_000),
        ("nexmark-q0", 20_000, 15_000),
        ("nexmark-q1", 20_000, 15_000),
        ("nexmark-q2", EVENTS, 100),
        ("nexmark-q3", 60_000, 100),
    ],
)
def test_oracle_equals_engine_output(spark: Any, query: str, events: int, at_least: int) -> None:
    expected = reference(query, generator_source(spark, SEED, 0, events))
    output = _engine_output(query, events)
    report = check(query, expected, output)
    assert report.ok, report.lines()
    assert report.expected == report.received == len(output) >= at_least


def test_oracle_passes_exact_q8_output(q8_reference: dict[str, dict[str, Any]]) -> None:
    output = _engine_output("nexmark-q8", EVENTS)
    report = check("nexmark-q8", q8_reference, output)
    assert report.ok, report.lines()
    assert report.expected == len(output) > 1000


def test_oracle_catches_missing_duplicate_and_wrong(
    q8_reference: dict[str, dict[str, Any]],
) -> None:
    output = _engine_output("nexmark-q8", EVENTS)
    rng = np.random.default_rng(5)
    drop, dup, bad = rng.choice(len(output), size=3, replace=False).tolist()
    wrong = {**output[bad], "sellers.auctions": output[bad]["sellers.auctions"] + 1}
    injected = [r for i, r in enumerate(output) if i not in (drop, bad)]
    injected += [output[dup], wrong]

    report = check("nexmark-q8", q8_reference, injected)
    assert not report.ok
    assert (report.missing, report.duplicates, report.wrong, report.extra) == (1, 1, 1, 0)
    ids = [result_id("nexmark-q8", r, key_names("nexmark-q8")) for r in output]
    assert report.examples["missing"] == [ids[drop]]
    assert report.examples["duplicate"] == [ids[dup]]
    assert report.examples["wrong"] == [
        f"{ids[bad]} (sellers.auctions: expected {wrong['sellers.auctions'] - 1} "
        f"got {wrong['sellers.auctions']})"
    ]


def test_oracle_catches_each_injection_alone(q8_reference: dict[str, dict[str, Any]]) -> None:
    output = _engine_output("nexmark-q8", EVENTS)
    changed = {**output[7], "people.name": "Nobody"}
    cases = {
        (1, 0, 0): output[1:],
        (0, 1, 0): [*output, output[-1]],
        (0, 0, 1): [*output[:7], changed, *output[8:]],
    }
    for counts, injected in cases.items():
        report = check("nexmark-q8", q8_reference, injected)
        assert (report.missing, report.duplicates, report.wrong) == counts
        assert not report.ok
