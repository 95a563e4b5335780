"""The autoscaler's decision fed through its metric window, as the operator feeds it: readings
every 2 s of each instance's cumulative busy seconds and processed records, the input's end
offset and the lag, from a fluid model of a query under a step load.

The model's instances process `capacity` records per busy second, but report a share `fixed`
of their idle time as busy (a poll's fixed cost, which a saturated instance's large batches
make negligible), so the true rate they report below saturation understates their capacity,
as the workers' does. A rescale takes effect at once with new pods (the window starts
over) and starts the stabilization window.
"""

from dataclasses import dataclass, field, replace

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from streamshift_operator.autoscaler.decision import (
    MEASURE_OVERLOAD_S,
    Action,
    Decision,
    decide,
    held,
)
from streamshift_operator.autoscaler.inputs import (
    Capacity,
    InstanceLoad,
    Observation,
    Overload,
    PendingScaleDown,
    Policy,
)
from streamshift_operator.autoscaler.window import Reading, Window

READ_EVERY_S = 2.0
PARTITIONS = 12  # 1, 2, 3, 4 and 6 instances read as many partitions each
POLICY = Policy(
    min_parallelism=1,
    max_parallelism=PARTITIONS,
    target_utilization=0.6,
    lag_tolerance_seconds=10,
    stabilization_seconds=20,
    scale_down_delay_seconds=20,
)
WINDOW_S = 10.0


@dataclass
class Query:
    capacity: float
    fixed: float
    policy: Policy
    window_s: float = WINDOW_S
    parallelism: int = 1
    now: float = 0.0
    backlog: float = 0.0
    end: float = 0.0
    epoch: int = 0
    counters: dict[str, tuple[float, float]] = field(default_factory=dict)
    window: Window = field(default_factory=Window)
    last_rescale_at: float | None = None
    pending: PendingScaleDown | None = None
    loaded: Capacity | None = None
    rescales: list[tuple[float, int, int, Observation, Decision]] = field(default_factory=list)
    lags: list[tuple[float, float]] = field(default_factory=list)
    """(time, lag in seconds of input) after each reading."""
    ramp: tuple[float, float] = (1.0, 0.0)
    """With a backlog, the instances process this share of their capacity at first, fully
    busy, all of it this many seconds later (a worker's records per busy second grow some
    seconds into a backlog)."""
    behind_since: float | None = None

    def __post_init__(self) -> None:
        self._new_pods()

    def _new_pods(self) -> None:
        self.counters = {f"e{self.epoch}-{i}": (0.0, 0.0) for i in range(self.parallelism)}
        self.window = Window()

    def read(self, rate: float) -> None:
        """`READ_EVERY_S` seconds at input `rate`, then a reading and the decision on it."""
        dt = READ_EVERY_S
        self.now += dt
        self.end += rate * dt
        if self.backlog <= 0:
            self.behind_since = None
        elif self.behind_since is None:
            self.behind_since = self.now - dt
        share, ramp_s = self.ramp
        if self.behind_since is not None and ramp_s > 0:
            share = min(1.0, share + (1 - share) * (self.now - self.behind_since) / ramp_s)
        rate_now = self.capacity * (share if self.behind_since else 1.0)
        can = held(self.parallelism, PARTITIONS) * rate_now * dt
        processed = min(self.backlog + rate * dt, can)
        self.backlog = max(0.0, self.backlog + rate * dt - processed)
        counters = {}
        for i, (pod, (b, n)) in enumerate(self.counters.items()):
            each = processed * reads(i, self.parallelism) / PARTITIONS
            working = min(dt, each / rate_now)
            counters[pod] = (b + working + self.fixed * (dt - working), n + each)
        self.counters = counters
        self.lags.append((self.now, self.backlog / rate if rate > 0 else 0.0))
        reading = Reading(
            self.now,
            {pod: (b, round(n)) for pod, (b, n) in self.counters.items()},
            {"in:0": round(self.end)},
            round(self.backlog),
        )
        self.window.add(reading, self.window_s)
        obs = self.window.observation(self.window_s, PARTITIONS, self.last_rescale_at)
        if obs is None:
            return
        decision = decide(obs, self.policy, self.pending, self.loaded)
        self.pending, self.loaded = decision.pending, decision.loaded
        if decision.act:
            self.rescales.append((self.now, self.parallelism, decision.parallelism, obs, decision))
            self.parallelism, self.last_rescale_at = decision.parallelism, self.now
            self.epoch += 1
            self._new_pods()

    def run(self, rate: float, seconds: float) -> None:
        for _ in range(round(seconds / READ_EVERY_S)):
            self.read(rate)


def reads(instance: int, parallelism: int) -> int:
    """The partitions instance `instance` of `parallelism` reads (as evenly as whole partitions
    allow)."""
    return PARTITIONS // parallelism + (1 if instance < PARTITIONS % parallelism else 0)


def fewest(rate: float, capacity: float, lag: float, policy: Policy) -> int:
    """The fewest instances that keep up with `rate` at the target utilization and drain `lag`
    records within the tolerance at full utilization, the busiest reading `ceil(P / p)` of the
    partitions."""
    keep_up = rate / (capacity * policy.target_utilization)
    drain = (rate + lag / policy.lag_tolerance_seconds) / capacity
    return min(p for p in range(1, PARTITIONS + 1) if held(p, PARTITIONS) >= max(keep_up, drain))


def near_whole(x: float) -> bool:
    return abs(x - round(x)) < 0.02


@settings(max_examples=150, deadline=None)
@given(
    st.floats(min_value=1_000, max_value=50_000),
    st.floats(min_value=0.0, max_value=0.3),
    st.floats(min_value=0.2, max_value=0.5),
    st.floats(min_value=1.3, max_value=6.0),
    st.sampled_from([5.0, 10.0, 30.0]),
)
def test_a_step_is_sized_once_to_the_fewest_that_keep_up_and_drain_and_back_after_the_delay(
    capacity: float, fixed: float, low_share: float, high_share: float, window_s: float
) -> None:
    """Low: `low_share` of one instance's target; high: `high_share` instances' capacity; any
    metric window (a 5 s one is shorter than the overload is measured over)."""
    p = POLICY
    low, high = low_share * capacity * p.target_utilization, high_share * capacity
    assume(not near_whole(high / (capacity * p.target_utilization)))
    query = Query(capacity, fixed, p, window_s)
    query.run(low, 60)
    assert query.rescales == []  # a light load that understates the capacity stays at 1
    step_up = query.now
    query.run(high, 120)
    assert len(query.rescales) == 1
    at, _, to, obs, decision = query.rescales[0]
    assume(not near_whole((high + obs.lag_records / p.lag_tolerance_seconds) / capacity))
    assert to == min(PARTITIONS, fewest(high, capacity, obs.lag_records, p)), decision.reason
    # the interval it began in, then measured for MEASURE_OVERLOAD_S (or less, the lag beyond
    # the tolerance)
    assert at - step_up <= 2 * READ_EVERY_S + MEASURE_OVERLOAD_S
    assert all(lag < p.lag_tolerance_seconds for t, lag in query.lags if t >= step_up + 60)
    step_down = query.now
    query.run(low, 120)
    assert len(query.rescales) == 2
    down_at, _, down_to, _, _ = query.rescales[1]
    assert down_at - step_down >= p.scale_down_delay_seconds and down_to == 1
    assert all(lag == 0 for t, lag in query.lags if t > step_down)


def test_the_overload_is_measured_after_the_interval_it_began_in() -> None:
    """The benchmark's step: one 100m q8 worker at 31.6K records per busy second, reporting
    21.5K at 9.5K/s; the input steps to 49.2K/s. Seen 2 s later the backlog has just begun
    to grow (hold, measuring); `MEASURE_OVERLOAD_S` after that it scales to 3, not 2."""
    capacity, low, high = 31_600.0, 9_470.0, 49_200.0
    load = low / capacity
    fixed = (low / 21_500 - load) / (1 - load)  # the idle share that reads 21.5K at 9.5K/s
    query = Query(capacity, fixed, POLICY)
    query.run(low, 30)
    assert query.loaded is not None and query.loaded.rate < 22_000
    query.read(high)
    obs = query.window.observation(WINDOW_S, PARTITIONS, None)
    assert obs is not None and obs.overload is not None and obs.overload.seconds == 0
    for _ in range(round(MEASURE_OVERLOAD_S / READ_EVERY_S) - 1):
        query.read(high)
    assert query.rescales == []
    query.read(high)
    assert len(query.rescales) == 1
    _, _, to, obs, decision = query.rescales[0]
    assert obs.overload is not None
    assert obs.overload.input_rate == high and round(obs.overload.processed_rate) == capacity
    assert to == 3 and decision.action is Action.SCALE_UP
    assert decision.loaded is not None and round(decision.loaded.rate) == capacity


def test_instances_whose_rate_grows_into_a_backlog_are_sized_by_its_newer_half() -> None:
    """The workers process some 70% of their capacity in the first seconds behind a step, all
    of it about 12 s later: a step to 2.6 instances' target load is sized to 3 by the rate of
    the overload's newer half, where the whole overload's average asks for 4."""
    capacity = 40_000.0
    query = Query(capacity, 0.1, POLICY, ramp=(0.7, 12.0))
    query.run(0.3 * capacity, 30)
    query.run(2.6 * capacity * POLICY.target_utilization, 60)
    assert len(query.rescales) == 1
    _, _, to, obs, decision = query.rescales[0]
    assert obs.overload is not None and obs.overload.processed_rate > 0.85 * capacity
    assert to == 3, decision.reason


def test_a_backlog_that_just_began_to_grow_holds_and_keeps_a_pending_scale_down() -> None:
    """One interval of falling behind (a burst of a light load, or the start of a step): the
    decision waits to measure it, and a scale-down waiting out its delay keeps waiting."""
    pending = PendingScaleDown(since=100.0, parallelism=1)
    obs = Observation(
        at=110.0,
        parallelism=2,
        partitions=PARTITIONS,
        input_rate=80.0,
        lag_records=40,
        lag_seconds=0.5,
        instances=(InstanceLoad(0.5, 400, 10.0), InstanceLoad(0.5, 400, 10.0)),
        overload=Overload(0.0, 0.0, 0.0, 0.0),
    )
    decision = decide(obs, POLICY, pending, Capacity(30_000.0, 0.5))
    assert (decision.action, decision.parallelism, decision.pending) == (Action.HOLD, 2, pending)
    assert "measuring the load" in decision.reason
    calm = decide(
        replace(obs, overload=None, at=125.0), POLICY, decision.pending, Capacity(30_000.0, 0.5)
    )
    assert (calm.action, calm.parallelism) == (Action.SCALE_DOWN, 1)


def test_instances_behind_but_not_always_busy_are_sized_by_their_records_per_busy_second() -> None:
    """Just after the benchmark's step the 100m worker processed 27K records/s, waiting on
    fetches between (a deep backlog gave 33K/s): DS2's true rate is per busy second."""
    obs = Observation(
        at=40.0,
        parallelism=1,
        partitions=PARTITIONS,
        input_rate=30_000.0,
        lag_records=150_000,
        lag_seconds=3.0,
        instances=(InstanceLoad(8.0, 250_000, 10.0),),
        overload=Overload(MEASURE_OVERLOAD_S, 52_800.0, 27_000.0, 0.8),
    )
    decision = decide(obs, POLICY, None, Capacity(21_500.0, 0.5))
    assert decision.loaded == Capacity(27_000.0 / 0.8, 1.0)
    assert (decision.action, decision.parallelism, decision.behind) == (Action.SCALE_UP, 3, True)
    # busier than the span (the busy time's 1 s steps): records per second
    busier = replace(obs, overload=Overload(MEASURE_OVERLOAD_S, 52_800.0, 27_000.0, 1.15))
    assert decide(busier, POLICY, None).loaded == Capacity(27_000.0, 1.0)


def test_a_lag_beyond_the_tolerance_is_sized_by_the_overload_measured_so_far() -> None:
    """With the lag already beyond the tolerance there is no time to measure the overload for
    `MEASURE_OVERLOAD_S`: the step is sized by what was measured since the backlog began to
    grow (50K records/s arriving, 25K processed saturated), not by the window's average input,
    which still holds the load before the step."""
    obs = Observation(
        at=40.0,
        parallelism=1,
        partitions=PARTITIONS,
        input_rate=20_000.0,
        lag_records=240_000,
        lag_seconds=12.0,
        instances=(InstanceLoad(10.0, 200_000, 10.0),),
        overload=Overload(MEASURE_OVERLOAD_S / 2, 50_000.0, 25_000.0, 1.0),
    )
    decision = decide(obs, POLICY, None)
    assert decision.loaded == Capacity(25_000.0, 1.0)
    assert (decision.action, decision.parallelism, decision.behind) == (Action.SCALE_UP, 4, True)
    assert "over the 5s it grew" in decision.reason
    tolerated = replace(obs, lag_seconds=POLICY.lag_tolerance_seconds)
    assert decide(tolerated, POLICY, None).action is Action.HOLD  # still measuring
