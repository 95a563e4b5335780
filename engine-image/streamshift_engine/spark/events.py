"""Nexmark events as Spark DataFrames: the oracle's input over a range of generator indices.

The engine's generator defines the events; chunks of the index range are generated in parallel
by `mapInArrow`. Each row carries its generator `index`, its key group `partition` and its
`offset`: the position among the events of its kind and partition from the range's first index
on, which is the Kafka offset when the range was produced into empty topics, and what the
engine's generator reports for a single call over the whole range.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import SCHEMAS

SPARK_TYPES = {"int": "bigint", "float": "double", "str": "string"}
CHUNK = 50_000


def _spark_schema(kind: str, columns: Sequence[str]) -> str:
    fields = dict(SCHEMAS[kind].fields)
    typed = [f"`{name}` {SPARK_TYPES[fields[name]]}" for name in columns]
    return ", ".join([*typed, "`index` bigint", "`partition` int"])


def kind_frame(
    spark: Any,
    seed: int,
    start_index: int,
    count: int,
    kind: str,
    columns: Sequence[str] | None = None,
    config: GeneratorConfig | None = None,
    with_offsets: bool = False,
) -> Any:
    """The events of one kind in `[start_index, start_index + count)`: the named payload
    columns (all by default) plus `index`, `partition` and, when asked, `offset`."""
    config = config or GeneratorConfig()
    names = list(columns) if columns is not None else list(SCHEMAS[kind].names)
    proportion = config.total_proportion
    end = start_index + count

    def run(chunks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for chunk_batch in chunks:
            for chunk in chunk_batch.column(0).to_pylist():
                first = start_index + chunk * CHUNK
                n = min(CHUNK, end - first)
                batch = generate(seed, first, n, config)[kind]
                indices = np.arange(first, first + n, dtype=np.int64)
                kind_indices = indices[_is_kind(indices % proportion, kind, config)]
                arrays = [pa.array(batch.columns[name]) for name in names]
                arrays += [pa.array(kind_indices), pa.array(batch.partition)]
                yield pa.RecordBatch.from_arrays(arrays, names=[*names, "index", "partition"])

    chunks = -(-count // CHUNK)
    tasks = max(1, min(chunks, 2 * spark.sparkContext.defaultParallelism))
    frame = spark.range(0, chunks, numPartitions=tasks).mapInArrow(run, _spark_schema(kind, names))
    if not with_offsets:
        return frame
    return add_offsets(frame)


def _is_kind(within: np.ndarray[Any, Any], kind: str, config: GeneratorConfig) -> Any:
    first_auction = config.person_proportion
    first_bid = first_auction + config.auction_proportion
    if kind == "person":
        return within < first_auction
    if kind == "auction":
        return (within >= first_auction) & (within < first_bid)
    return within >= first_bid


def add_offsets(frame: Any) -> Any:
    """Add `offset`: the rank by index within the partition, from 0."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rank = F.row_number().over(Window.partitionBy("partition").orderBy("index")) - 1
    return frame.withColumn("offset", rank.cast("bigint"))
