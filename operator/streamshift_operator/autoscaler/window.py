"""The metric window: readings of a query's counters over time, turned into an `Observation`.

Each reconcile pass adds one reading: every worker's cumulative busy seconds and processed
records (`/v1/status` `load`), the input partitions' end offsets, and the lag the workers report.
An observation is the difference between the newest reading and the newest one at least the
metric window older, so its rates are averages over (about) the window. There is none until a
whole window of readings with the same pods exists: after an operator restart or a rescale the
window fills again first. Readings live in the operator's memory only (they are samples, not a
record: status keeps the decisions).
"""

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from streamshift_operator.autoscaler.decision import MEASURE_OVERLOAD_S
from streamshift_operator.autoscaler.inputs import InstanceLoad, Observation, Overload

RECENT_SHARE = 0.25  # the part of the window the recent input rate is taken over
FALLING_BEHIND = 0.1
"""An interval in which the input grew by more than this fraction over what the instances
processed adds to the backlog (below it: the noise of a poll's timing)."""
OVERLOAD_HISTORY_S = 2 * MEASURE_OVERLOAD_S
"""Readings are kept at least this long, whatever the metric window: a growing backlog is
measured over `MEASURE_OVERLOAD_S` after the interval it began in."""


@dataclass(frozen=True)
class Reading:
    """The query's counters at one moment."""

    at: float
    """Seconds since the epoch."""
    instances: Mapping[str, tuple[float, int]]
    """By pod: cumulative busy seconds and records processed."""
    ends: Mapping[str, int]
    """By `topic:partition`: the end offset of each input partition."""
    lag_records: int
    """Input records not yet processed, over all partitions, as the workers report it."""


class Window:
    """Readings of one query, at most as old as needed for one metric window."""

    def __init__(self) -> None:
        self.readings: deque[Reading] = deque()

    def add(self, reading: Reading, window_s: float) -> None:
        """Keep `reading`; drop those no observation over `window_s` needs any more. A reading
        with other pods than the last, or with counters that went back (a worker restarted),
        starts the window over."""
        if self.readings and not _continues(self.readings[-1], reading):
            self.readings.clear()
        self.readings.append(reading)
        keep = max(window_s, OVERLOAD_HISTORY_S)
        while len(self.readings) > 1 and self.readings[1].at <= reading.at - keep:
            self.readings.popleft()

    def observation(
        self, window_s: float, partitions: int, last_rescale_at: float | None
    ) -> Observation | None:
        """The load over the window up to the newest reading; None before a whole window."""
        last = self.readings[-1]
        older = [r for r in self.readings if r.at <= last.at - window_s]
        if not older or not last.instances:
            return None
        first = older[-1]  # the newest a whole window before the last
        span = last.at - first.at
        input_rate = _arrival_rate(first, last)
        tail = [r for r in self.readings if r.at >= last.at - window_s * RECENT_SHARE]
        recent = None
        if len(tail) >= 2 and tail[-1].at > tail[0].at:
            recent = _arrival_rate(tail[0], last)
        # at the recent rate when higher: after a step up the average understates the arrivals
        lag_seconds = _lag_seconds(last.lag_records, max(input_rate, recent or 0.0))
        loads = tuple(
            InstanceLoad(busy - first.instances[pod][0], processed - first.instances[pod][1], span)
            for pod, (busy, processed) in sorted(last.instances.items())
        )
        return Observation(
            at=last.at,
            parallelism=len(last.instances),
            partitions=partitions,
            input_rate=input_rate,
            lag_records=last.lag_records,
            lag_seconds=lag_seconds,
            instances=loads,
            last_rescale_at=last_rescale_at,
            recent_input_rate=recent,
            overload=_overload(list(self.readings)),
        )


def _arrival_rate(first: Reading, last: Reading) -> float:
    """Records per second appended to the input partitions between two readings."""
    arrived = sum(end - first.ends.get(key, end) for key, end in last.ends.items())
    return max(0.0, arrived / (last.at - first.at))


def _processed(first: Reading, last: Reading) -> int:
    """Records the instances processed between two readings (of the same pods)."""
    return sum(done - first.instances[pod][1] for pod, (_, done) in last.instances.items())


def _falls_behind(first: Reading, last: Reading) -> bool:
    arrived = sum(end - first.ends.get(key, end) for key, end in last.ends.items())
    return arrived > 0 and arrived > _processed(first, last) * (1 + FALLING_BEHIND)


def _overload(readings: list[Reading]) -> Overload | None:
    """The load since the backlog began to grow (see `Overload`), if it grew in the newest
    interval. The interval it began in is left out (the load before a step may fill part of
    it): with the newest interval the only one, an overload of 0 seconds, measured nothing."""
    began = len(readings) - 1
    while began > 0 and _falls_behind(readings[began - 1], readings[began]):
        began -= 1
    if began == len(readings) - 1:
        return None
    first, last = readings[began + 1], readings[-1]
    span = last.at - first.at
    if span <= 0:
        return Overload(0.0, 0.0, 0.0, 0.0)
    newer = _newer_half(readings[began + 1 :])
    newer_span = last.at - newer.at
    busy = sum(b - newer.instances[pod][0] for pod, (b, _) in last.instances.items())
    return Overload(
        seconds=span,
        input_rate=_arrival_rate(first, last),
        processed_rate=_processed(newer, last) / newer_span,
        busy_ratio=busy / (newer_span * len(last.instances)),
    )


def _newer_half(readings: list[Reading]) -> Reading:
    """The newest of `readings` at least half their span before the last: where the newer half
    of an overload begins. Instances behind a step process more per second the longer the
    backlog waits (docs/autoscaler.md), so the newer half says more of their capacity."""
    last = readings[-1]
    middle = readings[0].at + (last.at - readings[0].at) / 2
    return max((r for r in readings[:-1] if r.at <= middle), key=lambda r: r.at)


def _continues(before: Reading, after: Reading) -> bool:
    """The same pods, each with counters no lower than before."""
    if set(before.instances) != set(after.instances):
        return False
    return all(
        after.instances[pod][0] >= busy and after.instances[pod][1] >= processed
        for pod, (busy, processed) in before.instances.items()
    )


def _lag_seconds(lag: int, input_rate: float) -> float:
    """Seconds of input the lag holds; infinite when records wait and none arrive."""
    if lag == 0:
        return 0.0
    return lag / input_rate if input_rate > 0 else float("inf")
