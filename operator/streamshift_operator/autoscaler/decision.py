"""The autoscaler's decision: observations in, a parallelism and its reason out (pure).

DS2 (Kalavri et al., "Three steps is all you need: fast, accurate, automatic scaling decisions
for distributed streaming dataflows", OSDI 2018, section 3): an instance's *true* processing
rate is the records it processed per second it was busy (time waiting for input does not
count), so the parallelism that keeps up is one step away:

    parallelism = ceil(input rate / (true rate per instance * target utilization))

Around that one-step estimate:
- the partitions: DS2 assumes an operator's input spreads evenly over its instances, but an
  instance reads whole partitions, and the busiest of `p` instances over `P` partitions reads
  `ceil(P / p)` of them; so the estimate is the fewest instances whose busiest one reads at
  most its share (`instances_for`: over 4 partitions 1, 2 or 4, never 3, which holds only what
  2 do);
- bounds: min and max parallelism, and never above the partition count;
- scale up at once when the input exceeds the running instances' target utilization (by more
  than a small margin for metric noise, never beyond full utilization) or the lag exceeds the
  tolerance; an up-scale also drains the backlog within the tolerance (the backlog is added to
  the input rate as `lag / tolerance`, at full, not target, utilization);
- a step up is sized by the load since the backlog began to grow (`Observation.overload`), not
  the window's average, which still holds the load before the step (the benchmark's step from
  9.5K to 49.2K records/s was seen as 18.4K/s 3 s after it and scaled to 2, not 3). The decision
  waits until that load was measured for `MEASURE_OVERLOAD_S` (an instance's rate settles some
  seconds after a step), unless the lag is beyond the tolerance. Without a growing backlog it
  takes the input rate of the window's last quarter when that is higher;
- hysteresis: scale down only if the load would fit the lower parallelism even with `headroom`
  to spare, and land on the one-step estimate, which is then inside the band: a steady load,
  noise included, never flaps;
- scale down only after the lower parallelism was recommended for the whole scale-down delay
  (the highest recommendation in that time is used), and never while an instance is busier
  than the target (a busy job whose input shrinks is catching up: FLINK-38538); a
  recommendation below the pending one starts the delay over for it, so a step down, whose
  first windows still hold some of the load before it, is one scale-down, not two;
- no decision during the stabilization window after a rescale;
- the capacity of an instance: DS2 measures the true rate of busy operators. Below saturation
  the rate measured here understates what an instance does once busy (a poll's fixed cost weighs
  on few records, and under a CPU quota the busy time is CPU time over what the quota leaves:
  Nexmark q8 read 21.6K records per busy second at 44% busy against 31.6K flat out, and 2.6K
  against 225K at light load without a quota). So the rate measured while the instances were
  saturated (a growing backlog with the instances at least `OVERLOAD_BUSY` busy: their records
  per busy second over it; or every instance at least `SATURATED` busy) is used and remembered;
  otherwise the rate measured at the busiest load seen, remembered with its busy fraction.
  The lighter the load, the more a poll's fixed cost weighs and the less the rate says; and a
  rate that overstates capacity comes from a window whose busy time read low (the workers count
  it in about 1 s steps), which a busier window replaces (docs/autoscaler.md). An instance that
  became slower saturates and is measured again.
"""

import math
from dataclasses import dataclass
from enum import StrEnum

from streamshift_operator.autoscaler.inputs import (
    Capacity,
    InstanceLoad,
    Observation,
    Overload,
    PendingScaleDown,
    Policy,
)

SATURATED = 0.9
"""An instance at least this busy over the window processes what it can: its true rate then
is its capacity."""
MEASURE_OVERLOAD_S = 10.0
"""The least time a growing backlog's load is measured over before a scale-up is sized by it.
An instance's records per busy second after a step up beyond its capacity reach what it does
with a deep backlog only some seconds later (q8 at 60m: 0.53 of it 3 s after the step, 0.69
after 6 s, 0.90 after 12 s, `bench.worker_true_rate --step-s`): measured over less, a step is
sized to more instances than keep up. Measured from the reading after the interval it began in,
10 s end about 12 s after the step; longer, the backlog a scale-up also drains grows, and with
it the instances asked for beyond those that keep up. The workers count busy time in about 1 s
steps, so over 10 s an instance's busy time reads at most about 1/10 off."""
OVERLOAD_BUSY = 0.7
"""With the backlog growing, instances at least this busy (as measured over at least
`MEASURE_OVERLOAD_S`) process what they can when busy: their records per busy second are
their capacity (they may wait on fetches between: the 100m q8 worker processed 27K records/s
just after a step, and 33K/s with a deep backlog). Less busy, they fall behind for another
reason (a stall) and say nothing of their capacity."""


class Action(StrEnum):
    """What to do now: hold, scale-up or scale-down."""

    HOLD = "hold"
    SCALE_UP = "scale-up"
    SCALE_DOWN = "scale-down"


@dataclass(frozen=True)
class Decision:
    """A decision: the recommended parallelism, whether to rescale to it now, and why."""

    action: Action
    parallelism: int
    """The recommended parallelism (during a pending scale-down, the one it will use)."""
    reason: str
    act: bool
    """Rescale now: the action is not hold and the policy is not recommend-only."""
    pending: PendingScaleDown | None
    """The scale-down waiting out its delay, to hand to the next decision."""
    true_rate: float | None
    """Records per busy second of one instance, if any instance was busy."""
    decided_rate: float | None
    """The true rate decided with (`capacity_rate`)."""
    loaded: Capacity | None
    """The remembered rate (`capacity_rate`), to hand to the next decision."""
    behind: bool = False
    """A scale-up of instances falling behind their input (`falling_behind`): the protocol then
    matters (`record.protocol_of`)."""


def held(parallelism: int, partitions: int) -> float:
    """How many instances' worth of input `parallelism` instances hold when it spreads evenly
    over `partitions` partitions: the busiest reads `ceil(partitions / parallelism)` of them,
    so `partitions / ceil(partitions / parallelism)` (the parallelism itself when it divides
    the partitions; 3 instances over 4 partitions hold only what 2 do)."""
    return partitions / math.ceil(partitions / max(1, parallelism))


def instances_for(load: float, partitions: int) -> int:
    """The fewest instances that hold `load` instances' worth of input spread evenly over
    `partitions` partitions (`held`): each may read at most `partitions / load` of them. Beyond
    one partition per instance, `ceil(load)` (more than the partitions: the bounds cap it, and
    the reason says what was needed)."""
    if load <= 1:
        return 1
    each = math.floor(partitions / load + 1e-9)  # partitions one instance may read
    return math.ceil(load) if each < 1 else math.ceil(partitions / each)


def true_rate(instances: tuple[InstanceLoad, ...]) -> float | None:
    """Records one instance processes per busy second (DS2's true processing rate), over all
    instances; None when no instance processed anything."""
    busy = sum(instance.busy_seconds for instance in instances)
    processed = sum(instance.processed for instance in instances)
    if busy <= 0 or processed <= 0:
        return None
    return processed / busy


def measured_overload(obs: Observation, policy: Policy) -> Overload | None:
    """The growing backlog's load, once measured for long enough (see `MEASURE_OVERLOAD_S`), or
    as measured so far once the lag is beyond the tolerance (no time to wait: its rate errs on
    the low side, so the scale-up on the high one)."""
    overload = obs.overload
    if overload is None or overload.seconds <= 0:
        return None
    if overload.seconds < MEASURE_OVERLOAD_S and obs.lag_seconds <= policy.lag_tolerance_seconds:
        return None
    return overload


def saturated_rate(obs: Observation, policy: Policy) -> float | None:
    """Records one instance processes per busy second, if this observation saw the instances
    saturated: with a growing backlog and the instances at least `OVERLOAD_BUSY` busy, their
    records over their busy time then (at most the span: input waits, so a reading above it is
    the busy time's 1 s steps); or with every instance at least `SATURATED` busy over the
    window, their true rate."""
    overload = measured_overload(obs, policy)
    saturated = overload is not None and overload.busy_ratio >= OVERLOAD_BUSY
    if overload is not None and saturated and overload.processed_rate > 0:
        return overload.processed_rate / (obs.parallelism * min(1.0, overload.busy_ratio))
    if obs.instances and all(i.busy_ratio >= SATURATED for i in obs.instances):
        return true_rate(obs.instances)
    return None


def capacity_rate(
    obs: Observation, policy: Policy, measured: float | None, loaded: Capacity | None
) -> tuple[float | None, Capacity | None]:
    """The true rate to decide with, and the one to remember: the rate measured saturated
    (`saturated_rate`); otherwise the rate measured at the busiest load seen, this window's if
    its instances were at least as busy as the remembered one's (a rate measured below
    saturation understates capacity the more the lighter the load)."""
    saturated = saturated_rate(obs, policy)
    if saturated is not None:
        return saturated, Capacity(saturated, 1.0)
    if measured is None:  # nothing processed: a stall or no input, not a capacity
        return None, loaded
    busy = sum(i.busy_ratio for i in obs.instances) / len(obs.instances)
    if loaded is None or busy >= loaded.busy_ratio:
        return measured, Capacity(measured, busy)
    return loaded.rate, loaded


def decide(
    obs: Observation,
    policy: Policy,
    pending: PendingScaleDown | None,
    loaded: Capacity | None = None,
) -> Decision:
    """The decision for one observation, given the scale-down pending since earlier ones and
    the remembered rate (`Decision.loaded`)."""
    measured = true_rate(obs.instances)
    rate, remembered = capacity_rate(obs, policy, measured, loaded)
    action, parallelism, reason, kept = _verdict(obs, policy, pending, rate)
    act = action is not Action.HOLD and not policy.recommend_only
    if action is Action.SCALE_DOWN and act:
        kept = None
    behind = action is Action.SCALE_UP and falling_behind(obs, policy, rate)
    return Decision(action, parallelism, reason, act, kept, measured, rate, remembered, behind)


def falling_behind(obs: Observation, policy: Policy, rate: float | None) -> bool:
    """Whether the instances fall behind their input: the backlog grew in the newest interval
    (measured for long enough or not), the lag is beyond the tolerance, or the input arrives
    faster than they process fully busy (a step up seen at once, before the backlog's growth
    is)."""
    arriving = max(obs.input_rate, obs.recent_input_rate or 0.0)
    saturated = rate is not None and arriving > held(obs.parallelism, obs.partitions) * rate
    return obs.overload is not None or saturated or obs.lag_seconds > policy.lag_tolerance_seconds


_Verdict = tuple[Action, int, str, PendingScaleDown | None]


def _verdict(
    obs: Observation, policy: Policy, pending: PendingScaleDown | None, rate: float | None
) -> _Verdict:
    high = max(1, min(policy.max_parallelism, obs.partitions))
    low = max(1, min(policy.min_parallelism, high))
    current = obs.parallelism
    if not low <= current <= high:
        bounded = min(max(current, low), high)
        action = Action.SCALE_UP if bounded > current else Action.SCALE_DOWN
        return action, bounded, f"parallelism {current} is outside [{low}, {high}]", None
    if obs.last_rescale_at is not None:
        since = obs.at - obs.last_rescale_at
        if since < policy.stabilization_seconds:
            return Action.HOLD, current, f"stabilizing: {since:.0f}s since the last rescale", None
    if rate is None:
        if obs.input_rate > 0 or obs.lag_records > 0:
            return Action.HOLD, current, "no records processed in the metric window", None
        return _scale_down(obs, policy, pending, low, fits=True, why="no input and no lag")

    growing = obs.overload
    tolerated = obs.lag_seconds <= policy.lag_tolerance_seconds
    if growing is not None and growing.seconds < MEASURE_OVERLOAD_S and tolerated:
        why = f"the backlog grows: measuring the load since it began ({growing.seconds:.0f}s)"
        return Action.HOLD, current, why, pending  # a blip at a light load keeps the delay
    capacity = rate * policy.target_utilization
    partitions = obs.partitions
    steady = instances_for(obs.input_rate / capacity, partitions)
    measured = measured_overload(obs, policy)
    if measured is not None:  # since the backlog began to grow: the load after a step
        arriving, seen = measured.input_rate, f" over the {measured.seconds:.0f}s it grew"
    else:  # a step up counts at once
        arriving, seen = max(obs.input_rate, obs.recent_input_rate or 0.0), ""
    overload = min(1.0, policy.target_utilization * (1 + policy.overload_margin))
    overloaded = arriving > held(current, partitions) * rate * overload
    per_instance = f"{rate:.0f} records per busy second per instance"
    if overloaded or not tolerated:
        backlog_rate = obs.lag_records / policy.lag_tolerance_seconds
        rising = instances_for(arriving / capacity, partitions)
        wanted = max(rising, instances_for((arriving + backlog_rate) / rate, partitions))
        why = (
            f"input {arriving:.0f}/s{seen} and lag {obs.lag_records} records "
            f"({obs.lag_seconds:.0f}s) need {wanted} instances at {per_instance} and "
            f"{policy.target_utilization:.0%} target utilization"
        )
        if min(wanted, high) > current:
            return Action.SCALE_UP, min(wanted, high), why, None
        if wanted > current:
            return Action.HOLD, current, f"{why}; maxParallelism allows {high}", None
        return Action.HOLD, current, f"lag drains within the tolerance at {current}", None
    with_headroom = instances_for(obs.input_rate / (capacity * (1 - policy.headroom)), partitions)
    why = (
        f"input {obs.input_rate:.0f}/s needs {max(steady, low)} instances at {per_instance} "
        f"and {policy.target_utilization:.0%} target utilization"
    )
    if steady > current:
        margin = f"{policy.overload_margin:.0%} overload margin"
        return Action.HOLD, current, f"{why}; {current} runs within the {margin}", None
    return _scale_down(obs, policy, pending, max(steady, low), with_headroom < current, why)


def _scale_down(
    obs: Observation,
    policy: Policy,
    pending: PendingScaleDown | None,
    target: int,
    fits: bool,
    why: str,
) -> _Verdict:
    """Scale down to `target` if it fits with headroom, no instance is busier than the target
    utilization, and lower parallelisms were recommended for the whole delay."""
    current = obs.parallelism
    if target >= current:
        return Action.HOLD, current, f"{why}: {current} keeps up", None
    if not fits:
        return Action.HOLD, current, f"{why}, but not with {policy.headroom:.0%} headroom", None
    busiest = max((instance.busy_ratio for instance in obs.instances), default=0.0)
    if busiest > policy.target_utilization:
        return Action.HOLD, current, f"{why}, but an instance is {busiest:.0%} busy", None
    # none, or from another placement, or a lower one (its delay starts over: one scale-down)
    if pending is None or pending.parallelism >= current or target < pending.parallelism:
        pending = PendingScaleDown(obs.at, target)
    kept = PendingScaleDown(pending.since, max(pending.parallelism, target))
    highest = kept.parallelism
    left = policy.scale_down_delay_seconds - (obs.at - kept.since)
    if left > 0:
        return Action.HOLD, highest, f"{why}; scale-down to {highest} in {left:.0f}s", kept
    return Action.SCALE_DOWN, highest, why, kept
