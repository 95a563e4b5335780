"""`make bench-runtime`: one worker process on the local stack's Kafka against the in-process
engine on the same input, for Nexmark q5 and q8 with JSON and columnar records. The input is
generated, encoded and produced first (not timed); columnar cases read `COLUMNAR_SCALE` times as
many events (they go that much faster, and a run must last long enough for its rate to be the
steady one). The in-process figure is the engine's as `make bench-engine` measures it: the same
records decoded (only the fields the plan reads, as the worker does), fed to an engine
`Instance` in rounds like the worker's consumes (a batch of the worker's size of every (input,
partition), then a poll), and the results encoded as JSON records, in this process with the
arena cache a worker keeps by default (`STREAMSHIFT_ARENA_CACHE_MB`: freed Python object arenas
reused rather than unmapped, `streamshift_engine.runtime._arenas`). The worker figure is its
events per second as its control API counts them. Both rates leave out the first `WARM_UP` share
of the input (start-up, first imports, first windows), and each is given per wall-clock second
and per CPU second of the process doing the work (every thread: the worker's librdkafka threads
count; they fetch ahead of the loop, so theirs is taken over the whole run, the measured events'
share of it, and printed as a share of the worker's CPU). Each case's input is produced once and
read by `--repeats` fresh workers (own consumer group, transactional id and output topics), and
the in-process engine runs as many times, once before the workers and the rest after; each
side's best run counts, as `timeit` keeps the best: on this shared machine the rate of either side
varies widely between identical runs (docs/performance.md), and what other jobs do to a run only
ever slows it. Every run's rate is printed. The final line takes the lower per-CPU-second ratio over
the queries: on a machine shared with other jobs the wall clock mostly measures how the scheduler
split the cores between two runs made at different times, while CPU time measures the work; with a
core to spare the worker's wall-clock rate is at least that ratio (its librdkafka threads run beside
the loop). Each case also prints the ratio the Kafka client threads alone allow (the worker's loop
as cheap as the in-process engine): on columnar records they receive many bytes an event that no
query reads (most of them Nexmark's `extra` padding), while the engine's own work per event is
small. And it prints the CPU microseconds an event of each part: the engine in process; the worker's
own threads (loop, commit thread, control API); its Kafka client threads, with the share of theirs
spent in the kernel (receiving the fetched bytes); and the broker meanwhile (its pid from `make
up`'s pid file), which shares the machine's cores with the worker. Topics are deleted after each
case.

Then the migration benchmark (`bench.runtime_migration`): per protocol the output gap against
the run without migration, downtime, duration and state bytes moved, and on q8 with a large
state savepoint-restart's downtime over the best state-moving protocol's (state-transfer or
moving-state; UniMiCo and parallel-track have no downtime by design). The q5 migrations run
`--rounds` times (3), each round against its own run without migration, and the final line
takes each protocol's median gap ratio and state-transfer's median pause (every round's figures
and the worst are printed). The final line:
`runtime gap-ratio unimico=R parallel-track=R state-transfer-pause=S savepoint-vs-best=X
kafka-vs-inproc-json=R kafka-vs-inproc-columnar=R`.
`--quick` uses small inputs and short flows; `--large-state-only` runs only the q8 large-state
comparison; `--throughput-only` only the worker-vs-in-process rates; `--gaps-only` only the q5
migrations.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import statistics
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import (
    decode_columnar,
    decode_json,
    encode_columnar,
    encode_json,
    encode_results_json,
)
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.runtime import _arenas
from streamshift_engine.runtime.config import ARENA_CACHE_MB
from streamshift_engine.runtime.projection import input_schemas, projected

from bench import runtime_migration as migration
from bench.runtime_workers import (
    PARTITIONS,
    Services,
    create_topics,
    delete_topics,
    log_of,
    send,
    services,
    stack_pid,
    start,
    status,
    wait_ready,
    worker_env,
)

CHUNK = 1000
COLUMNAR_SCALE = 3
WARM_UP = 0.2
Q8_PRELOAD = 1_000_000  # q8 events (mostly persons, one window) held when it moves: ~100 MB
STATUS_EVERY_S = 0.1  # the worker's CPU answering status requests counts in its rate
REPEATS = 3  # runs of each side per case (worker, in-process engine), the best of each kept
BATCH_EVENTS = 20_000  # events per consume: JSON records of one event, columnar of CHUNK


def records(batch: Batch, fmt: str) -> dict[int, list[bytes]]:
    """Per partition, the encoded Kafka records in offset order."""
    out = {}
    for p in range(PARTITIONS):
        part = batch.take(batch.partition == p)
        if fmt == "json":
            out[p] = encode_json(part)
        else:
            out[p] = [
                encode_columnar(part.take(slice(s, s + CHUNK))) for s in range(0, len(part), CHUNK)
            ]
    return out


@dataclass(frozen=True)
class Rate:
    """Events per wall-clock second and per CPU second of the process doing the work, both
    over the input after its first `WARM_UP` share (start-up, first imports and the first
    windows are not the steady rate)."""

    wall: float
    cpu: float
    kafka_share: float = 0.0  # of the CPU time, the share of the Kafka client's own threads
    kafka_kernel: float = 0.0  # of the Kafka client threads' CPU time, the share in the kernel
    broker_cpu: float | None = None  # the broker's CPU seconds per event meanwhile, if known


@dataclass(frozen=True)
class CpuTimes:
    """CPU seconds (user plus system) of a process: every thread, its Kafka clients' threads
    (librdkafka's, named `rdk:...`), and the system (kernel) part of theirs."""

    total: float
    kafka: float
    kafka_kernel: float


def in_process(
    plan_name: str, encoded: dict[str, dict[int, list[bytes]]], fmt: str, everything: int
) -> Rate:
    """Round after round, as a worker's consumes: a batch of every (input, partition), then one
    poll whose results are encoded."""
    plan = projected(builtin(plan_name))
    instance = Instance(plan, range(PARTITIONS))
    schemas = input_schemas(builtin(plan_name))
    step = batch_records(fmt)
    rounds = max(len(values) for parts in encoded.values() for values in parts.values())
    total = 0
    warm: tuple[float, float, int] | None = None
    for s in range(0, rounds, step):
        for name, parts in encoded.items():
            for p, values in parts.items():
                chunk = values[s : s + step]
                if not chunk:
                    continue
                if fmt == "json":
                    offsets = range(s, s + len(chunk))
                    batch, _ = decode_json(name, chunk, [p] * len(chunk), offsets, schemas[name])
                else:
                    batch = Batch.concat([decode_columnar(v, schemas[name].names) for v in chunk])
                instance.feed(name, p, batch)
                total += len(batch)
        for results in instance.poll():
            encode_results_json(results)
        if warm is None and total >= WARM_UP * everything:
            warm = (time.perf_counter(), time.process_time(), total)
    assert warm is not None
    wall, cpu = time.perf_counter() - warm[0], time.process_time() - warm[1]
    return Rate((total - warm[2]) / wall, (total - warm[2]) / cpu)


def batch_records(fmt: str) -> int:
    """Records per (input, partition) of a worker consume and of an in-process poll:
    `BATCH_EVENTS` events."""
    return BATCH_EVENTS if fmt == "json" else BATCH_EVENTS // CHUNK


def worker_rates(
    stack: Services,
    plan_name: str,
    encoded: dict[str, dict[int, list[bytes]]],
    fmt: str,
    total: int,
    repeats: int,
) -> list[Rate]:
    """The input produced once, then read `repeats` times, each by a fresh worker (its own
    consumer group, transactional id and output topics): one `Rate` per worker."""
    run = f"bench-{uuid.uuid4().hex[:6]}"
    topics = {name: f"{run}-{name}" for name in encoded}
    create_topics(stack, list(topics.values()))
    try:
        producer = Producer(
            {"bootstrap.servers": stack.kafka, "linger.ms": 20, "enable.idempotence": True}
        )
        for name, parts in encoded.items():
            for p, values in parts.items():
                for value in values:
                    send(producer, topics[name], value, p)
        producer.flush(120)
        return [
            _worker_rate(stack, run, plan_name, list(encoded), fmt, total, f"try{attempt}")
            for attempt in range(repeats)
        ]
    finally:
        delete_topics(stack, list(topics.values()))


def _worker_rate(
    stack: Services,
    run: str,
    plan_name: str,
    inputs: list[str],
    fmt: str,
    total: int,
    namespace: str,
) -> Rate:
    """One worker reading the whole input of `run` from the start, in `namespace`."""
    out = f"{run}-{namespace}-out"
    create_topics(stack, [out, f"{out}.dead"])
    batch = str(batch_records(fmt) * len(inputs) * PARTITIONS)  # records of every position
    sinks = json.dumps([{"name": "out", "topic": out, "partitions": PARTITIONS}])
    env = worker_env(
        stack,
        run,
        plan_name,
        inputs,
        fmt,
        STREAMSHIFT_BATCH_SIZE=batch,
        STREAMSHIFT_NAMESPACE=namespace,
        STREAMSHIFT_S3_PREFIX=f"{run}/{namespace}/",
        STREAMSHIFT_SINKS=sinks,
        STREAMSHIFT_DEAD_LETTER_TOPIC=f"{out}.dead",
    )
    process = start(env, "worker")
    broker = stack_pid("kafka")
    try:
        wait_ready(env, process, 300)
        deadline = time.monotonic() + 300
        warm: Sample | None = None
        seen: dict[str, Any] = {}
        while time.monotonic() < deadline and process.poll() is None:
            try:
                seen = status(env)
                count = int(seen["counts"]["events_in"])
            except (OSError, RuntimeError):
                continue
            sample = Sample(time.monotonic(), count, cpu_seconds(process.pid), _process_cpu(broker))
            if warm is None and count >= WARM_UP * total:
                warm = sample
            if count >= total and warm is not None:
                if count == warm.count:
                    raise SystemExit(f"{plan_name} {fmt}: too few events to see a steady rate")
                return _rate(warm, sample)
            time.sleep(STATUS_EVERY_S)
        raise SystemExit(
            f"{plan_name} {fmt}: the worker did not consume all {total} events "
            f"(exit code {process.poll()}); its last status: {seen}; "
            f"its log: {log_of(env, 'worker')}"
        )
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)
        delete_topics(stack, [out, f"{out}.dead"])


@dataclass(frozen=True)
class Sample:
    """One status poll of a worker run: when, the events it had read, its CPU times, and the
    broker's CPU seconds (None when unknown)."""

    at: float
    count: int
    cpu: CpuTimes
    broker_cpu: float | None


def _rate(warm: Sample, end: Sample) -> Rate:
    """The worker's rate over the events read between the warm-up mark and the end."""
    counted = end.count - warm.count
    # The Kafka clients' threads fetch ahead of the loop (up to the consumer's queue, tens of
    # MB), much of it before the warm-up mark: their CPU is taken over the whole run, the
    # measured events' share of it.
    fetching = end.cpu.kafka * counted / end.count
    own = (end.cpu.total - end.cpu.kafka) - (warm.cpu.total - warm.cpu.kafka)
    spent = max(own + fetching, 1e-9)
    broker = None
    if end.broker_cpu is not None and warm.broker_cpu is not None:
        broker = (end.broker_cpu - warm.broker_cpu) / counted
    return Rate(
        counted / (end.at - warm.at),
        counted / spent,
        fetching / spent,
        end.cpu.kafka_kernel / max(end.cpu.kafka, 1e-9),
        broker,
    )


def cpu_seconds(pid: int) -> CpuTimes:
    """A process's CPU times, from /proc (every thread's, and its Kafka clients' threads')."""
    user, system = cpu_of(Path(f"/proc/{pid}/stat").read_text())
    kafka = kafka_kernel = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        if text[text.index("(") + 1 : text.rindex(")")].startswith("rdk:"):
            thread_user, thread_system = cpu_of(text)
            kafka += thread_user + thread_system
            kafka_kernel += thread_system
    return CpuTimes(user + system, kafka, kafka_kernel)


def _process_cpu(pid: int | None) -> float | None:
    """User plus system CPU seconds of a process, None without one (no pid, or it ended)."""
    try:
        return None if pid is None else sum(cpu_of(Path(f"/proc/{pid}/stat").read_text()))
    except OSError:
        return None


def cpu_of(stat: str) -> tuple[float, float]:
    """User and system CPU seconds of a /proc `stat` line."""
    fields = stat.rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def generator(plan: Plan) -> GeneratorConfig:
    """The default Nexmark mix; for a plan that reads no bids, one bid in five events instead of
    46 in 50, at a rate that keeps the event-time density of persons and auctions (the bids it
    would drop are most of what the generator makes and holds)."""
    config = GeneratorConfig(partitions=PARTITIONS)
    if any(spec.name == "bid" for spec in plan.inputs):
        return config
    thin = dataclasses.replace(config, bid_proportion=1)
    rate = config.events_per_second * thin.total_proportion // config.total_proportion
    return dataclasses.replace(thin, events_per_second=rate)


def _share(config: GeneratorConfig, kind: str) -> float:
    """The fraction of generated events that are of `kind`."""
    parts = {
        "person": config.person_proportion,
        "auction": config.auction_proportion,
        "bid": config.bid_proportion,
    }
    return parts[kind] / config.total_proportion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--events", type=int, default=1_500_000, help="events each query reads (about)"
    )
    parser.add_argument("--queries", nargs="+", default=["nexmark-q5", "nexmark-q8"])
    parser.add_argument("--quick", action="store_true", help="small inputs, short flows")
    parser.add_argument(
        "--large-state-only",
        action="store_true",
        help="only the q8 large-state downtime comparison (prints savepoint-vs-best)",
    )
    parser.add_argument(
        "--gaps-only",
        action="store_true",
        help="only the q5 migrations, `--rounds` times: each protocol's gap ratios, median, worst",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of the q5 migrations (medians reported)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        help="runs of the worker and of the in-process engine per case, the best of each kept",
    )
    parser.add_argument(
        "--throughput-only",
        action="store_true",
        help="only the worker-vs-in-process rates (prints kafka-vs-inproc-json and -columnar)",
    )
    args = parser.parse_args()
    _arenas.keep(ARENA_CACHE_MB << 20)
    stack = services()
    if args.large_state_only:
        print(f"runtime savepoint-vs-best={large_state(stack, args.quick):.1f}")
        return
    if args.gaps_only:
        gap_rounds(stack, args.quick, args.rounds)
        return
    count = 200_000 if args.quick else args.events
    throughput = throughput_ratios(stack, args.queries, count, args.repeats)
    if args.throughput_only:
        print(
            f"runtime kafka-vs-inproc-json={throughput['json']:.2f} "
            f"kafka-vs-inproc-columnar={throughput['columnar']:.2f}"
        )
        return
    gaps, pause = gap_rounds(stack, args.quick, args.rounds)
    savepoint_vs_best = large_state(stack, args.quick)
    print(
        f"runtime gap-ratio unimico={gaps['unimico']:.2f} "
        f"parallel-track={gaps['parallel-track']:.2f} "
        f"state-transfer-pause={pause:.2f} savepoint-vs-best={savepoint_vs_best:.1f} "
        f"kafka-vs-inproc-json={throughput['json']:.2f} "
        f"kafka-vs-inproc-columnar={throughput['columnar']:.2f}"
    )


def throughput_ratios(
    stack: Services, queries: list[str], count: int, repeats: int
) -> dict[str, float]:
    """Per format, the lower worker-to-in-process ratio (per CPU second) over the queries, each
    side's best of `repeats` runs."""
    ratios: dict[str, list[float]] = {"json": [], "columnar": []}
    for plan_name in queries:
        plan = builtin(plan_name)
        config = generator(plan)
        share = sum(_share(config, spec.name) for spec in plan.inputs)
        for fmt in ("json", "columnar"):
            scale = COLUMNAR_SCALE if fmt == "columnar" else 1
            events = generate(1, 0, int(count * scale / share), config)
            encoded = {spec.name: records(events[spec.name], fmt) for spec in plan.inputs}
            total = sum(len(events[spec.name]) for spec in plan.inputs)
            engine = [in_process(plan_name, encoded, fmt, total)]
            workers = worker_rates(stack, plan_name, encoded, fmt, total, repeats)
            engine += [in_process(plan_name, encoded, fmt, total) for _ in range(repeats - 1)]
            inproc, worker = (max(runs, key=lambda r: r.cpu) for runs in (engine, workers))
            ratios[fmt].append(worker.cpu / inproc.cpu)
            print(
                f"{plan_name} {fmt}: events={total} in-process={inproc.wall:,.0f}/s "
                f"worker={worker.wall:,.0f}/s ratio={worker.wall / inproc.wall:.2f} "
                f"(per CPU second: in-process={inproc.cpu:,.0f} worker={worker.cpu:,.0f} "
                f"ratio={worker.cpu / inproc.cpu:.2f}; the worker's Kafka client threads "
                f"{worker.kafka_share:.0%} of its CPU ({worker.kafka_kernel:.0%} of theirs in "
                f"the kernel), which alone cap the ratio at {_client_cap(inproc, worker):.2f}; "
                f"{_per_event(inproc, worker)}; per CPU second over the {repeats} runs: "
                f"in-process {_spread(engine)}, worker {_spread(workers)})",
                flush=True,
            )
    return {fmt: min(values) for fmt, values in ratios.items()}


def _client_cap(inproc: Rate, worker: Rate) -> float:
    """The per-CPU-second ratio a worker would reach if its loop cost exactly what the
    in-process engine does per event and only its Kafka client threads came on top (their CPU
    per event: receiving and parsing the records, sending the results)."""
    engine_s, client_s = 1 / inproc.cpu, worker.kafka_share / worker.cpu
    return engine_s / (engine_s + client_s)


def _per_event(inproc: Rate, worker: Rate) -> str:
    """CPU microseconds an event: the engine in process, the worker's own threads (its loop,
    commit thread and control API) and its Kafka client threads, the broker's if known."""
    own = (1 - worker.kafka_share) / worker.cpu
    parts = [
        f"CPU us an event: engine in process {1e6 / inproc.cpu:.2f}",
        f"worker's own threads {1e6 * own:.2f}",
        f"its Kafka client threads {1e6 * worker.kafka_share / worker.cpu:.2f}",
    ]
    if worker.broker_cpu is not None:
        parts.append(f"the broker {1e6 * worker.broker_cpu:.2f}")
    return ", ".join(parts)


def _spread(rates: list[Rate]) -> str:
    return " ".join(f"{rate.cpu / 1e3:,.0f}K" for rate in rates)


def q5_migrations(stack: Services, quick: bool) -> tuple[dict[str, float], float]:
    """q5 with input flowing: each protocol's gap ratio against the run without migration, and
    state-transfer's pause."""
    rate, seconds = (4000.0, 15) if quick else (8000.0, 25)
    q5 = migration.q5_scenario(int(rate * seconds), rate, speedup=4.0, migrate_at=3.0)
    baseline = migration.measure(stack, q5, None)
    print(f"q5 {migration.report(baseline, None)}", flush=True)
    gaps: dict[str, float] = {}
    pause = 0.0
    for protocol in migration.DRIVERS:
        outcome = migration.measure(stack, q5, protocol)
        print(f"q5 {migration.report(outcome, baseline)}", flush=True)
        gaps[protocol] = outcome.gap / baseline.gap
        if protocol == "state-transfer":
            pause = outcome.downtime
    return gaps, pause


def gap_rounds(stack: Services, quick: bool, rounds: int) -> tuple[dict[str, float], float]:
    """The q5 migrations `rounds` times, each round against its own run without migration:
    each protocol's ratios, their median and the worst, printed; the medians and
    state-transfer's median pause returned. A gap is the longest of ~45 pauses of about 0.5 s
    (a window's slide), so one window late anywhere in a run on two shared cores moves its
    ratio by 0.05-0.3; the median says what a migration does, the worst what a run can see."""
    seen: dict[str, list[float]] = {}
    pauses: list[float] = []
    for _ in range(rounds):
        gaps, pause = q5_migrations(stack, quick)
        pauses.append(pause)
        for protocol, ratio in gaps.items():
            seen.setdefault(protocol, []).append(ratio)
    for protocol, ratios in seen.items():
        print(
            f"q5 {protocol} gap-ratio over {rounds} rounds: "
            f"{' '.join(f'{r:.2f}' for r in ratios)} "
            f"(median {statistics.median(ratios):.2f}, worst {max(ratios):.2f})"
        )
    print(f"q5 state-transfer pause over {rounds} rounds: {' '.join(f'{s:.2f}' for s in pauses)}")
    medians = {protocol: statistics.median(ratios) for protocol, ratios in seen.items()}
    return medians, statistics.median(pauses)


def large_state(stack: Services, quick: bool) -> float:
    """q8 with a large state: savepoint-restart's downtime over the best of the protocols that
    move the state (state-transfer through S3, moving-state straight between the workers).
    UniMiCo and parallel-track move no state and have no downtime by design (the origin runs
    until the target takes over), so they are not the "best" here: a ratio to zero says
    nothing; the q5 runs give their gaps."""
    preload = 150_000 if quick else Q8_PRELOAD
    q8 = migration.q8_scenario(preload, preload // 20, rate=preload / 100)
    downtime = {}
    for protocol in ("state-transfer", "moving-state", "savepoint-restart"):
        outcome = migration.measure(stack, q8, protocol)
        print(
            f"q8 large state ({outcome.origin_state / 1e6:.0f} MB): "
            f"{migration.report(outcome, None)}",
            flush=True,
        )
        downtime[protocol] = outcome.downtime
    best = min(("state-transfer", "moving-state"), key=lambda p: downtime[p])
    ratio = downtime["savepoint-restart"] / downtime[best]
    print(
        f"q8 large state: savepoint-vs-best={ratio:.1f} (best state-moving protocol: {best}, "
        f"downtime {downtime[best]:.2f}s; unimico and parallel-track have none by design)",
        flush=True,
    )
    return ratio


if __name__ == "__main__":
    main()
