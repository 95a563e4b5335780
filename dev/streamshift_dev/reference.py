"""The output a query must give: the in-process engine's results over the same input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from streamshift_engine.events.batch import Batch
from streamshift_engine.plan import Plan, builtin
from streamshift_engine.runner import Instance, collect

Inputs = Mapping[str, Batch]


def reference(plan: Plan | str, inputs: Inputs | Sequence[Inputs], partitions: int) -> list[str]:
    """Sorted result records (JSON) of the in-process engine running `plan` (or the builtin plan of
    that name) over `inputs` (or over each of a sequence of inputs in turn), without the
    end-of-input flush: what a worker has emitted once it consumed all of it."""
    instance = Instance(builtin(plan) if isinstance(plan, str) else plan, range(partitions))
    for chunk in [inputs] if isinstance(inputs, Mapping) else inputs:
        for name, batch in chunk.items():
            for partition in range(partitions):
                instance.feed(name, partition, batch.take(batch.partition == partition))
    return sorted(json.dumps(r, sort_keys=True) for r in collect(instance.poll()))
