"""Nexmark events as Spark DataFrames: the oracle's input over a range of generator indices.

The engine's generator defines the events; chunks of the index range are generated in parallel
by `mapInArrow`. Each row carries its generator `index`, its key group `partition` and its
`offset`: the position among the events of its kind and partition in the range's arrival order
(`nexmark.arrival`; index order unless the config disorders events), which is the Kafka offset
when the range was produced into empty topics, and what the engine's generator reports for a
single call over the whole range. Disordered configs add `arrival`, the rank key of that order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from streamshift_engine.nexmark import arrival
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import SCHEMAS

SPARK_TYPES = {"int": "bigint", "float": "double", "str": "string"}
CHUNK = 50_000


def _spark_schema(kind: str, columns: Sequence[str], in_order: bool) -> str:
    fields = dict(SCHEMAS[kind].fields)
    typed = [f"`{name}` {SPARK_TYPES[fields[name]]}" for name in columns]
    extra = [] if in_order else ["`arrival` bigint"]
    return ", ".join([*typed, "`index` bigint", "`partition` int", *extra])


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
                kind_indices = kind_indices[arrival.arrival_order(seed, kind_indices, config)]
                arrays = [pa.array(batch.columns[name]) for name in names]
                arrays += [pa.array(kind_indices), pa.array(batch.partition)]
                labels = [*names, "index", "partition"]
                if not config.in_order:
                    arrays.append(pa.array(_arrival_key(seed, kind_indices, config)))
                    labels.append("arrival")
                yield pa.RecordBatch.from_arrays(arrays, names=labels)

    chunks = -(-count // CHUNK)
    tasks = max(1, min(chunks, 2 * spark.sparkContext.defaultParallelism))
    schema = _spark_schema(kind, names, config.in_order)
    frame = spark.range(0, chunks, numPartitions=tasks).mapInArrow(run, schema)
    if not with_offsets:
        return frame
    return add_offsets(frame)


def _arrival_key(seed: int, indices: np.ndarray[Any, Any], config: GeneratorConfig) -> Any:
    """Per event, `2 * slot + late`: with the index, the generator's arrival order."""
    slot, late = arrival.slots(seed, indices, config)
    return slot * 2 + late


def _is_kind(within: np.ndarray[Any, Any], kind: str, config: GeneratorConfig) -> Any:
    first_auction = config.person_proportion
    first_bid = first_auction + config.auction_proportion
    if kind == "person":
        return within < first_auction
    if kind == "auction":
        return (within >= first_auction) & (within < first_bid)
    return within >= first_bid


def add_offsets(frame: Any) -> Any:
    """Add `offset`: the rank in arrival order (`arrival`, then `index`; by `index` alone where
    there is no `arrival`) within the partition, from 0."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = ["arrival", "index"] if "arrival" in frame.columns else ["index"]
    rank = F.row_number().over(Window.partitionBy("partition").orderBy(*order)) - 1
    return frame.withColumn("offset", rank.cast("bigint"))
