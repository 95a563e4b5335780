"""The generator's event rate over event time: constant, a step, or a sine (reference Nexmark's
`rateShape` with `firstEventRate` and `nextEventRate`).

The rate is piecewise constant, as the reference's rate steps are: `step` holds
`events_per_second` until `step_at_s`, then `next_events_per_second` (until `step_until_s`, if
set, and `events_per_second` again after it); `sine` repeats a cycle of `period_s` one-second
slices around `events_per_second`, peaking at `next_events_per_second`, each slice's rate the
sine's value at the slice's middle. Within a segment of rate `r` starting at index `I` and time
`T`, index `i` has event time `T + (i - I) * 1000 // r` ms after `base_time_ms`: integer
arithmetic, so every machine (the Spark executors, the oracle) gives every event the same time.
For `constant` that is the reference's `index * 1000 // rate`, as before shapes existed.

`events_before` inverts it: how many indices have an event time before a moment, which is what
a writer that keeps event time at wall time (`spark.pacing`) has to have written by then.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from streamshift_engine.nexmark.config import GeneratorConfig

I64 = npt.NDArray[np.int64]
SHAPES = ("constant", "step", "sine")
SLICE_S = 1  # a sine's rate is constant over each second


def segments(config: GeneratorConfig) -> tuple[I64, I64, I64, int, int]:
    """The segments' first indices, start times (ms from `base_time_ms`) and rates, and the
    events and milliseconds of one cycle (0, 0 when the last segment lasts for ever)."""
    rate, shape = config.events_per_second, config.rate_shape
    rows: list[tuple[int, int, int]] = [(0, 0, rate)]
    cycle_events = cycle_ms = 0
    if shape == "step":
        at, until, high = config.step_at_s, config.step_until_s, config.next_events_per_second
        rows.append((rate * at, at * 1000, high))
        if until:
            rows.append((rate * at + high * (until - at), until * 1000, rate))
    elif shape == "sine":
        amplitude = config.next_events_per_second - rate
        slices = config.period_s // SLICE_S
        rates = [
            round(rate + amplitude * math.sin(2 * math.pi * (k + 0.5) / slices))
            for k in range(slices)
        ]
        starts = np.cumsum([0, *(r * SLICE_S for r in rates)])
        rows = [(int(starts[k]), k * SLICE_S * 1000, r) for k, r in enumerate(rates)]
        cycle_events, cycle_ms = int(starts[-1]), config.period_s * 1000
    columns = np.array(rows, np.int64).T
    return columns[0], columns[1], columns[2], cycle_events, cycle_ms


def event_times(indices: I64, config: GeneratorConfig) -> I64:
    """Event time (ms since the epoch) of each index."""
    if config.rate_shape == "constant":
        return config.base_time_ms + indices * 1000 // config.events_per_second
    starts, times, rates, cycle_events, cycle_ms = segments(config)
    offset: I64 | int = 0
    if cycle_events:
        cycles, indices = np.divmod(indices, cycle_events)
        offset = cycles * cycle_ms
    k = np.searchsorted(starts, indices, side="right") - 1
    within = (indices - starts[k]) * 1000 // rates[k]
    result: I64 = config.base_time_ms + offset + times[k] + within
    return result


def events_before(config: GeneratorConfig, t_ms: int) -> int:
    """How many indices have an event time before `t_ms` ms after `base_time_ms`."""
    if t_ms <= 0:
        return 0
    starts, times, rates, cycle_events, cycle_ms = segments(config)
    done = 0
    if cycle_events:
        cycles, t_ms = divmod(t_ms, cycle_ms)
        done = cycles * cycle_events
    k = int(np.searchsorted(times, t_ms, side="right")) - 1
    # index I + j is before t_ms when j * 1000 // r < t_ms - T, that is j < (t_ms - T) * r / 1000
    return done + int(starts[k]) + -(-(t_ms - int(times[k])) * int(rates[k]) // 1000)
