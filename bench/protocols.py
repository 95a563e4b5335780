"""`make bench-protocols`: what each migration protocol costs on Nexmark q5, q8 and seed Q3.

For every query and protocol one migration (a move of the whole partition group) runs on the
engine `Instance` over the in-memory log; the table lists the figures every migration is priced
by (`migration.run.Cost`: duration in event time and wall clock, output gap, events processed twice,
state bytes moved, output held back, peak state size) and whether the output equalled the run
without migration; a protocol that refuses the plan shows its reason instead. Then
`bench.protocol_cost_model` sets the cost model of seed 001 (Zhu et al., Dynamic Plan Migration)
beside measured migrations of a 3-way join reorder over a range of window sizes (table and
out/protocols-cost-model.png).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.catalog import PROTOCOL_CLASSES
from streamshift_engine.migration.run import compare, run_migration, run_reference
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.nexmark_queries import nexmark_plan
from streamshift_engine.runner import Instance

from bench import protocol_cost_model

PARTITIONS = 2
NEXMARK = GeneratorConfig(partitions=PARTITIONS, events_per_second=2_000)
Workload = tuple[Plan, dict[str, Batch], int, int]


def nexmark(name: str, events: int) -> Workload:
    plan = nexmark_plan(name, window_ms=1_000)
    data = generate(7, 0, events, NEXMARK)
    inputs = {spec.name: data[spec.name] for spec in plan.inputs}
    return plan, inputs, 100, 20


def seed_q3(records: int) -> Workload:
    rng = np.random.default_rng(3)
    inputs = {}
    for name in ("S", "T"):
        ts = np.sort(rng.integers(0, 60_000, records))
        keys = rng.integers(0, 10, records)
        columns = {"ts": ts, "l": keys, "m": rng.integers(0, 100, records)}
        partition = (keys % PARTITIONS).astype(np.int32)
        inputs[name] = Batch(name, ts, partition, np.zeros(records, np.int64), columns)
    return builtin("q3"), inputs, 1_000, 20


def factory(plan: Plan) -> Instance:
    return Instance(plan, range(PARTITIONS))


HEADER = (
    f"{'query':<11} {'protocol':<18} {'exact':<5} {'event ms':>8} {'wall s':>7} {'gap':>4} "
    f"{'twice':>6} {'moved B':>8} {'held':>5} {'peak B':>9}"
)


def cost_table(workloads: dict[str, Callable[[], Workload]]) -> None:
    print(HEADER)
    for query, make in workloads.items():
        plan, inputs, slice_ms, start = make()
        reference = run_reference(plan, inputs, PARTITIONS, factory, slice_ms)
        for protocol in PROTOCOL_CLASSES:
            refusal = protocol.refusal(plan, plan)
            if refusal is not None:
                print(f"{query:<11} {protocol.name:<18} refused: {refusal}")
                continue
            outcome = run_migration(
                protocol, plan, plan, inputs, PARTITIONS, factory, slice_ms, start, max_delay=2
            )
            cost = outcome.cost
            assert cost is not None
            exact = "yes" if not compare(reference.emitted, outcome.emitted) else "NO"
            print(
                f"{query:<11} {protocol.name:<18} {exact:<5} {cost.event_time_ms:>8} "
                f"{cost.wall_seconds:>7.3f} {cost.output_gap_steps:>4} "
                f"{cost.events_processed_twice:>6} {cost.state_bytes_moved:>8} "
                f"{cost.output_held_back:>5} {cost.peak_state_bytes:>9}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=12_000, help="Nexmark events per query")
    parser.add_argument("--out", default="out/protocols-cost-model.png")
    arguments = parser.parse_args()
    cost_table(
        {
            "nexmark-q5": lambda: nexmark("nexmark-q5", arguments.events),
            "nexmark-q8": lambda: nexmark("nexmark-q8", arguments.events),
            "q3": lambda: seed_q3(400),
        }
    )
    print()
    protocol_cost_model.report(arguments.out)


if __name__ == "__main__":
    main()
