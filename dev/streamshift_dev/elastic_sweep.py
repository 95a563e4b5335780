"""The optimum of `make bench-autoscaler`, found by a sweep in the same run: q8 under the high
load at fixed parallelisms (the autoscaler off), each in its own namespace, the smallest
first; the optimum is the smallest parallelism whose instances keep up (`Point.keeps_up`): the
backlog does not grow, and no instance is saturated (at least `SATURATED` busy, the
autoscaler's own mark of an instance that processes all it can: it keeps up by chance, and
any burst or noise puts it behind for good, with no spare capacity to drain what it left).

One worker processes at most its capacity (`elastic.capacity`: records per busy second with
input always waiting), so fewer instances than `high / capacity` cannot keep up and the sweep
starts at that many; it stops at the first that keeps up, or at the partition count. The
capacity sizes the load and says where to start; only the sweep says what keeps up: one
worker's records per busy second grow with its batches (deep backlog, full batches), so a
steady load near the capacity may not be kept up with.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from streamshift_operator.autoscaler.decision import SATURATED

from streamshift_dev import elastic, elastic_load

WARM_S = 12.0
"""Seconds of load before the measurement: the instances start reading, the first backlog
(produced while they started) drains, their load windows fill."""
HALF_BUSY = 0.5
"""The low load's mark: one worker about half busy, half of its capacity as it measures it."""
LOW_TRIES = 3
"""Low rates tried at most: each costs a query started and measured (about a minute)."""
SLACK_S = 1.0
"""A backlog that grew by at most this many seconds of input over the measurement is kept up
with: the workers hold input for up to 100 ms, and the lag is sampled, not integrated."""


@dataclass(frozen=True)
class Point:
    """One parallelism under the load: records/s produced and processed over the measurement,
    the backlog (records) at its start and end, and each instance's busy ratio over it."""

    parallelism: int
    produced_per_s: float
    processed_per_s: float
    lag_start: int
    lag_end: int
    busy: tuple[float, ...]

    def keeps_up(self, lag_tolerance_s: float) -> bool:
        """The backlog did not grow by more than `SLACK_S` of input and ends within the lag
        the autoscaler's users tolerate, and no instance was saturated."""
        slack = SLACK_S * self.produced_per_s
        tolerated = lag_tolerance_s * self.produced_per_s
        bounded = self.lag_end <= self.lag_start + slack and self.lag_end <= tolerated
        return bounded and max(self.busy, default=0.0) < SATURATED

    def line(self, lag_tolerance_s: float) -> str:
        if self.keeps_up(lag_tolerance_s):
            verdict = "keeps up"
        elif max(self.busy, default=0.0) >= SATURATED:
            verdict = f"saturated (busy {SATURATED} or more)"
        else:
            verdict = "falls behind"
        busy = " ".join(f"{b:.2f}" for b in self.busy)
        return (
            f"sweep: parallelism {self.parallelism} processed {self.processed_per_s:,.0f} of "
            f"{self.produced_per_s:,.0f} records/s, backlog {self.lag_start:,} -> "
            f"{self.lag_end:,} records, busy {busy}: {verdict}"
        )


def first_parallelism(high_rate: float, capacity: float) -> int:
    """The fewest instances of `capacity` records/s each that could process `high_rate`."""
    return max(1, math.ceil(high_rate / capacity - 1e-9))


def optimum(points: list[Point], lag_tolerance_s: float) -> int | None:
    """The smallest parallelism swept that keeps up; None if none did."""
    kept = [p.parallelism for p in points if p.keeps_up(lag_tolerance_s)]
    return min(kept) if kept else None


def sweep(
    s: elastic.Session,
    settings: elastic.Settings,
    high_rate: float,
    capacity: float,
    measure_s: float,
    say: Callable[[str], None],
) -> list[Point]:
    """Each parallelism from `first_parallelism` up, measured under `high_rate` records/s for
    `measure_s` seconds, until one keeps up (or the partitions are all used)."""
    points: list[Point] = []
    for parallelism in range(first_parallelism(high_rate, capacity), elastic.PARTITIONS + 1):
        point = measure(s, settings, parallelism, high_rate, measure_s)
        say(point.line(settings.lag_tolerance_s))
        points.append(point)
        if point.keeps_up(settings.lag_tolerance_s):
            break
    return points


def low_load(
    s: elastic.Session,
    settings: elastic.Settings,
    low_rate: float,
    measure_s: float,
    say: Callable[[str], None],
) -> float:
    """The step's low rate: `low_rate` records/s (half of what one worker runs at the target by
    its flat-out rate), lowered until one worker reads about `HALF_BUSY` there (at most 0.05
    more). A light load costs a worker more per record than a deep backlog does (a poll's
    fixed part, and cold caches on cores shared with the rest of the stack): at the flat-out
    rate's half the worker read busy above the target in the bench, and the low phase scaled
    up before the step (docs/autoscaler.md)."""
    for _ in range(LOW_TRIES):
        busy = max(measure(s, settings, 1, low_rate, measure_s).busy, default=0.0)
        say(f"low load: one worker at {low_rate:,.0f} records/s reads busy {busy:.2f}")
        if busy <= HALF_BUSY + 0.05:
            break
        low_rate *= HALF_BUSY / busy
    return low_rate


def measure(
    s: elastic.Session, settings: elastic.Settings, parallelism: int, rate: float, measure_s: float
) -> Point:
    """q8 at `parallelism` without the autoscaler under `rate` records/s (event time at wall
    time), measured for `measure_s` seconds after `WARM_S`."""
    with elastic.namespace(s, f"sweep{parallelism}") as ns:
        elastic.start_query(s, ns, settings, autoscaled=False, parallelism=parallelism)
        generator = elastic_load.config(elastic.PARTITIONS, elastic_load.events_for(rate))
        load = elastic_load.Producing(s.stack.kafka, ns, generator)
        load.start()
        try:
            time.sleep(WARM_S)
            began, first = elastic.instance_loads(s, ns, parallelism)
            produced_before = load.records
            time.sleep(measure_s)
            ended, last = elastic.instance_loads(s, ns, parallelism)
            produced = load.records - produced_before
        finally:
            load.stop()
    span = ended - began
    processed = sum(int(last[p]["processed"]) - int(first[p]["processed"]) for p in last)
    busy = tuple(
        min(1.0, (float(last[p]["busy_seconds"]) - float(first[p]["busy_seconds"])) / span)
        for p in sorted(last)
    )
    return Point(
        parallelism,
        produced / span,
        processed / span,
        elastic.lag_of(first),
        elastic.lag_of(last),
        busy,
    )
