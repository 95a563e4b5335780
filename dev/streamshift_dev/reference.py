"""The output a query must give: the in-process engine's results over the same input."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from streamshift_engine.events.batch import Batch
from streamshift_engine.plan import Plan, builtin
from streamshift_engine.runner import Instance, collect

Inputs = Mapping[str, Batch]


def reference(plan: Plan | str, inputs: Inputs | Iterable[Inputs], partitions: int) -> list[str]:
    """Sorted result records (JSON) of the in-process engine running `plan` (or the builtin plan of
    that name) over `inputs` (or over each of several inputs in turn, polled after each, so that
    a long run's input can be made chunk by chunk, never held whole), without the end-of-input
    flush: what a worker has emitted once it consumed all of it."""
    instance = Instance(builtin(plan) if isinstance(plan, str) else plan, range(partitions))
    results = []
    for chunk in [inputs] if isinstance(inputs, Mapping) else inputs:
        for name, batch in chunk.items():
            for partition in range(partitions):
                instance.feed(name, partition, batch.take(batch.partition == partition))
        results += collect(instance.poll())
    return sorted(json.dumps(r, sort_keys=True) for r in results)
