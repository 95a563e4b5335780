"""The worker's load for the autoscaler: busy ratio, true rate, input rate and lag per partition
over a sliding window, and the Prometheus gauges that follow them."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from streamshift_engine.runtime.load import Load
from streamshift_engine.runtime.metrics import Metrics


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gauge(metrics: Metrics, sample: str) -> float | None:
    for line in generate_latest(metrics.registry).decode().splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    return None


def test_a_window_of_steps_gives_busy_ratio_true_rate_input_rate_and_lag() -> None:
    clock, metrics = Clock(), Metrics()
    load = Load(metrics, window_s=10.0, clock=clock)
    a, b = ("bid", 0), ("bid", 1)
    assert load.sample({a: 0, b: 0}, {a: 0, b: 0}) == 0
    for second in range(1, 11):  # 1,000 records/s arrive on a, 200/s on b
        clock.now += 1.0
        load.stepped(0.25, 800)  # a quarter of each second busy
        ends = {a: 1000 * second, b: 200 * second}
        read = {a: 800 * second, b: 200 * second}
        lag = load.sample(ends, read)
    assert lag == 2000
    report = load.report()
    assert report["window_seconds"] == 10.0
    assert report["busy_ratio"] == 0.25
    assert report["true_rate"] == 3200.0  # 800 records per 0.25 busy seconds
    assert report["input_rate"] == {"bid:0": 1000.0, "bid:1": 200.0}
    assert report["lag_records"] == {"bid:0": 2000, "bid:1": 0}
    assert report["lag_seconds"] == {"bid:0": 2.0, "bid:1": 0.0}
    assert (report["busy_seconds"], report["processed"]) == (2.5, 8000)
    assert gauge(metrics, "streamshift_busy_ratio") == 0.25
    assert gauge(metrics, "streamshift_true_rate_records") == 3200.0
    assert gauge(metrics, 'streamshift_input_rate_records{partition="bid:0"}') == 1000.0
    assert gauge(metrics, 'streamshift_partition_lag_records{partition="bid:0"}') == 2000.0
    assert gauge(metrics, 'streamshift_partition_lag_seconds{partition="bid:0"}') == 2.0
    assert gauge(metrics, "streamshift_records_processed_total") == 8000.0


def test_the_window_slides_and_a_released_partition_leaves_the_gauges() -> None:
    clock, metrics = Clock(), Metrics()
    load = Load(metrics, window_s=5.0, clock=clock)
    a, b = ("bid", 0), ("bid", 1)
    for second in range(20):  # busy all the time for 10 s, then idle
        clock.now += 1.0
        load.stepped(1.0 if second < 10 else 0.0, 100 if second < 10 else 0)
        load.sample({a: 10 * second, b: 0}, {a: 10 * second, b: 0})
    report = load.report()
    assert report["window_seconds"] == 5.0
    assert report["busy_ratio"] == 0.0 and report["true_rate"] is None
    assert report["input_rate"]["bid:0"] == 10.0
    clock.now += 1.0
    load.sample({a: 200}, {a: 200})
    assert gauge(metrics, 'streamshift_input_rate_records{partition="bid:1"}') is None
    assert set(load.report()["lag_records"]) == {"bid:0"}


def test_records_waiting_with_no_input_have_an_unknown_lag_in_seconds() -> None:
    clock = Clock()
    load = Load(Metrics(), window_s=10.0, clock=clock)
    position = ("bid", 0)
    for _ in range(3):
        clock.now += 1.0
        load.sample({position: 500}, {position: 100})
    assert load.report()["lag_seconds"] == {"bid:0": None}
    assert load.report()["lag_records"] == {"bid:0": 400}


def test_a_first_sample_reports_totals_but_no_window() -> None:
    load = Load(Metrics(), clock=Clock())
    load.stepped(0.5, 10)
    report = load.report()
    assert (report["busy_seconds"], report["processed"], report["busy_ratio"]) == (0.5, 10, None)


class CpuClock:
    def __init__(self) -> None:
        self.seconds = 50.0  # CPU time used before the worker's load began counting

    def __call__(self) -> float:
        return self.seconds


def test_under_a_cpu_quota_busy_time_is_the_steps_cpu_over_what_the_quota_left_them() -> None:
    clock, cpu, metrics = Clock(), CpuClock(), Metrics()
    load = Load(metrics, window_s=10.0, clock=clock, quota_cores=0.1, cpu_clock=cpu)
    position = ("bid", 0)
    load.sample({position: 0}, {position: 0})
    for second in range(1, 11):  # below saturation: short steps the quota never throttles
        clock.now += 1.0
        load.stepped(0.01, 400, cpu_s=0.012)
        load.stepped(0.01, 600, cpu_s=0.018)  # 20 ms of wall time, 30 ms of CPU a second
        load.stepped(0.0, 0, cpu_s=0.0)  # a consume that returned nothing
        cpu.seconds += 0.07  # 40 ms a second besides the steps: commits, Kafka clients
        load.sample({position: 1000 * second}, {position: 1000 * second})
    report = load.report()
    # the quota leaves the steps 60 ms a second and they took half: 1,000 records a second are
    # half of the 2,000 the instance processes at its quota (not a 50th of the 50,000 records
    # per second of wall busy time, nor the 70% of the quota the process used)
    assert report["busy_ratio"] == 0.5
    assert report["true_rate"] == 2000.0
    assert report["busy_seconds"] == pytest.approx(5.0)  # CPU used before the first sample is
    assert gauge(metrics, "streamshift_busy_seconds_total") == pytest.approx(5.0)  # not counted
    assert gauge(metrics, "streamshift_true_rate_records") == 2000.0


def test_under_a_cpu_quota_steps_that_take_all_it_leaves_are_saturated() -> None:
    clock, cpu = Clock(), CpuClock()
    load = Load(Metrics(), window_s=10.0, clock=clock, quota_cores=0.1, cpu_clock=cpu)
    load.sample({}, {})
    for _ in range(5):
        clock.now += 1.0
        load.stepped(0.9, 3000, cpu_s=0.06)  # throttled: most of a second of wall time
        cpu.seconds += 0.1  # the whole quota
        load.sample({}, {})
    assert (load.report()["busy_ratio"], load.report()["true_rate"]) == (1.0, 3000.0)
    clock.now += 1.0
    cpu.seconds += 0.02  # idle: the fixed costs alone are no work
    load.sample({}, {})
    assert load.report()["busy_seconds"] == pytest.approx(5.0)


def test_without_a_quota_busy_time_is_the_steps_wall_time() -> None:
    clock, cpu = Clock(), CpuClock()
    load = Load(Metrics(), window_s=10.0, clock=clock, cpu_clock=cpu)
    load.sample({}, {})
    clock.now += 1.0
    cpu.seconds += 0.9  # neither the steps' nor the other threads' CPU time counts
    load.stepped(0.25, 100, cpu_s=0.2)
    load.sample({}, {})
    assert (load.report()["busy_ratio"], load.report()["true_rate"]) == (0.25, 400.0)
