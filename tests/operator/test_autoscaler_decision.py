"""The autoscaler's pure decision, driven by a fluid model of a query under a moving load.

The model: each instance processes `capacity` records per busy second; records that arrive
faster than the instances process them wait in the backlog (the lag). Each tick is one metric
window; a rescale takes effect at once and starts the stabilization window.
"""

import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from streamshift_operator.autoscaler.decision import (
    Action,
    Decision,
    decide,
    held,
    instances_for,
    true_rate,
)
from streamshift_operator.autoscaler.inputs import (
    Capacity,
    InstanceLoad,
    Observation,
    PendingScaleDown,
    Policy,
)
from streamshift_operator.autoscaler.window import Reading, Window

TICK = 5.0
PARTITIONS = 12  # 1, 2, 3, 4 and 6 instances read as many partitions each
COUNT_ERROR = 0.005
"""How far the true rate the decision sees may be off the model's: processed counts are whole
records (at least 500 per instance and window here), so a load exactly on a band's edge may
land on either side of it."""


@dataclass
class Query:
    """A query in the fluid model, rescaled by the autoscaler's decisions."""

    capacity: float
    policy: Policy
    parallelism: int
    noise: Callable[[], float] = lambda: 1.0
    backlog: float = 0.0
    now: float = 0.0
    last_rescale_at: float | None = None
    pending: PendingScaleDown | None = None
    loaded: Capacity | None = None
    rescales: list[tuple[float, int, int]] = field(default_factory=list)
    lag_seconds: list[float] = field(default_factory=list)
    decisions: list[tuple[Observation, Decision]] = field(default_factory=list)

    def tick(self, rate: float) -> Decision:
        """One metric window at input `rate`, then the decision on it (acted on)."""
        self.now += TICK
        p = self.parallelism
        processed = min(self.backlog + rate * TICK, held(p, PARTITIONS) * self.capacity * TICK)
        self.backlog += rate * TICK - processed
        if self.backlog < 1e-6:  # what float rounding leaves of a drained backlog
            self.backlog = 0.0
        drain = rate if rate > 0 else p * self.capacity
        lag_seconds = self.backlog / drain
        self.lag_seconds.append(lag_seconds)
        shares = [reads(i, p) / PARTITIONS for i in range(p)]  # of the partitions
        obs = Observation(
            at=self.now,
            parallelism=p,
            partitions=PARTITIONS,
            input_rate=rate * self.noise(),
            lag_records=round(self.backlog),
            lag_seconds=lag_seconds,
            instances=tuple(
                InstanceLoad(
                    processed * share / self.capacity * self.noise(),
                    round(processed * share * self.noise()),
                    TICK,
                )
                for share in shares
            ),
            last_rescale_at=self.last_rescale_at,
        )
        decision = decide(obs, self.policy, self.pending, self.loaded)
        self.decisions.append((obs, decision))
        self.pending, self.loaded = decision.pending, decision.loaded
        if decision.act:
            self.rescales.append((self.now, p, decision.parallelism))
            self.parallelism = decision.parallelism
            self.last_rescale_at = self.now
        return decision

    def run(self, rate: float, ticks: int) -> None:
        for _ in range(ticks):
            self.tick(rate)


def policy(
    utilization: float = 0.8, lo: int = 1, hi: int = PARTITIONS, recommend: bool = False
) -> Policy:
    return Policy(
        min_parallelism=lo,
        max_parallelism=hi,
        target_utilization=utilization,
        lag_tolerance_seconds=60,
        stabilization_seconds=30,
        scale_down_delay_seconds=120,
        recommend_only=recommend,
    )


def reads(instance: int, parallelism: int) -> int:
    """The partitions instance `instance` of `parallelism` reads (spread as evenly as whole
    partitions allow)."""
    return PARTITIONS // parallelism + (1 if instance < PARTITIONS % parallelism else 0)


def steady(rate: float, capacity: float, utilization: float) -> int:
    return instances_for(rate / (capacity * utilization), PARTITIONS)


def band_bottom(rate: float, capacity: float, p: Policy) -> int:
    """The lowest parallelism a steady `rate` is left at (overloaded by at most the margin)."""
    return instances_for(rate * (1 - COUNT_ERROR) / (capacity * overload(p)), PARTITIONS)


def overload(p: Policy) -> float:
    return min(1.0, p.target_utilization * (1 + p.overload_margin))


def band_top(rate: float, capacity: float, p: Policy) -> int:
    """The highest parallelism a steady `rate` is left at (the top of the hysteresis band)."""
    load = rate * (1 + COUNT_ERROR) / (capacity * p.target_utilization * (1 - p.headroom))
    return instances_for(load, PARTITIONS)


capacities = st.floats(min_value=100, max_value=5000)
utilizations = st.floats(min_value=0.5, max_value=1.0)
# below 100%: a target of 100% sits on the edge where a count's rounding decides
targets = st.floats(min_value=0.5, max_value=0.95)
loads = st.floats(min_value=0.05, max_value=6.0)  # instance capacities: the partitions at 50%


@settings(max_examples=200, deadline=None)
@given(capacities, targets, loads)
def test_a_steady_load_at_its_parallelism_is_never_rescaled(
    capacity: float, utilization: float, load: float
) -> None:
    rate = load * capacity
    query = Query(capacity, policy(utilization), steady(rate, capacity, utilization))
    query.run(rate, 200)
    assert query.rescales == []
    assert max(query.lag_seconds) == 0


@settings(max_examples=200, deadline=None)
@given(capacities, targets, loads, st.integers(1, PARTITIONS))
def test_a_steady_load_from_any_start_is_rescaled_at_most_once_into_the_band(
    capacity: float, utilization: float, load: float, start: int
) -> None:
    rate = load * capacity
    p = policy(utilization)
    query = Query(capacity, p, start)
    query.run(rate, 200)
    assert len(query.rescales) <= 1
    # below the band only by the metrics' rounding at 100% utilization: then the lag decides
    assert band_bottom(rate, capacity, p) <= query.parallelism or (
        query.lag_seconds[-1] <= p.lag_tolerance_seconds
    )
    assert query.parallelism <= max(start, band_top(rate, capacity, p))
    if query.rescales and query.rescales[0][2] < start:
        assert query.rescales[0][0] >= p.scale_down_delay_seconds


@settings(max_examples=200, deadline=None)
@given(capacities, targets, loads, st.floats(min_value=0.0, max_value=0.04), st.integers(0, 2**32))
def test_noisy_metrics_of_a_steady_load_never_flap(
    capacity: float, utilization: float, load: float, noise: float, seed: int
) -> None:
    rng = random.Random(seed)
    rate = load * capacity
    start = steady(rate, capacity, utilization)
    query = Query(capacity, policy(utilization), start, lambda: 1 + rng.uniform(-noise, noise))
    query.run(rate, 300)
    directions = {to > origin for _, origin, to in query.rescales}
    assert len(query.rescales) <= 1 and len(directions) <= 1


@settings(max_examples=200, deadline=None)
@given(capacities, targets, loads, loads)
def test_a_step_up_and_back_rescales_once_each_way_and_catches_up(
    capacity: float, utilization: float, low: float, high: float
) -> None:
    low, high = sorted((low, high))
    p = policy(utilization)
    start = steady(low * capacity, capacity, utilization)
    query = Query(capacity, p, start)
    query.run(low * capacity, 30)
    query.run(high * capacity, 100)
    ups = query.rescales
    assert [to > origin for _, origin, to in ups] == [True] * len(ups)
    overloaded = high / (held(start, PARTITIONS) * overload(p))
    rises = overloaded > 1 + COUNT_ERROR and start < PARTITIONS  # not beyond the partitions
    assert len(ups) == 1 if rises else len(ups) <= 1
    assert len(ups) == 0 if overloaded < 1 - COUNT_ERROR else len(ups) <= 1
    assert query.lag_seconds[-1] == 0
    assert max(query.lag_seconds) <= p.lag_tolerance_seconds
    step_down_at = query.now
    query.run(low * capacity, 100)
    downs = query.rescales[len(ups) :]
    assert len(downs) <= 1 and all(to < origin for _, origin, to in downs)
    assert all(at - step_down_at >= p.scale_down_delay_seconds for at, _, _ in downs)
    assert band_bottom(low * capacity, capacity, p) <= query.parallelism
    assert query.parallelism <= max(start, band_top(low * capacity, capacity, p))


@settings(max_examples=100, deadline=None)
@given(capacities, utilizations, st.floats(min_value=1.0, max_value=6.0))
def test_a_sine_load_is_followed_without_lag_and_without_rescale_storms(
    capacity: float, utilization: float, peak: float
) -> None:
    p = policy(utilization)
    period = 1800.0
    query = Query(capacity, p, 1)

    def rate(t: float) -> float:
        return capacity * peak * (0.55 + 0.45 * math.sin(2 * math.pi * t / period))

    for _ in range(int(3 * period / TICK)):
        query.tick(rate(query.now + TICK))
    times = [at for at, _, _ in query.rescales]
    assert all(b - a >= p.stabilization_seconds for a, b in itertools.pairwise(times))
    assert max(query.lag_seconds) <= p.lag_tolerance_seconds
    assert len(query.rescales) <= 3 * 2 * steady(capacity * peak, capacity, utilization)


def busy_job(busy: float, input_rate: float, parallelism: int = 4) -> Observation:
    return Observation(
        at=10_000.0,
        parallelism=parallelism,
        partitions=PARTITIONS,
        input_rate=input_rate,
        lag_records=0,
        lag_seconds=0.0,
        instances=tuple(InstanceLoad(busy * TICK, 1000, TICK) for _ in range(parallelism)),
    )


@settings(max_examples=300, deadline=None)
@given(utilizations, st.floats(min_value=0.0, max_value=1.0), st.floats(0.0, 1.0))
def test_a_job_busier_than_the_target_is_never_scaled_down(
    utilization: float, excess: float, input_share: float
) -> None:
    busy = utilization + (1 - utilization) * excess
    assume(busy > utilization)
    long_pending = PendingScaleDown(since=0.0, parallelism=1)
    obs = busy_job(busy, input_share * 10)
    assert decide(obs, policy(utilization), long_pending).action is not Action.SCALE_DOWN


def test_a_fully_busy_job_whose_input_shrinks_is_not_scaled_down_until_it_caught_up() -> None:
    """FLINK-38538: the input drops while the job is still 100% busy on its backlog.

    The lag (400 s of input) is within this policy's tolerance and there is no scale-down delay:
    only the busy instances keep the job from being scaled down while it catches up.
    """
    capacity = 1000.0
    p = replace(policy(0.8), lag_tolerance_seconds=600, scale_down_delay_seconds=0)
    query = Query(capacity, p, 4, backlog=200_000.0)
    query.run(500.0, 20)  # 100 s: the backlog drains at 3,500/s for ~57 s
    drained = next(i for i, lag in enumerate(query.lag_seconds) if lag == 0)
    assert all(obs.instances[0].busy_ratio == 1.0 for obs, _ in query.decisions[:drained])
    assert [(origin, to) for _, origin, to in query.rescales] == [(4, 1)]
    assert query.rescales[0][0] == (drained + 1) * TICK


def test_lag_beyond_the_tolerance_scales_up_at_once_to_drain_it_within_the_tolerance() -> None:
    obs = Observation(
        at=100.0,
        parallelism=2,
        partitions=PARTITIONS,
        input_rate=1000.0,
        lag_records=120_000,
        lag_seconds=120.0,
        instances=(InstanceLoad(5.0, 5000, 5.0), InstanceLoad(5.0, 5000, 5.0)),
    )
    decision = decide(obs, policy(0.8), None)
    # 1,000/s of input plus 120,000 records in 60 s at 1,000 per busy second: 3 instances
    assert (decision.action, decision.parallelism, decision.act) == (Action.SCALE_UP, 3, True)
    assert "lag 120000 records" in decision.reason


def test_a_dip_shorter_than_the_scale_down_delay_does_not_scale_down() -> None:
    capacity = 1000.0
    p = policy(0.8)
    query = Query(capacity, p, 3)
    query.run(2000.0, 20)
    query.run(500.0, int(p.scale_down_delay_seconds / TICK) - 1)
    query.run(2000.0, 20)
    assert query.rescales == []


def test_no_decision_acts_within_the_stabilization_window() -> None:
    obs = busy_job(1.0, 100_000.0)
    recent = Observation(**{**obs.__dict__, "last_rescale_at": obs.at - 29})
    assert decide(recent, policy(), None).action is Action.HOLD
    later = Observation(**{**obs.__dict__, "last_rescale_at": obs.at - 30})
    assert decide(later, policy(), None).action is Action.SCALE_UP


observations = st.builds(
    Observation,
    at=st.floats(0, 1e6),
    parallelism=st.integers(1, 32),
    partitions=st.integers(1, 32),
    input_rate=st.floats(0, 1e6),
    lag_records=st.integers(0, 10**8),
    lag_seconds=st.floats(0, 1e4),
    instances=st.lists(
        st.builds(InstanceLoad, st.floats(0, 10), st.integers(0, 10**6), st.just(10.0)),
        max_size=32,
    ).map(tuple),
    last_rescale_at=st.none() | st.floats(0, 1e6),
)
pendings = st.none() | st.builds(PendingScaleDown, st.floats(0, 1e6), st.integers(1, 32))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.large_base_example])
@given(observations, st.integers(1, 32), st.integers(1, 32), utilizations, pendings)
def test_the_recommendation_stays_within_the_bounds_and_the_partitions(
    obs: Observation, lo: int, hi: int, utilization: float, pending: PendingScaleDown | None
) -> None:
    lo, hi = sorted((lo, hi))
    decision = decide(obs, policy(utilization, lo, hi), pending)
    top = min(hi, obs.partitions)
    assert min(lo, top) <= decision.parallelism <= top
    assert decision.act == (decision.action is not Action.HOLD)
    if decision.act:
        assert decision.parallelism != obs.parallelism
    elif decision.pending is None:
        assert decision.parallelism == obs.parallelism


def test_a_parallelism_outside_new_bounds_moves_into_them_at_once() -> None:
    obs = busy_job(0.5, 100.0, parallelism=6)
    decision = decide(obs, policy(0.8, lo=1, hi=4), None)
    assert (decision.action, decision.parallelism) == (Action.SCALE_DOWN, 4)
    decision = decide(busy_job(0.5, 100.0, parallelism=1), policy(0.8, lo=2, hi=4), None)
    assert (decision.action, decision.parallelism) == (Action.SCALE_UP, 2)


def test_a_load_beyond_the_maximum_holds_at_the_maximum_and_says_so() -> None:
    decision = decide(busy_job(1.0, 1e6, parallelism=4), policy(0.8, hi=4), None)
    assert (decision.action, decision.parallelism) == (Action.HOLD, 4)
    assert "maxParallelism allows 4" in decision.reason


@settings(max_examples=100, deadline=None)
@given(capacities, utilizations, loads, loads)
def test_recommend_only_recommends_what_act_would_do_and_never_acts(
    capacity: float, utilization: float, low: float, high: float
) -> None:
    acting = Query(capacity, policy(utilization), steady(low * capacity, capacity, utilization))
    watching = Query(capacity, policy(utilization, recommend=True), acting.parallelism)
    for query in (acting, watching):
        query.run(low * capacity, 10)
        query.run(high * capacity, 10)
        query.run(low * capacity, 60)
    assert watching.rescales == []
    assert all(not d.act for _, d in watching.decisions)
    first_act = next((i for i, (_, d) in enumerate(acting.decisions) if d.act), None)
    if first_act is not None:
        assert watching.decisions[first_act][1].parallelism == acting.rescales[0][2]


def test_the_true_rate_counts_busy_seconds_not_wall_seconds() -> None:
    # two instances, each busy a quarter of a 10 s window, 2,500 records each
    instances = (InstanceLoad(2.5, 2500, 10.0), InstanceLoad(2.5, 2500, 10.0))
    assert true_rate(instances) == 1000.0
    assert true_rate((InstanceLoad(0.0, 0, 10.0),)) is None


def test_a_load_just_over_the_target_holds_within_the_overload_margin() -> None:
    # 2 instances at 1,000 records per busy second: 1,640/s is 102.5% of their 80% target
    obs = Observation(
        at=100.0,
        parallelism=2,
        partitions=PARTITIONS,
        input_rate=1640.0,
        lag_records=0,
        lag_seconds=0.0,
        instances=(InstanceLoad(4.1, 4100, 5.0), InstanceLoad(4.1, 4100, 5.0)),
    )
    decision = decide(obs, policy(0.8), None)
    assert (decision.action, decision.parallelism) == (Action.HOLD, 2)
    assert "needs 3 instances" in decision.reason and "10% overload margin" in decision.reason


def light(rate: float, per_poll: float, parallelism: int) -> Observation:
    """`rate` records/s spread over `parallelism` instances, each processing 1M records per
    busy second plus `per_poll` busy seconds for each of 100 polls a second (fixed costs)."""
    records = rate * TICK / parallelism
    busy = records / 1e6 + 100 * TICK * per_poll
    return Observation(
        at=1000.0,
        parallelism=parallelism,
        partitions=PARTITIONS,
        input_rate=rate,
        lag_records=0,
        lag_seconds=0.0,
        instances=tuple(InstanceLoad(busy, round(records), TICK) for _ in range(parallelism)),
    )


def test_below_saturation_the_busiest_loads_rate_is_used_and_a_saturated_one_replaces_it() -> None:
    # 50 records/s on 2 instances, each poll costing 100 us: busy 1%, 2,500 records per busy
    # second measured, against 1M when busy: 50/s would need 2 instances at 2.5% target
    obs, low_target = light(50.0, 1e-4, 2), replace(policy(0.025), scale_down_delay_seconds=0)
    blind = decide(obs, low_target, None)
    assert blind.true_rate is not None and blind.true_rate < 3000
    assert blind.action is Action.HOLD
    assert blind.loaded == Capacity(blind.true_rate, obs.instances[0].busy_ratio)
    # remembered from a busier load: used, and kept, whether above or below what is measured
    for rate in (1e6, 1_000.0):
        remembered = decide(obs, low_target, None, Capacity(rate, 0.5))
        assert remembered.decided_rate == rate and remembered.loaded == Capacity(rate, 0.5)
    assert decide(obs, low_target, None, Capacity(1e6, 0.5)).parallelism == 1
    # remembered from a lighter load: this window's rate replaces it
    lighter = decide(obs, low_target, None, Capacity(1e6, 0.001))
    assert lighter.decided_rate == lighter.true_rate and lighter.loaded is not None
    assert lighter.loaded.rate == lighter.true_rate
    # saturated (95% busy): the measured rate is used and remembered, even if lower
    saturated = light(1_900_000.0, 1e-6, 2)
    decision = decide(saturated, low_target, None, Capacity(1e7, 1.0))
    assert decision.true_rate is not None and decision.true_rate < 1e6
    assert decision.loaded == Capacity(decision.true_rate, 1.0)
    assert decision.decided_rate == decision.true_rate


def test_a_light_window_that_overstates_the_rate_is_replaced_by_a_busier_one() -> None:
    """A light window whose busy time read low (a CI run of 25 Nov remembered 262K records per
    busy second against 82-105K measured, and held a query 24% busy against a 10% target at
    one instance): the next busier window's rate replaces it."""
    target = replace(policy(0.1), stabilization_seconds=0)
    overstated = decide(light(20_000.0, 0.0, 1), target, None)  # 1M per busy second, 2% busy
    assert overstated.action is Action.HOLD and overstated.loaded is not None
    # the step: 21.4K records/s at 89K records per busy second, 24% busy
    step = Observation(
        at=1000.0,
        parallelism=1,
        partitions=PARTITIONS,
        input_rate=21_400.0,
        lag_records=0,
        lag_seconds=0.0,
        instances=(InstanceLoad(0.24 * TICK, round(21_400 * TICK), TICK),),
    )
    decision = decide(step, target, None, overstated.loaded)
    assert (decision.action, decision.parallelism) == (Action.SCALE_UP, 3), decision.reason


def test_a_step_up_is_sized_by_the_input_after_it_not_the_windows_average() -> None:
    """The benchmark's step from 11.5K to 59.8K records/s was first seen as 16.3K/s over the
    window: the window's last quarter holds the new rate, and the scale-up takes it."""
    window = Window()
    load = {"w-0": (0.0, 0)}
    for second in range(0, 31, 2):  # 30 s window: 11.5K/s, then 59.8K/s from 24 s on
        arrived = 11_500 * min(second, 24) + 59_800 * max(0, second - 24)
        busy = float(min(second, 24)) * 0.5 + max(0, second - 24)
        load = {"w-0": (busy, arrived)}
        window.add(Reading(float(second), load, {"in:0": arrived}, 0), 30.0)
    obs = window.observation(30.0, PARTITIONS, None)
    assert obs is not None and obs.recent_input_rate is not None
    assert obs.input_rate == pytest.approx((11_500 * 24 + 59_800 * 6) / 30)
    assert obs.recent_input_rate == pytest.approx(59_800, rel=0.2)  # 24 s to 30 s, and before
    p = policy(0.6)
    averaged = Observation(obs.at, 1, PARTITIONS, obs.input_rate, 0, 0.0, obs.instances, None)
    assert decide(averaged, p, None).action is Action.HOLD  # the average alone: no step seen
    seen = decide(obs, p, None)
    assert seen.action is Action.SCALE_UP and seen.parallelism == 3
    rate = true_rate(obs.instances)
    assert rate is not None and seen.parallelism == math.ceil(59_800 / (rate * 0.6))


def test_a_step_up_seen_at_once_is_a_scale_up_of_instances_falling_behind() -> None:
    """bench-autoscaler 16:03: 10 s after a step to 70.3K records/s over one worker of 47.9K per
    busy second the backlog had not grown in the newest interval, and the scale-up taken at once
    was not marked behind, so `auto` ran UniMiCo, whose saturated origin then drained alone for
    104 s. Input beyond what the instances process fully busy is falling behind; a step up
    the instances still keep up with is not."""
    p = policy(0.6)
    busy = (InstanceLoad(9.8, 479_440, 10.0),)
    obs = Observation(100.0, 1, PARTITIONS, 70_300.0, 200_000, 3.0, busy, None)
    decision = decide(obs, p, None)
    assert (decision.action, decision.parallelism, decision.behind) == (Action.SCALE_UP, 3, True)
    within = replace(obs, input_rate=40_000.0, lag_records=0, lag_seconds=0.0)
    up = decide(within, p, None)
    assert (up.action, up.behind) == (Action.SCALE_UP, False)


@pytest.mark.parametrize(
    ("load", "partitions", "expected"),
    [(2.6, 4, 4), (2.0, 4, 2), (1.5, 4, 2), (1.0, 4, 1), (0.3, 4, 1), (5.0, 16, 6), (3.0, 12, 3)],
)
def test_the_busiest_instance_reads_at_most_its_share_of_the_partitions(
    load: float, partitions: int, expected: int
) -> None:
    assert instances_for(load, partitions) == expected
    assert held(expected, partitions) >= load
    assert expected == 1 or held(expected - 1, partitions) < load


def test_more_load_than_partitions_asks_for_what_it_needs_and_the_bounds_cap_it() -> None:
    assert instances_for(6.0, 4) == 6


def test_three_instances_over_four_partitions_hold_only_what_two_do() -> None:
    """bench-autoscaler at 70% target: 85.7K records/s over q8's 4 partitions, one worker
    47.1K per busy second flat out; 3 instances read 2, 1 and 1 partitions, and the one with 2
    was saturated in the sweep (busy 0.94) as 2 instances were. The decision asks for 4."""
    p = policy(0.7)
    saturated = (InstanceLoad(9.9, 466_000, 10.0),)
    obs = Observation(100.0, 1, 4, 85_700.0, 200_000, 2.3, saturated, None)
    decision = decide(obs, p, None)
    assert (decision.action, decision.parallelism) == (Action.SCALE_UP, 4), decision.reason
    assert held(3, 4) == held(2, 4) == 2.0
