"""What the autoscaler's decision reads: the observed load, the user's policy, its own memory.

All rates are over the metric window (the glue turns counter deltas into them), so the decision
itself holds no clock and no history beyond the pending scale-down it is handed back.
"""

from dataclasses import dataclass

DEFAULT_HEADROOM = 0.2
"""Scale down only if the load would still fit with this fraction of headroom at the target
utilization: the gap between the scale-up and the scale-down thresholds (the hysteresis)."""

OVERLOAD_MARGIN = 0.1
"""Scale up (short of lag beyond the tolerance) only once the load exceeds the target
utilization of the running instances by this fraction: metric noise around a load that sits at
the target does not rescale it (a light load's true rate read 19.4K, 20.4K and 21.5K records per
busy second in consecutive decisions of the 100m benchmark)."""


@dataclass(frozen=True)
class InstanceLoad:
    """One instance over the metric window: how much of it was busy and what it processed."""

    busy_seconds: float
    """Seconds spent processing records (not waiting on the consume poll)."""
    processed: int
    """Records processed."""
    window_seconds: float
    """The window's length."""

    @property
    def busy_ratio(self) -> float:
        """The fraction of the window spent processing, in [0, 1]."""
        if self.window_seconds <= 0:
            return 0.0
        return min(1.0, max(0.0, self.busy_seconds / self.window_seconds))


@dataclass(frozen=True)
class Overload:
    """The load since the backlog began to grow: from the first reading after an interval in
    which the instances fell behind (it may hold the load before a step), to the newest, every
    interval in between falling behind too. All instances together."""

    seconds: float
    """How long it was measured over (0: the backlog grew in the newest interval only)."""
    input_rate: float
    """Records per second appended to the input partitions."""
    processed_rate: float
    """Records per second the instances processed over its newer half (with input waiting:
    their capacity, which grows some seconds into a backlog)."""
    busy_ratio: float
    """The instances' mean busy fraction over its newer half (as they report it, in about 1 s
    steps)."""


@dataclass(frozen=True)
class Observation:
    """The query's load at one moment, over the metric window before it."""

    at: float
    """When the observation was made (seconds on any clock the caller keeps)."""
    parallelism: int
    """The instances running now."""
    partitions: int
    """The source partitions: no parallelism above it can be used."""
    input_rate: float
    """Records per second appended to the query's input partitions (from end offsets)."""
    lag_records: int
    """Input records not yet processed, over all partitions."""
    lag_seconds: float
    """How far behind the log end the query reads, in seconds of input (at the input rate, or
    the recent one when higher)."""
    instances: tuple[InstanceLoad, ...]
    """Each running instance's busy time and processed records."""
    last_rescale_at: float | None = None
    """When the last rescale finished, on the same clock as `at`; None if never."""
    recent_input_rate: float | None = None
    """`input_rate` over the last quarter of the window only (None: too few readings): a step
    up in the load shows in it at once, where the window's average lags behind the step."""
    overload: Overload | None = None
    """The load since the backlog began to grow, while it still grows; None when it does not."""


@dataclass(frozen=True)
class Policy:
    """The user's bounds and targets (StreamQuery.spec.autoscaler)."""

    min_parallelism: int
    max_parallelism: int
    target_utilization: float
    """The busy fraction each instance should run at, in (0, 1]."""
    lag_tolerance_seconds: float
    """Lag beyond this is caught up at once: the backlog is drained within this time."""
    stabilization_seconds: float
    """No decision for this long after a rescale (its metrics are not yet representative)."""
    scale_down_delay_seconds: float
    """A lower parallelism must be recommended this long, without a break, before it is used."""
    recommend_only: bool = False
    """Write the recommendation without acting on it."""
    headroom: float = DEFAULT_HEADROOM
    overload_margin: float = OVERLOAD_MARGIN


@dataclass(frozen=True)
class Capacity:
    """The autoscaler's memory of one instance's true rate: the rate measured at the busiest
    load seen (see `decision.capacity_rate`), and how busy the instances were then (1.0:
    saturated)."""

    rate: float
    """Records one instance processes per busy second."""
    busy_ratio: float
    """The instances' mean busy fraction over the window it was measured in."""


@dataclass(frozen=True)
class PendingScaleDown:
    """A scale-down recommended without a break since `since`; `parallelism` is the highest
    parallelism recommended in that time (the one used when the delay is over). A lower
    recommendation starts a pending scale-down of its own."""

    since: float
    parallelism: int
