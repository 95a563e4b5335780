"""`make bench-spark`: Spark generator throughput into the local Kafka, and oracle time.

On `local[2]` with the stack's Kafka (`make up`): the Nexmark generator writes `--events` events
through Spark's Kafka sink into fresh topics (8 partitions), once in JSON (one event per record)
and once in the columnar format (Arrow IPC, many events per record), after a small warm-up write.
Rates count events written per second of wall time, Spark job start included. Then the oracle
computes the reference of q5 and q8 over `--oracle-events` generator indices (10M by default);
the time covers generation, the Spark SQL query and collecting the results.
Anchor: about 100K events/s from Python producers inside Spark on these machines; goal 300K.
Final line: `spark gen-json=N gen-columnar=N oracle-q5-s=N oracle-q8-s=N`.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from streamshift_engine.spark.generator import GenerateSpec, generate_to_kafka
from streamshift_engine.spark.kafka import bootstrap_servers, delete_topics, ensure_topics
from streamshift_engine.spark.oracle import generator_source, reference
from streamshift_engine.spark.session import spark_session

PARTITIONS = 8
KINDS = ("person", "auction", "bid")


def generator_rate(spark: Any, bootstrap: str, wire: str, events: int) -> float:
    """Events/s of one bounded generation into fresh topics (deleted afterwards)."""
    prefix = f"bench-spark-{uuid.uuid4().hex[:6]}-"
    topics = {k: f"{prefix}{k}" for k in KINDS}
    ensure_topics(bootstrap, topics.values(), PARTITIONS)
    try:
        warm = GenerateSpec(1, 0, 20_000, wire, topics=topics)  # type: ignore[arg-type]
        generate_to_kafka(spark, warm, bootstrap)
        spec = warm.advanced(20_000, events)
        began = time.perf_counter()
        generate_to_kafka(spark, spec, bootstrap)
        return events / (time.perf_counter() - began)
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
    parser.add_argument("--oracle-events", type=int, default=10_000_000)
    parser.add_argument("--bootstrap", help="Kafka bootstrap (default: the stack's)")
    args = parser.parse_args()
    bootstrap = bootstrap_servers(args.bootstrap)
    spark = spark_session()
    rates = {}
    for wire in ("json", "columnar"):
        rates[wire] = generator_rate(spark, bootstrap, wire, args.events)
        print(f"generator {wire:8} {args.events} events: {rates[wire]:,.0f} events/s")
    seconds = {}
    for query in ("nexmark-q5", "nexmark-q8"):
        seconds[query], size = oracle_seconds(spark, query, args.oracle_events)
        print(f"oracle {query} {args.oracle_events} events: {seconds[query]:.1f} s, {size} results")
    print(
        f"spark gen-json={rates['json']:.0f} gen-columnar={rates['columnar']:.0f} "
        f"oracle-q5-s={seconds['nexmark-q5']:.1f} oracle-q8-s={seconds['nexmark-q8']:.1f}"
    )


if __name__ == "__main__":
    main()
