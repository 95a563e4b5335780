"""Streaming generation that keeps event time at wall time, bounded in time.

A driver-side paced loop of bounded writes: every `interval_s` it writes the events whose event
time is due by then (`nexmark.rates.events_before`: the generator config's rate shape, constant,
step or sine), as one Spark job over the next index range. Jobs run one after the other, so every
Kafka partition stays in index (event-time) order across jobs. Events arrive at the rate their
timestamps say, as from a real source: what the autoscaler sees is what the windows count.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from streamshift_engine.nexmark.rates import event_times, events_before
from streamshift_engine.spark.generator import GenerateSpec

Write = Callable[[GenerateSpec], object]


def paced(
    base: GenerateSpec,
    duration_s: float,
    write: Write,
    interval_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    stop: Callable[[], bool] = lambda: False,
) -> list[tuple[float, int]]:
    """Write for `duration_s` (or until `stop()` is true before a write) from
    `base.start_index`, the events of event time `t` seconds after the start index's by `t`
    seconds after the start; `(elapsed, events)` per write."""
    config = base.config
    first = np.array([base.start_index], np.int64)
    origin = int(event_times(first, config)[0]) - config.base_time_ms
    start = clock()
    written = 0
    log: list[tuple[float, int]] = []
    tick = 0
    while not stop():
        tick += 1
        target = min(tick * interval_s, duration_s)
        due = events_before(config, origin + round(target * 1000)) - base.start_index - written
        if due > 0:
            write(base.advanced(base.start_index + written, due))
            written += due
            log.append((clock() - start, due))
        if target >= duration_s:
            return log
        sleep(max(0.0, start + target - clock()))
    return log
