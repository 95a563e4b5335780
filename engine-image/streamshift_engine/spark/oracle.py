"""The reference oracle: a query's exact output computed by Spark, and the check of a real output.

`reference` runs the Spark SQL form of a query (`queries`) over a `Source`: the events of a range
of generator indices (`generator_source`) or the committed records of JSON input topics read by
Spark's Kafka source (`kafka_source`); it returns `id -> value fields`. `verify` reads the
query's output topic `read_committed` and compares (`compare`). The engine plays no part in the
reference: only the generator (the definition of the input) is shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.model import SCHEMAS
from streamshift_engine.plan.builtin import SEED_SCHEMA, builtin
from streamshift_engine.spark.compare import Report, compare
from streamshift_engine.spark.events import SPARK_TYPES, kind_frame
from streamshift_engine.spark.kafka import decode_results, read_committed
from streamshift_engine.spark.queries import NEXMARK_QUERIES, Source
from streamshift_engine.spark.seed_queries import SEED_QUERIES
from streamshift_engine.spark.seed_streams import STREAMS, SeedStreamConfig, seed_frame

QUERIES = {**NEXMARK_QUERIES, **SEED_QUERIES}
"""Every query the oracle covers: Nexmark q0-q3, q5, q7, q8, SMQ and the seeds' q1-q3."""


def generator_source(
    spark: Any,
    seed: int,
    start_index: int,
    count: int,
    config: GeneratorConfig | None = None,
    seed_config: SeedStreamConfig | None = None,
) -> Source:
    """Events of generator indices `[start_index, start_index + count)`, as a query reads them:
    Nexmark kinds from the Nexmark generator, the seeds' `S` and `T` from `seed_streams`."""

    def source(kind: str, columns: Sequence[str] | None, with_offsets: bool) -> Any:
        if kind in STREAMS:
            return seed_frame(
                spark, seed, start_index, count, kind, columns, seed_config, with_offsets
            )
        return kind_frame(spark, seed, start_index, count, kind, columns, config, with_offsets)

    return source


def reference_frame(query: str, source: Source) -> Any:
    """The reference result DataFrame (`id` and the value columns) of a covered query."""
    if query not in QUERIES:
        raise KeyError(f"the oracle does not cover {query!r}; it covers {', '.join(QUERIES)}")
    return QUERIES[query](source)


def reference(query: str, source: Source) -> dict[str, dict[str, Any]]:
    """`id -> value fields` of every reference result."""
    rows = reference_frame(query, source).toArrow().to_pylist()
    results: dict[str, dict[str, Any]] = {}
    for row in rows:
        rid = row.pop("id")
        if rid in results:
            raise AssertionError(f"reference of {query} holds {rid} twice")
        results[rid] = row
    return results


def key_names(query: str) -> tuple[str, ...]:
    """The result key fields of a built-in query (what its ids are made of)."""
    return builtin(query).result_keys


def check(
    query: str, expected: Mapping[str, Mapping[str, Any]], output: Iterable[Mapping[str, Any]]
) -> Report:
    """Compare output records with a computed reference."""
    return compare(expected, output, query, key_names(query))


def verify(
    query: str, source: Source, bootstrap: str, topic: str, timeout_s: float = 60.0
) -> Report:
    """Compare the committed records of `topic` with the reference of `query` over `source`."""
    expected = reference(query, source)
    output = decode_results(read_committed(bootstrap, topic, timeout_s))
    return check(query, expected, output)


def kafka_source(
    spark: Any, bootstrap: str, topics: Mapping[str, str], ending: Mapping[str, str] | None = None
) -> Source:
    """Events read back from JSON topics (`kind -> topic`: Nexmark kinds, the seeds' `S` and
    `T`) by Spark's Kafka source, committed records only, from the earliest offsets to
    `ending[kind]` (Spark's offsets JSON, default `latest`). `partition` and `offset` are the
    Kafka ones; values are parsed by Spark itself."""
    from pyspark.sql import functions as F

    def source(kind: str, columns: Sequence[str] | None, with_offsets: bool) -> Any:
        fields = dict(SEED_SCHEMA) if kind in STREAMS else dict(SCHEMAS[kind].fields)
        names = list(columns) if columns is not None else list(fields)
        schema = ", ".join(f"`{n}` {SPARK_TYPES[fields[n]]}" for n in fields)
        raw = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("kafka.isolation.level", "read_committed")
            .option("subscribe", topics[kind])
            .option("startingOffsets", "earliest")
            .option("endingOffsets", (ending or {}).get(kind, "latest"))
            .load()
        )
        event = F.from_json(F.col("value").cast("string"), schema).alias("e")
        parsed = raw.select(event, "partition", "offset")
        return parsed.select(*(F.col(f"e.`{n}`").alias(n) for n in names), "partition", "offset")

    return source
