"""The order Nexmark events arrive in: out-of-order groups and late events, by index alone.

The reference generator (Beam / Flink nexmark `GeneratorConfig.nextAdjustedEventNumber`) emits,
in the slot of event number `i`, the event `base + (i * 953) % n` of `i`'s aligned group of `n =
outOfOrderGroupSize` numbers: events are shuffled within groups. Here an event's arrival slot is
the inverse of that shuffle, so slot `s` holds the same event as the reference's. A fraction of
events (`late_per_million`, drawn per index) is then late: it arrives `late_slots` slots after
its own, behind the events of that slot. Events arrive in the order `(slot, late, index)`, a
pure function of `(seed, index)` like every field, so Python and Spark agree and any index range
can be ordered on its own (`nexmark.generator` orders a range's events by it; a range holds the
events of its indices, so a late event near a range's end arrives at that range's end).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamshift_engine.nexmark import draws
from streamshift_engine.nexmark.config import GeneratorConfig

I64 = npt.NDArray[np.int64]
SHUFFLE = 953
"""The reference's multiplier (a prime)."""
LATE = 31
"""The draw stream that picks late events (after the generator's field salts 1 to 30)."""


def slots(seed: int, indices: I64, config: GeneratorConfig) -> tuple[I64, npt.NDArray[np.bool_]]:
    """Per event index, its arrival slot and whether it is late."""
    n = config.out_of_order_group_size
    base, within = np.divmod(indices, n)
    slot = base * n + within * pow(SHUFFLE, -1, n) % n if n > 1 else indices.copy()
    late = np.zeros(len(indices), dtype=bool)
    if config.late_per_million:
        late = draws.below(seed, LATE, indices, 1_000_000) < config.late_per_million
        slot = slot + np.where(late, config.late_slots, 0)
    return slot, late


def arrival_order(seed: int, indices: I64, config: GeneratorConfig) -> I64:
    """The positions of `indices` in arrival order `(slot, late, index)`."""
    if config.in_order:
        return np.arange(len(indices), dtype=np.int64)
    slot, late = slots(seed, indices, config)
    return np.lexsort((indices, late, slot)).astype(np.int64)
