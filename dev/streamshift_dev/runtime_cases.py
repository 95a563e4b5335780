"""Random migrations for real workers (`make verify-runtime`): a plan, disordered input, a move or
rescale, the feeding schedule, and the in-process reference the output must equal.

A case is a pure function of `(protocol, seed)`. Its plan is one of the exactness cases' families
(`migration.cases`: Nexmark q5, q7 and q8, the seed queries Q1 to Q3, random window plans), or,
for a plan change, a 3- or 4-way range join whose join order changes (`plan.join_trees`), with a
bounded out-of-orderness, and its input arrives out of order with late records (Nexmark's
out-of-order groups and late events; seed-schema records each delayed, a few beyond the bound).
The input is cut by arrival into a part fed before the Migration is created and chunks fed while
it runs, then closed by a tail: one record per input partition far beyond every window, so every
instance's watermark ends at the same place as the reference's and every real window fires (the
windows holding the last tail never do, on either side). A protocol whose targets began after the
last record waits for more input, as on a live stream: further tails, each `TAIL_MS` beyond the
one before, keep it flowing (the reference is fed as many). Kafka offsets are positions in
arrival order per partition, so the reference (the engine's `Instance` over every partition, fed
the same records in the same order, no flush) names the same dead letters by the same
coordinates.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import encode_json
from streamshift_engine.migration import cases
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.nexmark_queries import nexmark_plan
from streamshift_engine.plan.parse import plan_document
from streamshift_engine.runner import Instance, collect
from streamshift_operator.migration.target import Refused, resolve
from streamshift_operator.models.migration import MigrationSpec
from streamshift_operator.models.streamquery import (
    InstanceStatus,
    StreamQuerySpec,
    StreamQueryStatus,
)
from streamshift_operator.resources.partition_assignment import assign
from streamshift_operator.streamquery.plan_check import check_plan

PROTOCOLS = ("unimico", "parallel-track", "moving-state", "state-transfer", "savepoint-restart")
FAMILIES = (
    "nexmark-q5",
    "nexmark-q7",
    "nexmark-q8",
    "q1",
    "q2",
    "q3",
    "random-aggregate",
    "random-join",
    "random-join-aggregate",
    "random-aggregate-topk",
)
# (parallelism before, target): moves of one or every instance, rescales within 4 partitions
MIGRATIONS: tuple[tuple[int, dict[str, Any]], ...] = (
    (1, {"moveInstances": [0]}),
    (2, {"moveInstances": [0]}),
    (2, {"moveInstances": [0, 1]}),
    (1, {"parallelism": 2}),
    (2, {"parallelism": 1}),
    (2, {"parallelism": 4}),
    (1, {"plan": "reorder"}),
    (2, {"plan": "reorder"}),
)
"""A `plan` target changes the join order of a 3- or 4-way range join (`REORDER`): both orders
name a result by its base tuples, so the output must equal the reference of either plan."""
REORDER = "join-reorder"
TREES: dict[int, list[JoinTree]] = {
    3: [(("S", "T"), "U"), (("S", "U"), "T"), (("T", "U"), "S")],
    4: [((("S", "T"), "U"), "V"), ((("S", "V"), "T"), "U"), (("S", "T"), ("U", "V"))],
}
TAIL_MS = 120_000
"""How far beyond the input's last event time the tail lies (and each further tail beyond the one
before): past every window of the families."""
TAILS = 4


@dataclass(frozen=True)
class Feed:
    """The input in the order it is produced: `before` the Migration, then `chunks` while it
    runs, then as many `tails` as it takes; each part per input, in arrival order (offsets are
    Kafka offsets)."""

    before: dict[str, Batch]
    chunks: list[dict[str, Batch]]
    tails: list[dict[str, Batch]]

    def parts(self, tails: int) -> Iterator[dict[str, Batch]]:
        """What was produced with the first `tails` tails."""
        yield self.before
        yield from self.chunks
        yield from self.tails[:tails]


@dataclass(frozen=True)
class RuntimeCase:
    """One migration of `plan` by `protocol` on real workers."""

    protocol: str
    seed: int
    family: str
    plan: Plan
    feed: Feed
    partitions: int
    parallelism: int
    target: dict[str, Any]
    while_preparing: int
    """How many chunks go out while the target pods start (the rest once they run)."""
    new_plan: Plan | None = None
    """The plan a plan change runs afterwards (None: the same)."""
    then: tuple[str, dict[str, Any]] | None = None
    """A second Migration's protocol and target, once the first Succeeded (a chain: the first
    one's targets are its origins)."""

    @property
    def label(self) -> str:
        """The protocol, or the chain's protocols (`unimico>moving-state`)."""
        return self.protocol if self.then is None else f"{self.protocol}>{self.then[0]}"

    @property
    def slug(self) -> str:
        """A short name for namespaces: the protocols' first letters and the seed."""
        second = "" if self.then is None else self.then[0][:2]
        return f"{self.protocol[:2]}{second}{self.seed}"

    @property
    def parallelism_after(self) -> int:
        """The instances after the first Migration."""
        return int(self.target.get("parallelism", self.parallelism))

    def describe(self) -> str:
        if "parallelism" in self.target:
            how = f"rescale {self.parallelism}->{self.target['parallelism']}"
        elif self.new_plan is not None:
            how = f"plan change at parallelism {self.parallelism}"
        else:
            how = f"move {self.target['moveInstances']} of {self.parallelism}"
        if self.then is not None:
            how += f", then {self.then[0]} {_target_text(self.then[1], self.parallelism_after)}"
        return f"{self.family} {how} over {self.partitions} partitions"


def _target_text(target: dict[str, Any], parallelism: int) -> str:
    if "parallelism" in target:
        return f"rescale {parallelism}->{target['parallelism']}"
    return f"move {target['moveInstances']} of {parallelism}"


def draw(protocol: str, seed: int, family: str | None = None) -> RuntimeCase:
    """Case `seed` of `protocol` (of `family` when one is named: no plan change then)."""
    chooser = random.Random(f"runtime/{protocol}/{seed}")
    drawn = chooser.choice(FAMILIES)
    family = family or drawn
    parallelism, target = chooser.choice(MIGRATIONS)
    if family != drawn and "plan" in target:
        parallelism, target = 2, {"moveInstances": [0, 1]}
    partitions = 4 if target.get("parallelism") == 4 else chooser.choice([2, 4])
    new_plan = None
    if "plan" in target:
        family = REORDER
        plan, new_plan, inputs = _reorder(seed, partitions, chooser)
        target = {"plan": {"inline": plan_document(new_plan)}}
    else:
        plan, inputs = _plan_and_inputs(family, seed, partitions, chooser)
    if _query_problems(plan, partitions, 2):  # global state: the query runs on one instance
        parallelism, target = 1, {"moveInstances": [0]}
    feed = _cut(inputs, plan, chooser.uniform(0.15, 0.5), chooser.randint(6, 12))
    return RuntimeCase(
        protocol, seed, family, plan, feed, partitions, parallelism, dict(target),
        chooser.randint(0, 2), new_plan,
    )  # fmt: skip


def chained(first: str, second: str, seed: int) -> RuntimeCase:
    """Case `seed` of a chain: `first`'s case (a move or rescale, no plan change), then
    `second` moving instance 0 or rescaling to 1 or 2 instances (a global plan: moving)."""
    chooser = random.Random(f"runtime-chain/{first}/{second}/{seed}")
    case = draw(first, seed, chooser.choice(FAMILIES))
    after = case.parallelism_after
    targets: list[dict[str, Any]] = [{"moveInstances": [0]}]
    if not _query_problems(case.plan, case.partitions, 2):
        targets += [{"parallelism": p} for p in (1, 2) if p != after]
    return replace(case, then=(second, chooser.choice(targets)))


def accepted_chain(first: str, second: str, count: int, max_draws: int = 10) -> list[RuntimeCase]:
    """The first `count` chains of `first` then `second` the operator accepts (both
    Migrations, the second on the placement the first leaves)."""
    found: list[RuntimeCase] = []
    for seed in range(count * max_draws):
        if len(found) == count:
            break
        case = chained(first, second, seed)
        assert case.then is not None
        protocol, target = case.then
        following = replace(
            case, protocol=protocol, parallelism=case.parallelism_after, target=target, then=None
        )
        if refusal(case) is None and refusal(following) is None:
            found.append(case)
    return found


def accepted(
    protocol: str,
    count: int,
    seeds: Iterable[int] | None = None,
    max_draws: int = 10,
    family: str | None = None,
) -> tuple[list[RuntimeCase], Counter[str]]:
    """The first `count` cases of `protocol` the operator accepts (drawing at most `max_draws`
    per case; of `family` when one is named), or those among `seeds`; and the refusals met, by
    reason (numbers as N)."""
    found: list[RuntimeCase] = []
    refusals: Counter[str] = Counter()
    for seed in range(count * max_draws) if seeds is None else seeds:
        if seeds is None and len(found) == count:
            break
        case = draw(protocol, seed, family)
        reason = refusal(case)
        if reason is None:
            found.append(case)
        else:
            refusals[re.sub(r"\d+", "N", reason)] += 1
    return found, refusals


def _query_spec(plan: Plan, partitions: int, parallelism: int) -> StreamQuerySpec:
    """The StreamQuery spec's parts the operator checks a migration against."""
    return StreamQuerySpec.model_validate(
        {
            "plan": {"inline": plan_document(plan)},
            "kafka": {"bootstrapServers": "kafka:9092"},
            "sources": [
                {"name": s.name, "topic": s.name.lower(), "partitions": partitions}
                for s in plan.inputs
            ],
            "sinks": [{"name": "out", "topic": "out", "partitions": partitions}],
            "parallelism": parallelism,
            "snapshot": {
                "endpoint": "http://s3",
                "bucket": "snapshots",
                "credentials": {
                    "accessKey": {"name": "s3", "key": "access"},
                    "secretKey": {"name": "s3", "key": "secret"},
                },
            },
            "controlToken": {"name": "control", "key": "token"},
        }
    )


def _query_problems(plan: Plan, partitions: int, parallelism: int) -> tuple[str, ...]:
    return check_plan(_query_spec(plan, partitions, parallelism)).problems


def refusal(case: RuntimeCase) -> str | None:
    """Why the operator refuses the case's Migration before any target pod starts (its own
    admission decision, `migration.target.resolve`, on the query as placed), or None."""
    query = _query_spec(case.plan, case.partitions, case.parallelism)
    ranges = assign(case.partitions, case.parallelism)
    placed = StreamQueryStatus(
        epoch=0,
        plan=query.plan,
        instances=[
            InstanceStatus(id=i, pod=f"q-e0-{i}", partitions=r) for i, r in enumerate(ranges)
        ],
    )
    spec = MigrationSpec.model_validate(
        {"queryRef": {"name": "q"}, "protocol": case.protocol, "target": case.target}
    )
    try:
        resolve(spec, query, placed, 0)
    except Refused as refused:
        return str(refused)
    return None


def _plan_and_inputs(
    family: str, seed: int, partitions: int, chooser: random.Random
) -> tuple[Plan, dict[str, Batch]]:
    """The family's plan with a bounded out-of-orderness, and its disordered input."""
    if family.startswith("nexmark-"):
        plan = nexmark_plan(family, cases.NEXMARK_WINDOW_MS)
        config = replace(cases.NEXMARK_DISORDER, partitions=partitions)
        events = generate(seed, 0, chooser.randint(800, 2_000), config)
        inputs = {spec.name: events[spec.name] for spec in plan.inputs}
        bound = cases.NEXMARK_BOUND_MS
    else:
        seeded = family in ("q1", "q2", "q3")
        plan = builtin(family) if seeded else cases.random_plan(family, chooser)
        rng = np.random.default_rng(seed)
        names = [spec.name for spec in plan.inputs]
        drawn = cases.seed_inputs(names, rng, chooser.randint(150, 500))
        spread = {n: _partitioned(b, partitions) for n, b in drawn.items()}
        bound = chooser.choice(cases.SEED_BOUNDS_MS)
        inputs = cases.arrive_out_of_order(spread, bound, chooser.uniform(*cases.LATE_SHARE), rng)
    return cases.with_out_of_orderness(plan, bound), inputs


def _reorder(
    seed: int, partitions: int, chooser: random.Random
) -> tuple[Plan, Plan, dict[str, Batch]]:
    """A 3- or 4-way range join, another order of it, and disordered seed-schema input."""
    old, new = chooser.sample(TREES[chooser.choice([3, 4])], 2)
    window = chooser.choice([1_000, 2_000, 4_000])
    bound = chooser.choice(cases.SEED_BOUNDS_MS)
    plans = [
        cases.with_out_of_orderness(join_tree_plan("joins", tree, window, "l", SEED_SCHEMA), bound)
        for tree in (old, new)
    ]
    rng = np.random.default_rng(seed)
    names = [spec.name for spec in plans[0].inputs]
    drawn = cases.seed_inputs(names, rng, chooser.randint(100, 250))
    spread = {n: _partitioned(b, partitions) for n, b in drawn.items()}
    inputs = cases.arrive_out_of_order(spread, bound, chooser.uniform(*cases.LATE_SHARE), rng)
    return plans[0], plans[1], inputs


def _partitioned(batch: Batch, partitions: int) -> Batch:
    """A seed-schema batch partitioned by its key `l` over `partitions`."""
    partition = (batch.columns["l"] % partitions).astype(np.int32)
    return Batch(batch.source, batch.ts, partition, batch.offset, batch.columns)


def _cut(inputs: dict[str, Batch], plan: Plan, before: float, chunks: int) -> Feed:
    """The input cut by arrival: a record's arrival clock is the largest event time of its input
    up to it (non-decreasing in arrival order, so each part is a run of every partition)."""
    clocks = {n: np.maximum.accumulate(b.ts) for n, b in inputs.items() if len(b)}
    low = min(int(c[0]) for c in clocks.values())
    high = max(int(c[-1]) for c in clocks.values()) + 1
    first = low + int((high - low) * before)
    bounds = [low, first] + [first + (high - first) * i // chunks for i in range(1, chunks + 1)]
    parts: list[dict[str, Batch]] = []
    for begin, end in itertools.pairwise(bounds):
        parts.append(
            {n: b.take((clocks[n] >= begin) & (clocks[n] < end)) for n, b in inputs.items()}
        )
    tails = [
        {s.name: _tail(inputs[s.name], s.time_field, high + k * TAIL_MS) for s in plan.inputs}
        for k in range(1, TAILS + 1)
    ]
    return _numbered(Feed(parts[0], parts[1:], tails))


def _tail(batch: Batch, time_field: str, at: int) -> Batch:
    """Per partition of the topic that has records, a copy of its last record at event time
    `at`; a partition without records gets a copy of the input's last one."""
    partitions = sorted(set(batch.partition.tolist()))
    picks = [int(np.flatnonzero(batch.partition == p)[-1]) for p in partitions]
    tail = batch.take(np.array(picks, np.int64))
    ts = np.full(len(tail), at, np.int64)
    columns = {**tail.columns, time_field: ts.astype(tail.columns[time_field].dtype)}
    return Batch(tail.source, ts, tail.partition, tail.offset, columns)


def _numbered(feed: Feed) -> Feed:
    """Every part's offsets set to the records' Kafka offsets: positions in feed order per
    (input, partition)."""
    next_offset: Counter[tuple[str, int]] = Counter()
    numbered: list[dict[str, Batch]] = []
    for part in feed.parts(TAILS):
        out = {}
        for name, batch in part.items():
            offsets = np.empty(len(batch), np.int64)
            for i, p in enumerate(batch.partition.tolist()):
                offsets[i] = next_offset[(name, p)]
                next_offset[(name, p)] += 1
            out[name] = Batch(batch.source, batch.ts, batch.partition, offsets, batch.columns)
        numbered.append(out)
    return Feed(numbered[0], numbered[1:-TAILS], numbered[-TAILS:])


def all_partitions_fed(case: RuntimeCase) -> bool:
    """Whether the tail reaches every partition of every input (the watermark needs them)."""
    return all(
        set(batch.partition.tolist()) == set(range(case.partitions))
        for batch in case.feed.tails[0].values()
    )


def records(part: dict[str, Batch], prefix: str) -> list[tuple[str, int, bytes]]:
    """`(topic, partition, value)` of a part's records, per partition in arrival order."""
    out = []
    for name, batch in part.items():
        for value, partition in zip(encode_json(batch), batch.partition.tolist(), strict=True):
            out.append((f"{prefix}-{name}", partition, value))
    return out


@dataclass(frozen=True)
class Expected:
    """What the workers must write: result records (sorted JSON) and dead letters."""

    results: Counter[str]
    dead_letters: Counter[tuple[str, int, int, str, bytes]]
    """`(input, partition, Kafka offset, reason, original record)`."""


def reference(case: RuntimeCase, tails: int = 1) -> Expected:
    """The engine's `Instance` over every partition fed the case's records in the same order
    per partition, no flush; its dead letters with the records as produced. A plan change
    must give the same with either plan (`ValueError` otherwise: the case cannot be checked)."""
    expected = _reference(case, case.plan, tails)
    if case.new_plan is not None and _reference(case, case.new_plan, tails) != expected:
        raise ValueError(f"{case.describe()}: the two plans' references differ")
    return expected


def _reference(case: RuntimeCase, plan: Plan, tails: int) -> Expected:
    instance = Instance(plan, range(case.partitions))
    originals: dict[tuple[str, int, int], bytes] = {}
    for part in case.feed.parts(tails):
        for name, batch in part.items():
            values = encode_json(batch)
            for p, o, v in zip(
                batch.partition.tolist(), batch.offset.tolist(), values, strict=True
            ):
                originals[(name, p, o)] = v
            for partition in range(case.partitions):
                instance.feed(name, partition, batch.take(batch.partition == partition))
    results = Counter(canonical(r) for r in collect(instance.poll()))
    dead = Counter(
        (d.source, d.partition, d.offset, d.reason, originals[(d.source, d.partition, d.offset)])
        for d in instance.dead_letters
    )
    return Expected(results, dead)


def canonical(record: Any) -> str:
    return json.dumps(record, sort_keys=True)


def plan_inline(plan: Plan) -> dict[str, Any]:
    return plan_document(plan)
