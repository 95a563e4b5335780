"""The elastic scenario of `make bench-autoscaler` and `make demo-elastic`: Nexmark q8 on the
local stack, worker pods limited to a fraction of a core, the autoscaler on, a load that steps
up and back down; sampled once a second, its output verified against the reference.

q8 (persons joined with the auctions they created in the same tumbling window, keyed by the
person) rather than the issue's q5: q5's hot-item maximum is over all auctions, a global plan
that runs on one instance only (the plan check refuses more), so the autoscaler never scales it.

The operator runs as users run it (`kopf run`, `stack_driver.OperatorProcess`); each run has its
own namespace, topics and snapshots, removed after it, and its own operator watching that
namespace by name from the start (a glob pattern relies on kopf noticing a namespace created
after it started, and it has missed some).
`capacity` measures what one worker processes at its CPU limit (input produced flat out, far
above it); `run` is the autoscaled scenario (the step, event time at wall time, from
`elastic_load`'s producer or the Spark generator, locally or on Kubernetes: `elastic_spark`).
A sample reads the query's status, its Migrations and each instance's `/v1/status` `load` (the
lag of its partitions).
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from streamshift_operator.autoscaler.record import CAUSE_LABEL
from streamshift_operator.resources.pods import CONTROL_PORT

from streamshift_dev import elastic_load, elastic_spark
from streamshift_dev.elastic_timeline import Rescale, Sample, workers_at_target
from streamshift_dev.reference import reference
from streamshift_dev.stack_driver import (
    MIG,
    SQ,
    TERMINAL,
    TOKEN,
    Kube,
    OperatorProcess,
    Stack,
    TimedOut,
    delete_snapshots,
    delete_topics,
    ensure_bucket,
    read_committed,
    stream_query,
    wait_for,
)

PLAN = "nexmark-q8"
HANDED_OVER = ("Finalizing", "Succeeded")
"""A Migration's phases once the target instances run the query."""
PARTITIONS = 4
READY_S = 120.0
DRAIN_S = 240.0


@dataclass(frozen=True)
class Settings:
    """The scenario: the workers' CPU limit and the autoscaler's policy."""

    cpu_limit_m: int = 100
    """A worker pod's CPU limit: large enough that a worker's fixed CPU cost per second (its
    polls, whatever the load) is a small share of the quota, small enough that this machine's
    producer writes the high load of three such workers (docs/autoscaler.md)."""
    target: float = 0.7
    """The autoscaler's target utilization (`spec.autoscaler.targetUtilization`): its default,
    as the Flink operator's autoscaler's. With the high load at 2.6 workers' target, two workers
    read 0.91 of a worker's capacity each (saturated: the sweep's optimum is 4 over q8's 4
    partitions, 3 reading 2, 1 and 1 of them); at 0.6, 0.78 each, and two keep up."""
    lag_tolerance_s: int = 10
    metric_window_s: int = 10
    stabilization_s: int = 20
    scale_down_delay_s: int = 20
    protocol: str = "auto"
    """The protocol of the autoscaler's Migrations (`spec.autoscaler.protocol`)."""

    def autoscaler(self) -> dict[str, Any]:
        return {
            "enabled": True,
            "minParallelism": 1,
            "maxParallelism": PARTITIONS,
            "targetUtilization": self.target,
            "lagToleranceSeconds": self.lag_tolerance_s,
            "metricWindowSeconds": self.metric_window_s,
            "stabilizationSeconds": self.stabilization_s,
            "scaleDownDelaySeconds": self.scale_down_delay_s,
            "protocol": self.protocol,
        }

    def resources(self) -> dict[str, Any]:
        return {
            "requests": {"cpu": f"{self.cpu_limit_m}m", "memory": "256Mi"},
            "limits": {"cpu": f"{self.cpu_limit_m}m", "memory": "1Gi"},
        }


RECORD_WAIT_S = 180
"""How long past `Phases.after_s` the run goes on for a rescale's verification to end."""


@dataclass(frozen=True)
class Phases:
    """Seconds of low load before the step up, of high load, and at most after the step down
    (the run ends `settle_s` after the scale-down back to 1, or at the limit and
    `RECORD_WAIT_S` more at most while a rescale verifies)."""

    low_s: int = 40
    high_s: int = 150
    after_s: int = 240
    settle_s: int = 20


@dataclass(frozen=True)
class Capacity:
    """One worker at its CPU limit with input always waiting: records per busy second (what
    it keeps up with), its busy ratio and records per second then, and the rate this process
    produced at meanwhile (flat out: the most a step can ask of it)."""

    records_per_s: float
    busy_ratio: float
    processed_per_s: float
    produced_per_s: float


@dataclass
class Outcome:
    """An autoscaled run: its samples, the autoscaler's rescales, and the output check."""

    step_up: float
    step_down: float
    samples: list[Sample] = field(default_factory=list)
    rescales: list[Rescale] = field(default_factory=list)
    fed_events: int = 0
    expected: int = 0
    got: int = 0
    exact: bool = False
    missing: int = 0
    """Reference results not in the output (the backlog not processed when it was read)."""
    extra: int = 0
    """Output results not in the reference, or repeated: wrong output."""
    decisions: list[str] = field(default_factory=list)


Show = Callable[[str, Sample], None]


@dataclass(frozen=True)
class StepRates:
    """The step's rates (records/s) from one worker's capacity: `low` about half of what one
    worker runs at the target utilization, `high` about three workers' (`high_workers` of it),
    and the fewest workers whose capacity holds `high` at the target (what the autoscaler is
    expected to choose; the bench's optimum is measured, `elastic_sweep`)."""

    at_target: float
    low: float
    high: float
    workers_at_target: int

    @classmethod
    def of(cls, measured: Capacity, target: float, high_workers: float = 2.6) -> StepRates:
        at_target = measured.records_per_s * target
        high = at_target * high_workers
        workers = workers_at_target(high, measured.records_per_s, target, PARTITIONS)
        return cls(at_target, 0.5 * at_target, high, workers)


def progress_line(phase: str, s: Sample) -> str:
    """One line of the run's state: what `make demo-elastic` refreshes in place."""
    migration = s.migration or "-"
    return (
        f"{s.t:6.1f}s {phase:9} in {s.rate_in:8,.0f}/s processed {s.processed:11,} "
        f"lag {s.lag_records:9,} ({s.lag_seconds:5.1f}s) parallelism {s.parallelism} "
        f"migration {migration} autoscaler {s.autoscaler or '-'}"
    )


class Session:
    """The local stack and where the runs' operators log."""

    def __init__(self, stack: Stack, kube: Kube, log_dir: Path) -> None:
        self.stack, self.kube, self.log_dir = stack, kube, log_dir


@contextmanager
def session(log_dir: Path) -> Iterator[Session]:
    """The CRDs installed; the runs' operators log under `log_dir`."""
    stack = Stack.running()
    kube = Kube(stack)
    kube.install_crds()
    ensure_bucket(stack)
    log_dir.mkdir(parents=True, exist_ok=True)
    yield Session(stack, kube, log_dir)


@contextmanager
def namespace(s: Session, role: str) -> Iterator[str]:
    """A fresh namespace `elastic-<role>-<id>` with the Secrets and an operator watching it
    (logging to `operator-<role>.log`); removed afterwards with its topics and snapshots, the
    operator stopped once the namespace is gone (it finalizes the query's deletion)."""
    name = f"elastic-{role}-{uuid.uuid4().hex[:6]}"
    s.kube.namespace(name)
    operator = OperatorProcess(s.stack, [name], s.log_dir / f"operator-{role}.log")
    try:
        yield name
    finally:
        try:
            s.kube.delete_namespace(name, timeout=120)
        finally:
            operator.stop()
        delete_topics(s.stack, f"{name}-")
        delete_snapshots(s.stack, f"{name}/")


def query_body(
    s: Session, ns: str, settings: Settings, autoscaled: bool, parallelism: int = 1
) -> dict[str, Any]:
    """The q8 StreamQuery at `parallelism`, with the autoscaler or without."""
    inputs = list(elastic_load.INPUTS)
    body = stream_query("q", {}, inputs, ns, PARTITIONS, parallelism, s.stack)
    spec = body["spec"]
    spec["plan"] = {"builtin": PLAN}
    spec["resources"] = settings.resources()
    if autoscaled:
        spec["autoscaler"] = settings.autoscaler()
    return body


def start_query(
    s: Session, ns: str, settings: Settings, autoscaled: bool, parallelism: int = 1
) -> None:
    s.kube.create(SQ, ns, query_body(s, ns, settings, autoscaled, parallelism))
    wait_for("q Running", lambda: s.kube.running(ns, "q"), READY_S, every=1.0)


def worker_loads(s: Session, ns: str, status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each placement instance's `/v1/status` `load`, by pod (those that answered)."""
    pods = {i["pod"] for i in status.get("instances") or []}
    ips = {
        p.metadata.name: p.status.pod_ip
        for p in s.kube.core.list_namespaced_pod(ns).items
        if p.metadata.name in pods and p.status.pod_ip
    }
    loads = {}
    for pod, ip in ips.items():
        request = urllib.request.Request(
            f"http://{ip}:{CONTROL_PORT}/v1/status", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                loads[pod] = dict(json.loads(response.read()).get("load") or {})
        except (OSError, ValueError):
            continue
    return loads


def capacity(
    s: Session, settings: Settings, measure_s: float, say: Callable[[str], None]
) -> Capacity:
    """One worker at parallelism 1, its input produced flat out (far above what it processes):
    its records processed per busy second over `measure_s` seconds once a backlog waits (DS2's
    true rate with input always there; under the CPU limit, throttled time counts as busy), its
    records processed per second then, and its busy ratio at the end."""
    with namespace(s, "capacity") as ns:
        start_query(s, ns, settings, autoscaled=False)
        generator = elastic_load.config(PARTITIONS, elastic_load.events_for(30_000))
        load = elastic_load.Producing(s.stack.kafka, ns, generator, flat_out=True)
        load.start()
        try:
            time.sleep(8)  # the backlog builds up; the worker's load window fills
            first = one_worker_load(s, ns)
            time.sleep(measure_s)
            last = one_worker_load(s, ns)
            produced = load.records / (time.monotonic() - load.started)
        finally:
            load.stop()
        processed = int(last[1]["processed"]) - int(first[1]["processed"])
        busy = float(last[1]["busy_seconds"]) - float(first[1]["busy_seconds"])
        per_second = processed / (last[0] - first[0])
        true_rate = processed / busy if busy > 0 else 0.0
        lag = lag_of({"worker": last[1]})
        say(
            f"capacity: one worker at {settings.cpu_limit_m}m processed {true_rate:,.0f} records "
            f"per busy second ({per_second:,.0f}/s, busy ratio {last[1].get('busy_ratio')}) with "
            f"input waiting (produced {load.records:,} at {produced:,.0f}/s, {lag:,} waiting)"
        )
        if lag <= 0 or true_rate <= 0:
            raise RuntimeError("the producer could not keep one worker busy: lower --cpu-limit")
        return Capacity(true_rate, float(last[1].get("busy_ratio") or 0.0), per_second, produced)


def instance_loads(s: Session, ns: str, parallelism: int) -> tuple[float, dict[str, Any]]:
    """Each instance's `/v1/status` load by pod, once all `parallelism` answered, and when."""

    def answered() -> dict[str, Any] | None:
        loads = worker_loads(s, ns, s.kube.status(SQ, ns, "q"))
        return loads if len(loads) == parallelism else None

    loads: dict[str, Any] = wait_for("every instance's load", answered, 30, every=0.5)
    return time.monotonic(), loads


def one_worker_load(s: Session, ns: str) -> tuple[float, dict[str, Any]]:
    """The only instance's load (`instance_loads`), and when."""
    at, loads = instance_loads(s, ns, 1)
    return at, next(iter(loads.values()))


def lag_of(loads: Mapping[str, Mapping[str, Any]]) -> int:
    """The records waiting over all the instances' partitions (their loads' `lag_records`)."""
    return sum(int(v) for load in loads.values() for v in (load.get("lag_records") or {}).values())


def run(
    s: Session,
    settings: Settings,
    phases: Phases,
    low_rate: float,
    high_rate: float,
    show: Show,
    load_driver: str = "producer",
) -> Outcome:
    """The autoscaled q8 under a step from `low_rate` to `high_rate` records/s and back,
    written by `load_driver` (`elastic_spark.LOADS`)."""
    step_until = phases.low_s + phases.high_s
    generator = elastic_load.config(
        PARTITIONS,
        elastic_load.events_for(low_rate),
        elastic_load.events_for(high_rate),
        phases.low_s,
        step_until,
    )
    outcome = Outcome(step_up=float(phases.low_s), step_down=float(step_until))
    with namespace(s, "run") as ns:
        start_query(s, ns, settings, autoscaled=True)
        load = elastic_spark.driver(load_driver, s.stack.kafka, ns, generator)
        load.start()
        monitor = _Monitor(s, ns, load)
        try:
            while True:
                sample = monitor.sample()
                outcome.samples.append(sample)
                phase = _phase(sample.t, outcome)
                show(phase, sample)
                over = sample.t - outcome.step_down - phases.after_s
                # past the limit, a rescale still verifying gets its verdict (the input goes on:
                # the verification waits for windows that close after it began)
                limit = over >= 0 and (monitor.all_recorded() or over >= RECORD_WAIT_S)
                settled = _settled(outcome, phases, sample) and monitor.all_recorded()
                if limit or (sample.t >= outcome.step_down and settled):
                    break
                time.sleep(max(0.0, 1.0 - (time.monotonic() - load.started - sample.t)))
        finally:
            load.stop()
        outcome.rescales = monitor.rescales()
        status = s.kube.status(SQ, ns, "q")
        outcome.decisions = [
            f"{h['action']} {h['fromParallelism']} -> {h['toParallelism']}: {h['reason']}"
            for h in (status.get("autoscaler") or {}).get("history", [])
        ]
        show("verifying", outcome.samples[-1])
        with suppress(TimedOut):  # the backlog processed first, so the output is complete
            wait_for("the lag drained", monitor.drained, DRAIN_S, every=2.0)
        outcome.fed_events = load.events
        expected = reference(PLAN, load.fed_in_chunks(), PARTITIONS)
        got = read_committed(s.stack, f"{ns}-out", len(expected), 120, quiet=5.0)
        output = [json.dumps(json.loads(value), sort_keys=True) for value, _ in got]
        outcome.expected, outcome.got = len(expected), len(output)
        outcome.missing = sum((Counter(expected) - Counter(output)).values())
        outcome.extra = sum((Counter(output) - Counter(expected)).values())
        outcome.exact = sorted(output) == expected
    return outcome


def _phase(t: float, outcome: Outcome) -> str:
    if t < outcome.step_up:
        return "low"
    return "high" if t < outcome.step_down else "low again"


def _settled(outcome: Outcome, phases: Phases, now: Sample) -> bool:
    """Scaled up before, and back at parallelism 1 with no Migration for `settle_s`."""
    quiet = [s for s in outcome.samples if s.t >= now.t - phases.settle_s]
    scaled = any(s.parallelism > 1 for s in outcome.samples)
    return (
        scaled
        and quiet[0].t <= now.t - phases.settle_s + 1.5
        and all(s.parallelism == 1 and not s.migration for s in quiet)
    )


class _Monitor:
    """Samples the query once a second; remembers when each autoscaler Migration was seen
    live and terminal."""

    def __init__(self, s: Session, ns: str, load: elastic_load.Driver) -> None:
        self.s, self.ns, self.load = s, ns, load
        self.lag = 0
        self.seen: dict[str, tuple[float, float | None]] = {}
        self.handed_over: dict[str, float] = {}
        self.migrations: dict[str, dict[str, Any]] = {}

    def sample(self) -> Sample:
        t = time.monotonic() - self.load.started
        status = self.s.kube.status(SQ, self.ns, "q")
        loads = worker_loads(self.s, self.ns, status)
        if loads:
            self.lag = lag_of(loads)
        rate = self.load.rate(over_s=5.0)
        live = ""
        for migration in self._autoscaler_migrations():
            name = migration["metadata"]["name"]
            phase = str((migration.get("status") or {}).get("phase") or "Queued")
            started, ended = self.seen.get(name, (t, None))
            if phase in TERMINAL and ended is None:
                ended = t
            self.seen[name] = (started, ended)
            if phase in HANDED_OVER:
                self.handed_over.setdefault(name, t)
            if phase not in TERMINAL:
                live = f"{name} {phase}"
        return Sample(
            t=round(t, 2),
            rate_in=round(self.load.rate(over_s=1.0), 1),
            processed=max(0, self.load.records - self.lag),
            lag_records=self.lag,
            lag_seconds=round(self.lag / rate, 2) if rate > 0 else 0.0,
            parallelism=len(status.get("instances") or []),
            migration=live,
            autoscaler=_decision(status.get("autoscaler") or {}),
        )

    def _autoscaler_migrations(self) -> list[dict[str, Any]]:
        found = self.s.kube.custom.list_namespaced_custom_object(
            "streamshift.io", "v1alpha1", self.ns, MIG
        )["items"]
        mine = [
            m for m in found if m["metadata"].get("labels", {}).get(CAUSE_LABEL) == "autoscaler"
        ]
        for m in mine:
            self.migrations[m["metadata"]["name"]] = m
        return sorted(mine, key=lambda m: m["metadata"]["creationTimestamp"])

    def drained(self) -> bool:
        """Every instance reports no lag."""
        loads = worker_loads(self.s, self.ns, self.s.kube.status(SQ, self.ns, "q"))
        return bool(loads) and lag_of(loads) == 0

    def _recorded(self, name: str) -> dict[str, Any] | None:
        return _recorded(self.s.kube.status(MIG, self.ns, name))

    def all_recorded(self) -> bool:
        """Every autoscaler Migration seen has ended and recorded its verification."""
        return all(_recorded(m.get("status") or {}) for m in self.migrations.values())

    def rescales(self) -> list[Rescale]:
        """The autoscaler's Migrations, oldest first, each once it has ended (waited for)."""
        found: list[Rescale] = []
        for name, (started, _) in sorted(self.seen.items(), key=lambda item: item[1][0]):
            try:
                status = wait_for(f"{name} recorded", partial(self._recorded, name), 60, every=1.0)
            except TimedOut:  # the run's limit came first: what it has recorded
                status = self.s.kube.status(MIG, self.ns, name)
            spec = self.migrations[name]["spec"]
            cost = status.get("cost") or {}
            check = status.get("verification") or {}
            found.append(
                Rescale(
                    name=name,
                    started=started,
                    ended=self.seen[name][1],
                    from_parallelism=_from(found),
                    to_parallelism=int(spec["target"]["parallelism"]),
                    protocol=str(status.get("protocol") or spec.get("protocol")),
                    phase=str(status.get("phase")),
                    gap_s=cost.get("outputGapSeconds"),
                    gap_before_s=cost.get("outputGapBeforeSeconds"),
                    exact=check.get("exact"),
                    handed_over=self.handed_over.get(name),
                )
            )
        return found


def _decision(autoscaler: dict[str, Any]) -> str:
    """`action recommended (true rate R/s)` from `status.autoscaler`, or empty."""
    if not autoscaler.get("action"):
        return ""
    rate = autoscaler.get("loadedTrueRate") or autoscaler.get("trueRate")
    used = "" if rate is None else f" at {float(rate):,.0f}/busy-s"
    return f"{autoscaler['action']} {autoscaler.get('recommendedParallelism')}{used}"


def _recorded(status: dict[str, Any]) -> dict[str, Any] | None:
    """The Migration's status once it has ended and its verification is done (or it failed)."""
    if status.get("phase") not in TERMINAL:
        return None
    if status.get("phase") == "Succeeded" and "exact" not in (status.get("verification") or {}):
        return None
    return status


def _from(before: list[Rescale]) -> int:
    """The parallelism a Migration started from: the last successful one's target, else 1."""
    done = [r for r in before if r.phase == "Succeeded"]
    return done[-1].to_parallelism if done else 1
