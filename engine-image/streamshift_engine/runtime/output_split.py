"""The output split shared by the no-state protocols between workers (unimico, parallel-track).

Origin and target both compute results for the moving partitions during a hand-off; each keeps
only its side of a split: the origin the results before it, the target those from it on. The
target holds its share until the origin has committed its last result, so per-key order holds
for a `read_committed` reader (ARCHITECTURE.md, "How the protocols map onto Kafka and pods").
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.results import ResultBatch

if TYPE_CHECKING:
    from streamshift_engine.runtime.loop import Worker

BeforeSplit = Callable[[ResultBatch], npt.NDArray[np.bool_]]


class HeldOutput(Protocol):
    """A target's side of a hand-off: the results it holds until the origin is done."""

    holding: bool
    held: list[ResultBatch]
    done: bool


def keep_own_side(
    results: list[ResultBatch],
    moving: Collection[int],
    before_split: BeforeSplit,
    role: str,
) -> list[ResultBatch]:
    """Results of the other partitions, and of the moving ones those on this role's side."""
    kept = []
    for batch in results:
        is_moving = np.isin(batch.partition, list(moving))
        before = before_split(batch)
        drop = is_moving & (~before if role == "origin" else before)
        if drop.any():
            batch = batch.take(~drop)
        if len(batch):
            kept.append(batch)
    return kept


def release_held(worker: Worker, state: HeldOutput) -> None:
    """Write and commit the held results, then run on without holding (once: a repeated call
    does nothing)."""
    if state.holding:
        state.holding = False
        worker.emit_results(state.held)
        worker.commit()
        state.held = []
        state.done = True
        worker.phase = "running"
