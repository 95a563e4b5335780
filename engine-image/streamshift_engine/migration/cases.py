"""Random exactness cases for the protocols: a plan, its input, a start step and message delays.

The property test (tests/migration) and `bench.verify_protocols` draw the same cases: the seed
queries (seed 000 section 4: Q1, Q2, Q3; seed 003 6.3.1: SMQ), Nexmark q5, q7 and q8 on the
engine's generator, and random window specs (time and tuple based, tumbling and sliding,
aggregates keyed or global, joins by range, tumbling time or rows, a join feeding an aggregate,
a time aggregate feeding a top-k that ranks its windows or opens its own on the same grid).
Inputs are small so that hundreds of cases run in minutes; a `Case` is a pure function of its
family and seed.

Drawn (`make_case(..., disordered=None)`, as the property checks do), half of the cases (per
case from its own stream, so the rest of a case is the same either way) are disordered, as Kafka
partitions are: the plan's inputs get a bounded out-of-orderness
(`WatermarkSpec.out_of_orderness`), records arrive up to that bound after their event time, and
a few arrive later than the bound (late: dead letters, the same with and without migration).
Seed-schema inputs draw each record's delay; Nexmark inputs use the generator's out-of-order
groups and late events (`nexmark.arrival`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.run import Outcome, run_migration, run_reference
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.nexmark_queries import nexmark_plan
from streamshift_engine.plan.parse import parse_plan, plan_document
from streamshift_engine.runner import Instance

PARTITIONS = 2
SEED_SPAN_MS = 60_000
SEED_SLICE_MS = 2_000
NEXMARK_WINDOW_MS = 500
NEXMARK_SLICE_MS = 250
NEXMARK_CONFIG = GeneratorConfig(
    person_proportion=4,
    auction_proportion=4,
    bid_proportion=12,
    num_active_people=6,
    num_in_flight_auctions=10,
    events_per_second=100,
    base_time_ms=0,
    partitions=PARTITIONS,
)
DISORDERED_SHARE = 0.5
SEED_BOUNDS_MS = (500, 2_000, 4_000)
"""The out-of-orderness bounds of disordered seed-schema cases (their windows: 1 to 10 s)."""
LATE_SHARE = (0.02, 0.1)
"""The share of a disordered seed-schema input's records that arrive beyond the bound."""
NEXMARK_BOUND_MS = 150
NEXMARK_DISORDER = replace(
    NEXMARK_CONFIG, out_of_order_group_size=10, late_per_million=50_000, late_delay_ms=400
)
"""Groups of 10 events (100 ms at 100 events/s, within the bound) shuffled, and 5% of events
400 ms late (beyond it)."""
FAMILIES = (
    "q1",
    "q2",
    "q3",
    "smq",
    "nexmark-q5",
    "nexmark-q7",
    "nexmark-q8",
    "random-aggregate",
    "random-join",
    "random-join-aggregate",
    "random-aggregate-topk",
)


@dataclass(frozen=True)
class Case:
    """One migration to check: `plan` over `inputs`, migrated from `start_step` on."""

    family: str
    seed: int
    plan: Plan
    inputs: dict[str, Batch]
    slice_ms: int
    start_step: int
    max_delay: int
    partitions: int = PARTITIONS
    disordered: bool = False

    def instance(self, plan: Plan) -> Instance:
        """A fresh engine instance over all of the case's partitions."""
        return Instance(plan, range(self.partitions))

    def without_migration(self) -> Outcome:
        """The reference run: the same input, no migration."""
        return run_reference(self.plan, self.inputs, self.partitions, self.instance, self.slice_ms)

    def migrated_by(self, protocol: type[Protocol], start_step: int | None = None) -> Outcome:
        """The run with the whole group moved by `protocol` (at the case's start step unless
        another is given), with the case's message delays."""
        start = self.start_step if start_step is None else start_step
        return run_migration(
            protocol, self.plan, self.plan, self.inputs, self.partitions, self.instance,
            self.slice_ms, start, self.seed, self.max_delay,
        )  # fmt: skip

    def chained(
        self, protocols: list[type[Protocol]], start_step: int = 2, gap_steps: int = 1
    ) -> tuple[Outcome, list[Protocol]]:
        """The run with the whole group migrated by each protocol in turn (`chain`), the first
        from `start_step` on, early enough for the later ones to run before the input ends."""
        from streamshift_engine.migration.chain import run_chain

        return run_chain(
            protocols, self.plan, self.inputs, self.partitions, self.instance, self.slice_ms,
            start_step, gap_steps, self.seed, self.max_delay,
        )  # fmt: skip


def make_case(family: str, seed: int, disordered: bool | None = False) -> Case:
    """The case `seed` of `family` (one of `FAMILIES`): in order by default, out of order with
    `disordered`, or, with None, as the case draws it (`DISORDERED_SHARE` of the time; what the
    property checks use)."""
    chooser = random.Random(f"{family}/{seed}")
    shaker = random.Random(f"{family}/{seed}/disorder")
    drawn = shaker.random() < DISORDERED_SHARE  # drawn always: a forced case is the drawn one
    disordered = drawn if disordered is None else disordered
    if family.startswith("nexmark-"):
        plan = nexmark_plan(family, NEXMARK_WINDOW_MS)
        count = chooser.randint(200, 400)
        generated = nexmark_inputs(seed, count, NEXMARK_DISORDER if disordered else None)
        inputs = {spec.name: generated[spec.name] for spec in plan.inputs}
        slice_ms, steps = NEXMARK_SLICE_MS, 12
        bound = NEXMARK_BOUND_MS
    else:
        seeded = family in ("q1", "q2", "q3", "smq")
        plan = builtin(family) if seeded else random_plan(family, chooser)
        names = ["S"] if family == "smq" else [spec.name for spec in plan.inputs]
        rng = np.random.default_rng(seed)
        inputs = seed_inputs(names, rng, chooser.randint(40, 120))
        slice_ms, steps = SEED_SLICE_MS, SEED_SPAN_MS // SEED_SLICE_MS
        bound = shaker.choice(SEED_BOUNDS_MS)
        if disordered:
            inputs = arrive_out_of_order(inputs, bound, shaker.uniform(*LATE_SHARE), rng)
        if family == "smq":
            inputs = {"numbers": _as_numbers(inputs["S"])}
    if disordered:
        plan = with_out_of_orderness(plan, bound)
    start, delay = chooser.randint(0, steps), chooser.randint(0, 4)
    return Case(family, seed, plan, inputs, slice_ms, start, delay, PARTITIONS, disordered)


def with_out_of_orderness(plan: Plan, bound_ms: int) -> Plan:
    """`plan` with every input's watermark trailing its partitions' largest event time by
    `bound_ms`."""
    document = plan_document(plan)
    for spec in document["inputs"]:
        spec["watermark"] = {"out_of_orderness": bound_ms}
    return parse_plan(document)


def arrive_out_of_order(
    inputs: dict[str, Batch], bound_ms: int, late_share: float, rng: np.random.Generator
) -> dict[str, Batch]:
    """Each input's records in a new arrival order: each arrives up to `bound_ms` after its
    event time, a `late_share` of them more than `bound_ms` (up to three times) after it."""
    arrived = {}
    for name, batch in inputs.items():
        late = rng.random(len(batch)) < late_share
        delay = np.where(
            late,
            rng.integers(bound_ms + 1, 3 * bound_ms + 1, len(batch)),
            rng.integers(0, bound_ms + 1, len(batch)),
        )
        arrived[name] = batch.take(np.lexsort((np.arange(len(batch)), batch.ts + delay)))
    return arrived


def seed_inputs(names: list[str], rng: np.random.Generator, count: int) -> dict[str, Batch]:
    """Streams of the seed schema `(ts, l, m)`, keyed and partitioned by `l`."""
    inputs = {}
    for name in names:
        ts = np.sort(rng.integers(0, SEED_SPAN_MS, count)).astype(np.int64)
        keys = rng.integers(0, 6, count)
        columns = {"ts": ts, "l": keys, "m": rng.integers(0, 100, count)}
        partition = (keys % PARTITIONS).astype(np.int32)
        inputs[name] = Batch(name, ts, partition, np.zeros(count, np.int64), columns)
    return inputs


def _as_numbers(batch: Batch) -> Batch:
    columns = {"ts": batch.ts, "key": batch.columns["l"], "value": batch.columns["m"]}
    return Batch("numbers", batch.ts, batch.partition, batch.offset, columns)


def nexmark_inputs(
    seed: int, count: int, config: GeneratorConfig | None = None
) -> dict[str, Batch]:
    """Persons, auctions and bids of the engine's generator, a few seconds of event time (in
    order unless `config` disorders them)."""
    return generate(seed, 0, count, config or NEXMARK_CONFIG)


def random_plan(family: str, chooser: random.Random) -> Plan:
    """A random window plan over the seed inputs `S` (and `T` for joins)."""
    operators: list[dict[str, Any]] = []
    output = ""
    if family in ("random-join", "random-join-aggregate"):
        operators.append(_join(chooser, tumbling_only=family == "random-join-aggregate"))
        output = "join"
    if family in ("random-aggregate", "random-join-aggregate"):
        upstream = "join" if output else "S"
        field = "S.m" if output else "m"
        keyed = not output and chooser.random() < 0.5
        operators.append(_aggregate(chooser, upstream, field, keyed))
        output = "agg"
    if family == "random-aggregate-topk":
        operators.append(_aggregate(chooser, "S", "m", chooser.random() < 0.5, kinds=("time",)))
        operators.append(_topk(chooser, operators[-1]["params"]["window"]))
        output = "top"
    names = ["S", "T"] if family.startswith("random-join") else ["S"]
    inputs = [_seed_input(name) for name in names]
    return parse_plan({"name": family, "inputs": inputs, "operators": operators, "output": output})


def _seed_input(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic": name.lower(),
        "time_field": "ts",
        "key_field": "l",
        "schema": dict(SEED_SCHEMA),
    }


def _window(chooser: random.Random, kind: str) -> dict[str, Any]:
    if kind == "rows":
        size = chooser.choice([1, 2, 3, 5, 8])
        return {"kind": "rows", "size": size, "slide": chooser.randint(1, size)}
    slide = chooser.choice([1_000, 2_000, 5_000])
    return {"kind": "time", "size": slide * chooser.choice([1, 2, 3]), "slide": slide}


def _join(chooser: random.Random, tumbling_only: bool) -> dict[str, Any]:
    kind = chooser.choice(["range", "time"] if tumbling_only else ["range", "time", "rows"])
    if kind == "range":
        window: dict[str, Any] = {"kind": "range", "size": chooser.choice([1_000, 3_000, 8_000])}
    elif kind == "time":
        window = {"kind": "time", "size": chooser.choice([2_000, 5_000, 10_000])}
    else:
        window = {"kind": "rows", "size": chooser.choice([1, 2, 4])}
    return {
        "id": "join",
        "type": "window_join",
        "inputs": ["S", "T"],
        "params": {"window": window, "on": [["l", "l"]]},
    }


def _aggregate(
    chooser: random.Random,
    upstream: str,
    field: str,
    keyed: bool,
    kinds: tuple[str, ...] = ("time", "rows"),
) -> dict[str, Any]:
    window = _window(chooser, chooser.choice(kinds))
    params = {
        "window": window,
        "group_by": ["l"] if keyed else [],
        "aggregates": [
            {"name": "total", "fn": "sum", "field": field},
            {"name": "n", "fn": "count"},
        ],
    }
    return {"id": "agg", "type": "window_aggregate", "input": upstream, "params": params}


def _topk(chooser: random.Random, window: dict[str, Any]) -> dict[str, Any]:
    """The top `total` per window of `agg`: aligned to its windows, or (half the time) over its
    own window of the same size and slide, which ranks results by their timestamp instead."""
    params: dict[str, Any] = {"by": "total", "k": chooser.choice([1, 2])}
    if chooser.random() < 0.5:
        params["window"] = dict(window)
    return {"id": "top", "type": "topk", "input": "agg", "params": params}
