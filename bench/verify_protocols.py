"""Check at scale that every protocol's output with migration equals the output without.

Random time windows (tumbling and sliding sizes), inputs, migration start steps and message
delays, run on the engine's `Instance`; prints one line per protocol and the summary line.
"""

from __future__ import annotations

import argparse
import random

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.run import compare, run_migration, run_reference
from streamshift_engine.migration.state_moving import MovingState, SavepointRestart, StateTransfer
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan
from streamshift_engine.runner import Instance

PROTOCOLS: list[type[Protocol]] = [
    UniMiCo,
    ParallelTrack,
    MovingState,
    StateTransfer,
    SavepointRestart,
]
PARTITIONS = 2


def window_plan(size: int, slide: int) -> Plan:
    schema = {"ts": "int", "k": "int", "m": "int"}
    window = {"kind": "time", "size": size, "slide": slide}
    aggregate = {
        "window": window,
        "group_by": ["k"],
        "aggregates": [{"name": "s", "fn": "sum", "field": "m"}],
    }
    return parse_plan(
        {
            "name": "sum",
            "inputs": [
                {"name": "S", "topic": "s", "time_field": "ts", "key_field": "k", "schema": schema}
            ],
            "operators": [
                {"id": "w", "type": "window_aggregate", "input": "S", "params": aggregate}
            ],
            "output": "w",
        }
    )


def inputs(rng: np.random.Generator, count: int) -> dict[str, Batch]:
    ts = np.sort(rng.integers(0, 2_000, count))
    keys = rng.integers(0, 4, count)
    columns = {"ts": ts, "k": keys, "m": rng.integers(0, 100, count)}
    partition = (keys % PARTITIONS).astype(np.int32)
    return {"S": Batch("S", ts, partition, np.zeros(count, np.int64), columns)}


def one_case(protocol: type[Protocol], case: int) -> list[str]:
    chooser = random.Random(case)
    slide = chooser.choice([20, 50, 100])
    plan = window_plan(slide * chooser.choice([1, 2, 3]), slide)
    data = inputs(np.random.default_rng(case), 300)

    def factory(p: Plan) -> Instance:
        return Instance(p, range(PARTITIONS))

    reference = run_reference(plan, data, PARTITIONS, factory, 50)
    start, delay = chooser.randint(0, 45), chooser.randint(0, 4)
    outcome = run_migration(protocol, plan, plan, data, PARTITIONS, factory, 50, start, case, delay)
    return compare(reference.emitted, outcome.emitted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=500)
    cases = parser.parse_args().cases
    summary = []
    for protocol in PROTOCOLS:
        exact = 0
        for case in range(cases):
            problems = one_case(protocol, case)
            exact += not problems
            if problems:
                print(f"  {protocol.name} case {case}: {'; '.join(problems)}")
        print(f"{protocol.name}: {exact}/{cases} exact")
        summary.append(f"{protocol.name}={exact}/{cases}")
    print("protocols exact " + " ".join(summary))


if __name__ == "__main__":
    main()
