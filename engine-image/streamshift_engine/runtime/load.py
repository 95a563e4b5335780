"""An instance's load, as the autoscaler needs it (DS2): busy time, records processed, and each
input partition's input rate and lag, over a sliding window.

Busy time is a step's wall time less the time its consume waited for input, so decoding counts
as work and waiting does not. Under a CPU quota (`cpu_quota`: a pod's CPU limit) a step's wall
time says little below saturation: a short step runs unthrottled, so records per wall-busy
second come out at the rate of a whole core, not of the quota. There the busy fraction is the
steps' CPU time (the loop thread's, `stepped`) over the CPU the quota left them: the quota less
everything else the process used meanwhile (commits, the Kafka clients' threads, the control
API, the loop between steps), which it pays whatever the load. Saturated, the steps take all
that is left (a busy fraction of 1); idle, none of it. In between a step's fixed part (the
engine's poll, the roles' hooks, producing) weighs on the few records of a light load, so the
true rate understates what the instance does once busy, the side the autoscaler expects of a
light load (it keeps the rate measured at a representative load); counting the process's CPU
over the quota would also count the fixed costs of the other threads as work.

Records are Kafka records (for JSON input, events): the unit of the partitions' end offsets, so
the input rate and the true processing rate (records per busy second) compare. A partition's
input rate is the growth of its end offset over the window; its lag in seconds is its lag in
records over that rate (how far the log end is ahead), unknown (None) while records wait but
none arrive.

The worker thread calls `stepped` after each step and `sample` about once a second; `report` is
what `/v1/status` shows under `load`, and `sample` sets the Prometheus gauges.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from streamshift_engine.runtime.metrics import Metrics
from streamshift_engine.runtime.source import KafkaSource, Position

WINDOW_S = 30.0


@dataclass(frozen=True)
class _Sample:
    at: float
    busy: float
    processed: int
    ends: dict[Position, int]


class Load:
    """Cumulative busy seconds and records processed, and samples of them and of the partitions'
    end offsets over the last `window_s` seconds. With `quota_cores` (the process's CPU quota),
    busy seconds are counted at each `sample`: the steps' CPU time over what the quota left
    them (`cpu_clock` is the process's CPU time); without, they are the steps' busy wall time."""

    def __init__(
        self,
        metrics: Metrics,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        quota_cores: float | None = None,
        cpu_clock: Callable[[], float] = time.process_time,
    ) -> None:
        self.metrics = metrics
        self.window_s = window_s
        self.clock = clock
        self.quota_cores = quota_cores
        self.cpu_clock = cpu_clock
        self.cpu_seconds = cpu_clock()
        self.step_cpu_seconds = 0.0  # the steps' CPU time since the last sample
        self.busy_seconds = 0.0
        self.processed = 0
        self.lags: dict[Position, int] = {}
        self.samples: deque[_Sample] = deque()

    def stepped(self, busy_s: float, records: int, cpu_s: float = 0.0) -> None:
        """One step: `busy_s` seconds of work (wall time, less the wait for input) on `records`
        records, taking `cpu_s` seconds of the loop thread's CPU time."""
        self.step_cpu_seconds += max(0.0, cpu_s)
        if self.quota_cores is None:
            self._busy(busy_s)
        self.processed += records
        self.metrics.processed.inc(records)

    def _busy(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.busy_seconds += seconds
        self.metrics.busy.inc(seconds)

    def _busy_by_cpu(self, now: float) -> None:
        """Under a quota: of the time since the last sample, the fraction the steps' CPU time
        is of the CPU the quota left them (all of it once they took all of that)."""
        if self.quota_cores is None:
            return
        cpu, steps = self.cpu_clock(), self.step_cpu_seconds
        span = now - self.samples[-1].at if self.samples else 0.0
        left = self.quota_cores * span - max(0.0, cpu - self.cpu_seconds - steps)
        self._busy(span if steps >= left else span * steps / left)
        self.cpu_seconds, self.step_cpu_seconds = cpu, 0.0

    def sample_source(self, source: KafkaSource, consumed: Mapping[Position, int]) -> int:
        """`sample` with the source's last known end offsets of the partitions read (`consumed`
        event offsets); returns the lag over all partitions."""
        read = {position: source.kafka_offset(offset) for position, offset in consumed.items()}
        return self.sample(source.cached_ends(read), read)

    def sample(self, ends: Mapping[Position, int], read: Mapping[Position, int]) -> int:
        """Record the partitions' end offsets now and the offsets read up to (both in Kafka
        records); returns the lag over all partitions."""
        now = self.clock()
        self._busy_by_cpu(now)
        self.lags = {p: max(0, end - read[p]) for p, end in ends.items() if p in read}
        self.samples.append(_Sample(now, self.busy_seconds, self.processed, dict(ends)))
        while len(self.samples) > 2 and self.samples[1].at <= now - self.window_s:
            self.samples.popleft()  # the oldest kept is the one at or before the window start
        self._publish(self.report())
        return sum(self.lags.values())

    def report(self) -> dict[str, Any]:
        """Totals, and the window's busy ratio, true rate, and per partition the input rate and
        lag (keys `input:partition`)."""
        totals = {"busy_seconds": round(self.busy_seconds, 3), "processed": self.processed}
        if len(self.samples) < 2:
            return {
                **totals,
                "window_seconds": 0.0,
                "busy_ratio": None,
                "true_rate": None,
                "input_rate": {},
                "lag_records": {},
                "lag_seconds": {},
            }
        first, last = self.samples[0], self.samples[-1]
        span = last.at - first.at
        busy = last.busy - first.busy
        processed = last.processed - first.processed
        rates = {p: (end - first.ends.get(p, end)) / span for p, end in last.ends.items()}
        return {
            **totals,
            "window_seconds": round(span, 3),
            "busy_ratio": round(min(1.0, busy / span), 4),
            "true_rate": round(processed / busy, 1) if busy > 0 and processed > 0 else None,
            "input_rate": {_key(p): round(rate, 1) for p, rate in sorted(rates.items())},
            "lag_records": {_key(p): lag for p, lag in sorted(self.lags.items())},
            "lag_seconds": {
                _key(p): _lag_seconds(lag, rates.get(p, 0.0))
                for p, lag in sorted(self.lags.items())
            },
        }

    def _publish(self, report: Mapping[str, Any]) -> None:
        metrics = self.metrics
        metrics.busy_ratio.set(report["busy_ratio"] or 0.0)
        metrics.true_rate.set(report["true_rate"] or 0.0)
        for gauge, values in (
            (metrics.input_rate, report["input_rate"]),
            (metrics.partition_lag, report["lag_records"]),
            (metrics.partition_lag_seconds, report["lag_seconds"]),
        ):
            gauge.clear()  # partitions released since the last sample go away
            for partition, value in values.items():
                if value is not None:
                    gauge.labels(partition=partition).set(value)


def _key(position: Position) -> str:
    return f"{position[0]}:{position[1]}"


def _lag_seconds(lag: int, rate: float) -> float | None:
    if lag == 0:
        return 0.0
    return round(lag / rate, 3) if rate > 0 else None
