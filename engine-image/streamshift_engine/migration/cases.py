"""Random exactness cases for the protocols: a plan, its input, a start step and message delays.

The property test (tests/migration) and `bench.verify_protocols` draw the same cases: the seed
queries (seed 000 (Pham et al., UniMiCo) section 4: Q1, Q2, Q3; seed 003 (Bartnik et al., On-the-fly
Reconfiguration) 6.3.1: SMQ), Nexmark q5, q7 and q8 on the engine's generator, and random window
specs (time and tuple based, tumbling and sliding, aggregates keyed or global, joins by range,
tumbling time or rows, a join feeding an aggregate, a time aggregate feeding a top-k that ranks its
windows or opens its own on the same grid). Inputs are small so that hundreds of cases run in
minutes; a `Case` is a pure function of its family and seed.

Besides those, plans users write next: session windows (`session`), a union of two or three
inputs alone or feeding a window aggregate (`union`), a sliding time-window join alone or feeding
an aggregate (`sliding-join`), and joins of 3 and 4 inputs as trees of range or tumbling joins in
a random order (`join-3`, `join-4`). `CHANGE_FAMILIES` are migrations other than a move: a
plan change (`plan-change`: the new plan is an equivalent one, so the run without migration is
the reference: another join order of a 3-way join, seed 003 3.3's runtime modifications (an
operator introduced, a function replaced) that keep every result) and a rescale (`rescale`:
2 -> 1, 1 -> 2 or 2 -> 4 instances over 4 partitions, of a plan keyed by the partition key).

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
from streamshift_engine.migration.cluster import InstanceFactory
from streamshift_engine.migration.modifications import introduce_operator, replace_function
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.rescale import run_rescale
from streamshift_engine.migration.run import Outcome, run_migration, run_reference
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan
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
    "session",
    "union",
    "sliding-join",
    "join-3",
    "join-4",
)
CHANGE_FAMILIES = ("plan-change", "rescale")
"""Families whose migration is not a move of the same plan (`Case.new_plan`, `Case.scaling`)."""
ALL_FAMILIES = FAMILIES + CHANGE_FAMILIES
RESCALE_PARTITIONS = 4
SCALINGS = ((2, 1), (1, 2), (2, 4))


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
    new_plan: Plan | None = None
    scaling: tuple[int, int] | None = None

    @property
    def target_plan(self) -> Plan:
        """The plan the migration ends with: the new plan of a plan change, else the plan."""
        return self.plan if self.new_plan is None else self.new_plan

    def refusal(self, protocol: type[Protocol]) -> str | None:
        """Why `protocol` cannot carry out the case's migration exactly (None when it can)."""
        return protocol.refusal(self.plan, self.target_plan)

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
        if self.scaling is not None:
            return run_rescale(
                protocol, self.plan, self.inputs, self.partitions, *self.scaling,
                _instances_of, self.slice_ms, start, self.seed, self.max_delay,
            ).outcome  # fmt: skip
        return run_migration(
            protocol, self.plan, self.target_plan, self.inputs, self.partitions, self.instance,
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


def _instances_of(partitions: frozenset[int]) -> InstanceFactory:
    """Engine instances over `partitions` (a rescaled pod's partition group)."""
    return lambda plan: Instance(plan, sorted(partitions))


def make_case(family: str, seed: int, disordered: bool | None = False) -> Case:
    """The case `seed` of `family` (one of `ALL_FAMILIES`): in order by default, out of order
    with `disordered`, or, with None, as the case draws it (`DISORDERED_SHARE` of the time; what
    the property checks use)."""
    chooser = random.Random(f"{family}/{seed}")
    shaker = random.Random(f"{family}/{seed}/disorder")
    drawn = shaker.random() < DISORDERED_SHARE  # drawn always: a forced case is the drawn one
    disordered = drawn if disordered is None else disordered
    if family in CHANGE_FAMILIES:
        return _change_case(family, seed, chooser, shaker, disordered)
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
        inputs = seed_inputs(names, rng, chooser.randint(*_record_counts(family)), _keys(family))
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


def _record_counts(family: str) -> tuple[int, int]:
    """How many records each input of a seed-schema case draws from (fewer for wide joins)."""
    return {"join-3": (30, 80), "join-4": (20, 50)}.get(family, (40, 120))


def _keys(family: str) -> int:
    """How many keys a seed-schema input draws from: fewer for wide joins, so that most cases
    have records of every input close enough in time to join."""
    return {"join-3": 3, "join-4": 2}.get(family, 6)


def _change_case(
    family: str, seed: int, chooser: random.Random, shaker: random.Random, disordered: bool
) -> Case:
    """A plan change (an equivalent new plan) or a rescale of a keyed plan, on seed inputs."""
    partitions, new_plan, scaling = PARTITIONS, None, None
    if family == "plan-change":
        plan, new_plan = plan_change_pair(chooser)
    else:
        plan = random_plan(chooser.choice(RESCALABLE), chooser, keyed=True)
        partitions, scaling = RESCALE_PARTITIONS, chooser.choice(SCALINGS)
    rng = np.random.default_rng(seed)
    names = [spec.name for spec in plan.inputs]
    wide = f"join-{len(names)}"
    inputs = seed_inputs(names, rng, chooser.randint(*_record_counts(wide)), _keys(wide))
    if partitions != PARTITIONS:
        inputs = {name: _repartitioned(batch, partitions) for name, batch in inputs.items()}
    bound = shaker.choice(SEED_BOUNDS_MS)
    if disordered:
        inputs = arrive_out_of_order(inputs, bound, shaker.uniform(*LATE_SHARE), rng)
        plan = with_out_of_orderness(plan, bound)
        new_plan = None if new_plan is None else with_out_of_orderness(new_plan, bound)
    steps = SEED_SPAN_MS // SEED_SLICE_MS
    start, delay = chooser.randint(0, steps), chooser.randint(0, 4)
    return Case(
        family, seed, plan, inputs, SEED_SLICE_MS, start, delay, partitions, disordered,
        new_plan, scaling,
    )  # fmt: skip


def _repartitioned(batch: Batch, partitions: int) -> Batch:
    """The records of a seed-schema input spread by key `l` over `partitions` partitions."""
    partition = (batch.columns["l"] % partitions).astype(np.int32)
    return Batch(batch.source, batch.ts, partition, batch.offset, batch.columns)


RESCALABLE = ("random-aggregate", "random-join", "session", "union", "sliding-join", "join-3")
"""The families whose plans a rescale draws, keyed by the partition key (`random_plan`)."""


def plan_change_pair(chooser: random.Random) -> tuple[Plan, Plan]:
    """A plan and an equivalent new one (the same results on any input): another order of a
    3-way join, or a seed 003 3.3 modification that keeps every record: a filter or an identity
    map introduced after an operator (3.3.1), or a filter's predicate replaced by an equivalent
    one (3.3.2). Both plans share the name (it names the results)."""
    change = chooser.choice(["reorder", "introduce", "replace"])
    if change == "reorder":
        kind = chooser.choice(["range", "time"])
        size = (
            chooser.choice([2_000, 4_000]) if kind == "range" else chooser.choice([5_000, 10_000])
        )
        old, new = chooser.sample(JOIN_ORDERS_3, 2)
        plans = [join_tree_plan(change, tree, size, "l", SEED_SCHEMA, kind) for tree in (old, new)]
        return plans[0], plans[1]
    base = random_plan(chooser.choice(["random-aggregate", "random-join"]), chooser)
    if change == "introduce":
        after = chooser.choice([*(spec.name for spec in base.inputs), base.output])
        fields = base.nodes[after].fields
        number = "m" if "m" in fields else next(n for n, t in fields.items() if t == "int")
        operator: dict[str, Any] = (
            {"id": "kept", "type": "filter", "params": {"predicate": f"{number} >= 0"}}
            if chooser.random() < 0.5
            else {"id": "same", "type": "map", "params": {"fields": {number: number}}}
        )
        return base, introduce_operator(base, operator, after)
    filtered = introduce_operator(base, {"id": "kept", "type": "filter", "params": {
        "predicate": "m >= 0"}}, base.inputs[0].name)  # fmt: skip
    return filtered, replace_function(filtered, "kept", {"predicate": "m > -1"})


JOIN_ORDERS_3: list[JoinTree] = [
    (("S", "T"), "U"),
    (("S", "U"), "T"),
    (("T", "U"), "S"),
    ("S", ("T", "U")),
]


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


def seed_inputs(
    names: list[str], rng: np.random.Generator, count: int, keys_drawn: int = 6
) -> dict[str, Batch]:
    """Streams of the seed schema `(ts, l, m)`, keyed (`l` in `[0, keys_drawn)`) and
    partitioned by `l`."""
    inputs = {}
    for name in names:
        ts = np.sort(rng.integers(0, SEED_SPAN_MS, count)).astype(np.int64)
        keys = rng.integers(0, keys_drawn, count)
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


def random_plan(family: str, chooser: random.Random, keyed: bool | None = None) -> Plan:
    """A random window plan over the seed inputs `S` (and `T` for joins, `T` and `U` for
    unions); `keyed` True: one whose state is all keyed by the partition key."""
    operators: list[dict[str, Any]] = []
    if family in ("join-3", "join-4"):
        return _join_tree(family, chooser)
    if family == "session":
        gap = chooser.choice([1_000, 3_000, 5_000])
        window = {"kind": "session", "gap": gap}
        grouped = chooser.random() < 0.5 if keyed is None else keyed
        operators = [_aggregate(chooser, "S", "m", grouped, window=window)]
        return _plan(family, ["S"], operators, "agg")
    if family == "union":
        return _union(chooser, keyed)
    if family == "sliding-join":
        slide = chooser.choice([1_000, 2_000])
        window = {"kind": "time", "size": slide * chooser.choice([2, 3, 4]), "slide": slide}
        operators = [_join(chooser, tumbling_only=False, window=window)]
        if chooser.random() < 0.5 and not keyed:
            operators.append(_aggregate(chooser, "join", "S.m", False, kinds=("time",)))
        return _plan(family, ["S", "T"], operators, operators[-1]["id"])
    output = ""
    if family in ("random-join", "random-join-aggregate"):
        operators.append(_join(chooser, tumbling_only=family == "random-join-aggregate"))
        output = "join"
    if family in ("random-aggregate", "random-join-aggregate"):
        upstream = "join" if output else "S"
        field = "S.m" if output else "m"
        grouped = not output and chooser.random() < 0.5
        operators.append(_aggregate(chooser, upstream, field, grouped if keyed is None else keyed))
        output = "agg"
    if family == "random-aggregate-topk":
        operators.append(_aggregate(chooser, "S", "m", chooser.random() < 0.5, kinds=("time",)))
        operators.append(_topk(chooser, operators[-1]["params"]["window"]))
        output = "top"
    names = ["S", "T"] if family.startswith("random-join") else ["S"]
    return _plan(family, names, operators, output)


def _plan(family: str, names: list[str], operators: list[dict[str, Any]], output: str) -> Plan:
    inputs = [_seed_input(name) for name in names]
    return parse_plan({"name": family, "inputs": inputs, "operators": operators, "output": output})


def _union(chooser: random.Random, keyed: bool | None) -> Plan:
    """`S` and `T` (and half the time `U`, one of them filtered) merged, alone (not when
    `keyed`) or feeding a window aggregate of any kind."""
    names = ["S", "T", "U"][: chooser.choice([2, 3])]
    operators: list[dict[str, Any]] = []
    merged = list(names)
    if chooser.random() < 0.5:
        predicate = f"m >= {chooser.choice([10, 50])}"
        operators.append({"id": "some", "type": "filter", "input": names[-1],
                          "params": {"predicate": predicate}})  # fmt: skip
        merged[-1] = "some"
    operators.append({"id": "all", "type": "union", "inputs": merged})
    if keyed is None and chooser.random() < 0.2:
        return _plan("union", names, operators, "all")
    kind = chooser.choice(["time", "rows", "session"])
    window = {"kind": "session", "gap": 2_000} if kind == "session" else _window(chooser, kind)
    grouped = chooser.random() < 0.5 if keyed is None else keyed
    operators.append(_aggregate(chooser, "all", "m", grouped, window=window))
    return _plan("union", names, operators, "agg")


def _join_tree(family: str, chooser: random.Random) -> Plan:
    """A 3- or 4-way join of `S`, `T`, `U` (, `V`) on `l`, in a random tree: range joins or
    tumbling time-window joins."""
    names = ["S", "T", "U", "V"][: int(family[-1])]
    kind = chooser.choice(["range", "time"])
    size = chooser.choice([2_000, 4_000]) if kind == "range" else chooser.choice([5_000, 10_000])
    return join_tree_plan(family, _random_tree(names, chooser), size, "l", SEED_SCHEMA, kind)


def _random_tree(names: list[str], chooser: random.Random) -> JoinTree:
    """A random binary tree over the streams, in a random order."""
    trees: list[JoinTree] = chooser.sample(names, len(names))
    while len(trees) > 1:
        at = chooser.randrange(len(trees) - 1)
        trees[at : at + 2] = [(trees[at], trees[at + 1])]
    return trees[0]


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


def _join(
    chooser: random.Random, tumbling_only: bool, window: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`S` joined with `T` on `l`, in `window` or a random one."""
    return {
        "id": "join",
        "type": "window_join",
        "inputs": ["S", "T"],
        "params": {"window": window or _join_window(chooser, tumbling_only), "on": [["l", "l"]]},
    }


def _join_window(chooser: random.Random, tumbling_only: bool) -> dict[str, Any]:
    kind = chooser.choice(["range", "time"] if tumbling_only else ["range", "time", "rows"])
    if kind == "range":
        return {"kind": "range", "size": chooser.choice([1_000, 3_000, 8_000])}
    if kind == "time":
        return {"kind": "time", "size": chooser.choice([2_000, 5_000, 10_000])}
    return {"kind": "rows", "size": chooser.choice([1, 2, 4])}


def _aggregate(
    chooser: random.Random,
    upstream: str,
    field: str,
    keyed: bool,
    kinds: tuple[str, ...] = ("time", "rows"),
    window: dict[str, Any] | None = None,
) -> dict[str, Any]:
    window = window or _window(chooser, chooser.choice(kinds))
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
