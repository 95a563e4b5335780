"""Migration benchmark of the worker runtime: input flowing at a steady rate while a protocol
moves the query between worker processes on the local stack.

Per protocol, on Nexmark q5 (JSON input): a bounded producer thread writes the input at `rate`
events per second (event time runs `speedup` times faster than the wall clock, so windows fire
often), a `read_committed` reader records when output arrives, and after `migrate_at` seconds
the protocol moves the query (q5's top-k ranks all partitions together: every partition moves;
q8: partitions 2 and 3; savepoint-restart: always the whole query) to a second worker.
Measured: output gap (the longest wall-clock pause between results while input flows) against
the same run without migration, downtime (the wall-clock time the moving partitions were read by
no worker: from the first pause or stop call to the answer of the call after which the target
reads them, as the driver sees it: state-transfer's `begin`, moving-state's `recompute`,
savepoint-restart's restarted worker ready, which it is once restored; per step, and for
moving-state the seconds the target reports of the origin's export, the rest of its pull (the
origin's wait for its loop to take the call and the HTTP transfer) and the restore),
duration (first to last protocol call), state bytes moved (the snapshot's size; moving-state:
the export's; savepoint-restart: every partition's, as it stops the whole query),
the partitions moved, and whether the output is exact (no duplicate, nothing outside the
in-process reference, nothing of it missing). Parallel-track's target is begun with its
origin's address and releases its held output itself (`runtime.track_follow`); the driver waits
for that, then calls `release-output` as the operator does (it repeats nothing).

On q8 with a large state (columnar input, a preload of mostly persons), savepoint-restart's
downtime against state-transfer's and moving-state's (UniMiCo needs the windows to move on to
finish, which a large-state q8 run does not give in its time).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from confluent_kafka import Consumer, Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import encode_columnar, encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.runner import Instance, collect, run_plan

from bench.runtime_workers import (
    PARTITIONS,
    Services,
    control,
    create_topics,
    delete_topics,
    send,
    start,
    status,
    wait_ready,
    worker_env,
)

Record = tuple[int, str, int, bytes, int]  # first ts, input, partition, value, events


@dataclass
class Scenario:
    """One benchmark input: a plan, its events, the wire format and the flow."""

    plan: str
    inputs: dict[str, Batch]
    fmt: str
    rate: float
    moving: tuple[int, ...]
    preload: int = 0
    migrate_at: float = 3.0


@dataclass
class Outcome:
    protocol: str
    gap: float
    downtime: float
    duration: float
    state_bytes: int
    exact: bool
    origin_state: int = 0
    notes: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)
    moved: tuple[int, ...] = ()
    parts: dict[str, float] = field(default_factory=dict)


def q5_scenario(events: int, rate: float, speedup: float, migrate_at: float) -> Scenario:
    config = GeneratorConfig(partitions=PARTITIONS, events_per_second=max(1, int(rate / speedup)))
    bids = generate(11, 0, events, config)["bid"]
    everything = tuple(range(PARTITIONS))  # q5's top-k ranks the auctions of every partition
    return Scenario("nexmark-q5", {"bid": bids}, "json", rate, everything, migrate_at=migrate_at)


def q8_scenario(preload: int, steady: int, rate: float) -> Scenario:
    """Mostly persons, all within one window: the join holds them all when the query moves."""
    config = GeneratorConfig(
        partitions=PARTITIONS,
        person_proportion=8,
        auction_proportion=1,
        bid_proportion=1,
        events_per_second=max(1, (preload + steady) // 8),
    )
    events = generate(13, 0, int((preload + steady) / 0.9), config)
    inputs = {name: events[name] for name in ("person", "auction")}
    loaded = sum(len(b) for b in inputs.values()) * preload // (preload + steady)
    return Scenario("nexmark-q8", inputs, "columnar", rate, (2, 3), loaded, migrate_at=2.0)


def encoded(scenario: Scenario, chunk: int = 200) -> list[Record]:
    """The input records in event-time order (columnar: `chunk` events per record)."""
    records: list[Record] = []
    for name, batch in scenario.inputs.items():
        for p in range(PARTITIONS):
            part = batch.take(batch.partition == p)
            if scenario.fmt == "json":
                values = encode_json(part)
                ts = part.ts.tolist()
                records += [(t, name, p, v, 1) for t, v in zip(ts, values, strict=True)]
                continue
            for s in range(0, len(part), chunk):
                piece = part.take(slice(s, s + chunk))
                records.append((int(piece.ts[0]), name, p, encode_columnar(piece), len(piece)))
    records.sort(key=lambda r: (r[0], r[1], r[2]))
    return records


class Flow:
    """A bounded producer thread: the preload at once, then `rate` events per second."""

    def __init__(self, bootstrap: str, run: str, records: list[Record], preload: int, rate: float):
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
        )
        self.run, self.records, self.preload, self.rate = run, records, preload, rate
        self.steady_from = 0.0
        self.ended = 0.0
        self.thread = threading.Thread(target=self._produce, daemon=True)

    def load(self) -> None:
        sent = 0
        for index, (_, name, p, value, n) in enumerate(self.records):
            if sent >= self.preload:
                self.records = self.records[index:]
                break
            self._send(name, p, value)
            sent += n
        else:
            self.records = []
        self.producer.flush(120)

    def _send(self, name: str, partition: int, value: bytes) -> None:
        send(self.producer, f"{self.run}-{name}", value, partition)

    def _produce(self) -> None:
        self.steady_from = time.monotonic()
        sent = 0
        for _, name, p, value, n in self.records:
            due = self.steady_from + sent / self.rate
            pause = due - time.monotonic()
            if pause > 0:
                self.producer.flush(5)
                time.sleep(pause)
            self._send(name, p, value)
            sent += n
        self.producer.flush(60)
        self.ended = time.monotonic()


class Reader:
    """A `read_committed` reader of the output topic that notes when each record arrived."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-reader-{uuid.uuid4().hex[:6]}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        self.consumer.subscribe([topic])
        self.arrivals: list[float] = []
        self.records: list[str] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stopped.is_set():
            for message in self.consumer.consume(10000, 0.02):
                if message.error() is None:
                    self.arrivals.append(time.monotonic())
                    value = json.loads(message.value() or b"")
                    self.records.append(json.dumps(value, sort_keys=True))
        self.consumer.close()

    def gap(self, begin: float, end: float) -> float:
        """The longest pause between results from the first arriving after `begin` to `end`."""
        times = [t for t in self.arrivals if begin <= t <= end]
        return float(np.diff([*times, end]).max()) if times else end - begin

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(10)


Driver = Callable[[dict[str, Any]], dict[str, Any]]


class Steps:
    """Wall-clock seconds of a protocol's steps, all of them downtime."""

    def __init__(self) -> None:
        self.begin = self.last = time.monotonic()
        self.seconds: dict[str, float] = {}

    def done(self, step: str) -> None:
        now = time.monotonic()
        self.seconds[step], self.last = now - self.last, now

    def cost(self, moved: int, parts: dict[str, float] | None = None) -> dict[str, Any]:
        """`parts`: seconds a worker reported of what the steps did (inside them, not added)."""
        total = self.last - self.begin
        return {
            "downtime": total,
            "duration": total,
            "bytes": moved,
            "steps": self.seconds,
            "parts": parts or {},
        }


def poll(env: dict[str, str], ok: Callable[[dict[str, Any]], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ok(status(env)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"condition not met; last status {status(env)}")
        time.sleep(0.02)


def state_transfer(run: dict[str, Any]) -> dict[str, Any]:
    origin, target, moving = run["origin"], run["target"], {"partitions": run["moving"]}
    steps = Steps()
    while not control(origin, "POST", "/v1/migrations/m/pause", moving)[1]["paused"]:
        time.sleep(0.01)
    steps.done("pause")
    manifest = _ok(control(origin, "POST", "/v1/migrations/m/snapshot", moving))
    steps.done("snapshot")
    _ok(control(origin, "POST", "/v1/migrations/m/release", moving))
    steps.done("release")
    _ok(control(target, "POST", "/v1/migrations/m/begin", {"role": "target", **moving}))
    steps.done("restore")
    return steps.cost(manifest["size"])


def moving_state(run: dict[str, Any]) -> dict[str, Any]:
    """Seed 001 (Zhu et al., Dynamic Plan Migration), 4.1: pause at markers as state-transfer does,
    then the target pulls the states straight from the origin's control API (no S3) and resumes from
    the positions they cover."""
    origin, target, moving = run["origin"], run["target"], {"partitions": run["moving"]}
    address = f"127.0.0.1:{origin['STREAMSHIFT_CONTROL_PORT']}"
    steps = Steps()
    while not control(origin, "POST", "/v1/migrations/m/pause", moving)[1]["paused"]:
        time.sleep(0.01)
    steps.done("pause")
    body = {"role": "target", "protocol": "moving-state", **moving}
    body["origins"] = [{"address": address, **moving}]
    begun = _ok(control(target, "POST", "/v1/migrations/m/begin", body))
    steps.done("pull+restore")
    _ok(control(target, "POST", "/v1/migrations/m/recompute", moving))
    steps.done("resume")
    export, pull = begun["export_s"], begun["pull_s"]  # the pull waits for the export
    parts = {"export": export, "transfer": round(pull - export, 3), "restore": begun["restore_s"]}
    return steps.cost(begun["state_bytes"], parts)


def unimico(run: dict[str, Any]) -> dict[str, Any]:
    origin, target, moving = run["origin"], run["target"], {"partitions": run["moving"]}
    begin = time.monotonic()
    body = {"role": "target", "protocol": "unimico", **moving}
    _ok(control(target, "POST", "/v1/migrations/m/begin", body))
    poll(target, lambda s: s["roles"]["m"]["ts_start"] is not None)
    ts_start = status(target)["roles"]["m"]["ts_start"]
    path = "/v1/migrations/m/handoff"
    handoff = {"protocol": "unimico", "ts_start": ts_start, **moving}
    handed = _ok(control(origin, "POST", path, handoff))
    _ok(control(target, "POST", "/v1/migrations/m/activate", handed))
    poll(origin, lambda s: s["roles"]["m"]["done"])
    released = {"handed_over_at": status(origin)["roles"]["m"]["handed_over_at"]}
    _ok(control(target, "POST", "/v1/migrations/m/release-output", released))
    return {"downtime": 0.0, "duration": time.monotonic() - begin, "bytes": 0}


def parallel_track(run: dict[str, Any]) -> dict[str, Any]:
    origin, target, moving = run["origin"], run["target"], {"partitions": run["moving"]}
    begin = time.monotonic()
    track = {"protocol": "parallel-track", **moving}
    split = _ok(control(origin, "POST", "/v1/migrations/m/split", track))
    body = {"role": "target", **track}
    body |= {k: split[k] for k in ("split", "offsets", "rows_counted")}
    body["origin"] = f"127.0.0.1:{origin['STREAMSHIFT_CONTROL_PORT']}"
    _ok(control(target, "POST", "/v1/migrations/m/begin", body))
    poll(target, lambda s: s["roles"]["m"]["done"])
    return {"downtime": 0.0, "duration": time.monotonic() - begin, "bytes": 0}


def savepoint_restart(run: dict[str, Any]) -> dict[str, Any]:
    origin = run["origin"]
    steps = Steps()
    manifest = _ok(control(origin, "POST", "/v1/migrations/m/stop"))
    steps.done("savepoint")
    run["processes"][0].wait(60)
    steps.done("exit")
    restarted = {**origin, "STREAMSHIFT_EPOCH": "1"}
    process = start(restarted, "restarted")
    run["processes"].append(process)
    wait_ready(restarted, process)
    steps.done("start+restore")
    return steps.cost(manifest["size"])


def _ok(answer: tuple[int, Any]) -> Any:
    code, body = answer
    if code != 200:
        raise RuntimeError(f"control API answered {code}: {body}")
    return body


DRIVERS: dict[str, Driver] = {
    "unimico": unimico,
    "parallel-track": parallel_track,
    "state-transfer": state_transfer,
    "moving-state": moving_state,
    "savepoint-restart": savepoint_restart,
}


def measure(stack: Services, scenario: Scenario, protocol: str | None) -> Outcome:
    """One run: the workers, the flow, the protocol (None: no migration), the output."""
    run = f"mig-{uuid.uuid4().hex[:6]}"
    names = list(scenario.inputs)
    topics = [*(f"{run}-{n}" for n in names), f"{run}-out", f"{run}-out.dead"]
    create_topics(stack, topics)
    origin = worker_env(stack, run, scenario.plan, names, scenario.fmt)
    target = worker_env(
        stack,
        run,
        scenario.plan,
        names,
        scenario.fmt,
        STREAMSHIFT_EPOCH="1",
        STREAMSHIFT_PARTITIONS=",".join(map(str, scenario.moving)),
        STREAMSHIFT_START="hold",
    )
    flow = Flow(stack.kafka, run, encoded(scenario), scenario.preload, scenario.rate)
    reader = Reader(stack.kafka, f"{run}-out")
    processes = [start(origin, "origin")]
    context = {
        "origin": origin,
        "target": target,
        "processes": processes,
        "moving": scenario.moving,
    }
    try:
        if protocol in ("unimico", "parallel-track", "state-transfer", "moving-state"):
            processes.append(start(target, "target"))
            wait_ready(target, processes[-1])
        wait_ready(origin, processes[0])
        flow.load()
        preloaded = scenario.preload
        poll(origin, lambda s: s["counts"]["events_in"] >= preloaded, 120)
        origin_state = int(status(origin)["state_bytes"])
        flow.thread.start()
        time.sleep(scenario.migrate_at)
        cost: dict[str, Any] = {"downtime": 0, "duration": 0}
        if protocol:
            cost = DRIVERS[protocol](context)
        flow.thread.join(600)
        expected = reference(scenario)
        deadline = time.monotonic() + 60
        while len(reader.records) < len(expected[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        gap = reader.gap(flow.steady_from + 1.0, flow.ended)
    finally:
        reader.stop()
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(10)
        delete_topics(stack, topics)
    at_least, complete = expected
    output = reader.records
    faults = {
        "duplicates": sum(n - 1 for n in Counter(output).values()),
        "outside": len(set(output) - set(complete)),
        "missing": len(set(at_least) - set(output)),
    }
    return Outcome(
        protocol or "none",
        gap,
        cost["downtime"],
        cost["duration"],
        int(cost.get("bytes", 0)),
        not any(faults.values()),
        origin_state,
        {k: v for k, v in faults.items() if v},
        dict(cost.get("steps", {})),
        tuple(range(PARTITIONS)) if protocol == "savepoint-restart" else scenario.moving,
        dict(cost.get("parts", {})),
    )


def reference(scenario: Scenario) -> tuple[list[str], list[str]]:
    """The in-process engine's results over the whole input: without the end-of-input flush
    (what the workers must have emitted) and with it (everything they may emit)."""
    plan = builtin(scenario.plan)
    instance = Instance(plan, range(PARTITIONS))
    for name, batch in scenario.inputs.items():
        for p in range(PARTITIONS):
            instance.feed(name, p, batch.take(batch.partition == p))
    emitted = sorted(json.dumps(r, sort_keys=True) for r in collect(instance.poll()))
    flushed, _ = run_plan(plan, {name: [b] for name, b in scenario.inputs.items()})
    return emitted, sorted(json.dumps(r, sort_keys=True) for r in collect(flushed))


def report(outcome: Outcome, baseline: Outcome | None) -> str:
    ratio = "" if baseline is None else f" gap-ratio={outcome.gap / baseline.gap:.2f}"
    return (
        f"{outcome.protocol}: gap={outcome.gap:.2f}s{ratio} downtime={outcome.downtime:.2f}s "
        f"duration={outcome.duration:.2f}s state-moved={outcome.state_bytes / 1e3:,.0f}kB "
        f"partitions-moved={','.join(map(str, outcome.moved)) or '-'} "
        f"exact={'yes' if outcome.exact else f'NO {outcome.notes}'}"
        + "".join(f" {step}={s:.2f}s" for step, s in outcome.steps.items())
        + (
            " (inside: " + " ".join(f"{k}={s:.2f}s" for k, s in outcome.parts.items()) + ")"
            if outcome.parts
            else ""
        )
    )
