"""Streaming generation at a target rate with a rate shape, bounded in time.

A driver-side paced loop of bounded writes: every `interval_s` it writes the events the shape
owes by then (the integral of the rate since the start, minus what was written), as one Spark job
over the next index range. Jobs run one after the other, so every Kafka partition stays in
index (event-time) order across jobs. Event time stays the generator's (`events_per_second` of
its config); the shape sets how fast events arrive, which is what an autoscaler sees.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from streamshift_engine.spark.generator import GenerateSpec

Write = Callable[[GenerateSpec], object]


@dataclass(frozen=True, slots=True)
class RateShape:
    """`constant` at `rate`; `step` from `rate` to `high` at `step_at_s`; `sine` around `rate`
    with amplitude `high - rate` and period `period_s`. Rates are events per second."""

    kind: str
    rate: float
    high: float = 0.0
    step_at_s: float = 0.0
    period_s: float = 60.0

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "step", "sine"):
            raise ValueError(f"unknown rate shape {self.kind!r}: constant, step or sine")
        if self.rate <= 0 or (self.kind != "constant" and self.high <= 0):
            raise ValueError("rates must be positive")
        if self.kind == "sine" and (self.period_s <= 0 or self.high > 2 * self.rate):
            raise ValueError("a sine needs a positive period and high <= 2 * rate")

    def total(self, t: float) -> float:
        """Events owed from time 0 to `t` seconds: the integral of the rate."""
        if self.kind == "constant":
            return self.rate * t
        if self.kind == "step":
            return self.rate * min(t, self.step_at_s) + self.high * max(0.0, t - self.step_at_s)
        amplitude = self.high - self.rate
        omega = 2 * math.pi / self.period_s
        return self.rate * t + amplitude * (1 - math.cos(omega * t)) / omega


def paced(
    base: GenerateSpec,
    shape: RateShape,
    duration_s: float,
    write: Write,
    interval_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[tuple[float, int]]:
    """Write `shape` for `duration_s` from `base.start_index`; `(elapsed, events)` per write."""
    start = clock()
    written = 0
    log: list[tuple[float, int]] = []
    tick = 0
    while True:
        tick += 1
        target = min(tick * interval_s, duration_s)
        due = int(shape.total(target)) - written
        if due > 0:
            write(base.advanced(base.start_index + written, due))
            written += due
            log.append((clock() - start, due))
        if target >= duration_s:
            return log
        sleep(max(0.0, start + target - clock()))
