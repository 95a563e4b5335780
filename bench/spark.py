"""`make bench-spark`: Spark generator throughput into the local Kafka, and oracle time.

On `local[2]` with the stack's Kafka (`make up`): the Nexmark generator writes `--events` events
through Spark's Kafka sink into fresh topics (8 partitions), in JSON (one event per record) and
in the columnar format (Arrow IPC, many events per record), with `GenerateSpec`'s defaults (one
Spark task on `local[2]`, see there). Each wire first writes `--warmup`
events (the JVM's JIT and the Python workers' imports make a first write cost more CPU than
the next), then `--repeats` measured writes; the rate reported is their
median, counted as events written per second of wall time, Spark job start included. Each run
also shows the CPU seconds of Spark's processes (JVM and Python workers, from /proc), which
stay meaningful when other work shares the cores, and the machine's 1-minute load average
after it. Then the oracle computes the reference of q5
and q8 over `--oracle-events` generator indices (10M by default); the time covers generation,
the Spark SQL query and collecting the results.
Anchor: about 100K events/s from Python producers inside Spark on these machines; goal 300K.
Final line: `spark gen-json=N gen-columnar=N oracle-q5-s=N oracle-q8-s=N`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka
from streamshift_engine.spark.kafka import bootstrap_servers, delete_topics, ensure_topics
from streamshift_engine.spark.oracle import generator_source, reference
from streamshift_engine.spark.session import spark_session

PARTITIONS = 8
KINDS = ("person", "auction", "bid")


def process_cpu_seconds() -> float:
    """CPU seconds used so far by this process's children and their descendants (Spark's JVM
    and its Python workers), reaped ones included, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    pending, total = [os.getpid()], 0.0
    while pending:
        pid = pending.pop()
        proc = Path(f"/proc/{pid}")
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            for task in (proc / "task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
        if pid != os.getpid():
            total += sum(int(f) for f in fields[11:15]) / tick
    return total


def generator_runs(
    spark: Any, bootstrap: str, wire: str, events: int, warmup: int, repeats: int
) -> list[tuple[float, float, float]]:
    """(events/s, Spark CPU seconds, load average) of `repeats` bounded generations after a
    warm-up, into fresh topics (deleted afterwards)."""
    prefix = f"bench-spark-{uuid.uuid4().hex[:6]}-"
    topics = {k: f"{prefix}{k}" for k in KINDS}
    ensure_topics(bootstrap, topics.values(), PARTITIONS)
    try:
        spec = GenerateSpec(1, 0, warmup, wire, topics=topics)  # type: ignore[arg-type]
        generate_to_kafka(spark, spec, bootstrap)
        runs = []
        for run in range(repeats):
            spec = spec.advanced(warmup + run * events, events)
            cpu, began = process_cpu_seconds(), time.perf_counter()
            generate_to_kafka(spark, spec, bootstrap)
            wall = time.perf_counter() - began
            runs.append((events / wall, process_cpu_seconds() - cpu, os.getloadavg()[0]))
        return runs
    finally:
        delete_topics(bootstrap, topics.values())


def oracle_seconds(spark: Any, query: str, events: int) -> tuple[float, int]:
    """Seconds for the oracle's reference of `query` over `events` indices, and its size."""
    began = time.perf_counter()
    results = reference(query, generator_source(spark, 1, 0, events))
    return time.perf_counter() - began, len(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=2_000_000, help="events per generator run")
    parser.add_argument("--warmup", type=int, default=500_000, help="events of the warm-up run")
    parser.add_argument("--repeats", type=int, default=3, help="measured runs per wire")
    parser.add_argument("--oracle-events", type=int, default=10_000_000)
    parser.add_argument("--bootstrap", help="Kafka bootstrap (default: the stack's)")
    args = parser.parse_args()
    bootstrap = bootstrap_servers(args.bootstrap)
    spark = spark_session()
    rates = {}
    for wire in ("json", "columnar"):
        runs = generator_runs(spark, bootstrap, wire, args.events, args.warmup, args.repeats)
        for rate, cpu, load in runs:
            print(
                f"generator {wire:8} {args.events} events: {rate:,.0f} events/s, "
                f"Spark CPU {cpu:.1f} s ({args.events / cpu:,.0f} events per CPU second), "
                f"load {load:.1f}"
            )
        rates[wire] = statistics.median(rate for rate, _, _ in runs)
    seconds = {}
    for query in ("nexmark-q5", "nexmark-q8"):
        seconds[query], size = oracle_seconds(spark, query, args.oracle_events)
        print(
            f"oracle {query} {args.oracle_events} events: {seconds[query]:.1f} s, "
            f"{size} results, load {os.getloadavg()[0]:.1f}"
        )
    print(
        f"spark gen-json={rates['json']:.0f} gen-columnar={rates['columnar']:.0f} "
        f"oracle-q5-s={seconds['nexmark-q5']:.1f} oracle-q8-s={seconds['nexmark-q8']:.1f}"
    )


if __name__ == "__main__":
    main()
