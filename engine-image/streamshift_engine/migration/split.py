"""The output split of the protocols that move no state (unimico, parallel-track).

Origin and target both compute results for the moving partitions during a hand-off; each keeps
only its side of a split: the origin the results before it, the target those from it on. The
target holds its share until the origin has handed over, so per-key order holds for a
`read_committed` reader (docs/architecture.md, "How a hand-off keeps output exact").
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import numpy.typing as npt

from streamshift_engine.events.results import ResultBatch

BeforeSplit = Callable[[ResultBatch], npt.NDArray[np.bool_]]


def keep_own_side(
    results: list[ResultBatch],
    moving: Collection[int],
    before_split: BeforeSplit,
    side: str,
) -> list[ResultBatch]:
    """Results of the other partitions, and of the moving ones those on this side."""
    kept = []
    for batch in results:
        is_moving = np.isin(batch.partition, list(moving))
        before = before_split(batch)
        drop = is_moving & (~before if side == "origin" else before)
        if drop.any():
            batch = batch.take(~drop)
        if len(batch):
            kept.append(batch)
    return kept
