"""The seed queries' `S` and `T` streams (seed 000 (Pham et al., UniMiCo), section 4: tuples
`(ts, l, m)`), generated.

The Nexmark generator does not produce the seeds' streams, so this module defines them the same
way: every field of event `i` is a counter-based draw of `(seed, i)` (`nexmark.draws`), so any
index range can be generated on its own, by numpy for the engine or inside Spark tasks for the
oracle, with the same result. Event `i` belongs to `S` or `T` (one draw), has
`ts = (i // per_tick) * tick_ms` (so ties in time, within and across the streams, are common and
exercise the merge order), join key `l` in `[0, keys)` and value `m` in `[0, values)`. Its
partition is `mix64(l) % partitions` for both streams, so `S` and `T` are co-partitioned by `l`
as the engine's keyed join needs; its offset is its rank among the same stream's events of the
same partition from the range's first index on (the Kafka offset for a range produced into
empty topics).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamshift_engine.events.batch import Batch
from streamshift_engine.nexmark import draws
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.spark.events import add_offsets

STREAMS = ("S", "T")
SIDE, KEY, VALUE = 1, 2, 3
CHUNK = 200_000


@dataclass(frozen=True, slots=True)
class SeedStreamConfig:
    """Shape of the generated seed streams; the defaults give each `T` tuple about ten `S`
    partners in `Q1`'s 10 s range."""

    tick_ms: int = 25
    per_tick: int = 4
    keys: int = 160
    values: int = 100
    partitions: int = 8


def seed_streams(
    seed: int, start_index: int, count: int, config: SeedStreamConfig | None = None
) -> dict[str, Batch]:
    """The `S` and `T` events among indices `[start_index, start_index + count)`."""
    config = config or SeedStreamConfig()
    indices = np.arange(start_index, start_index + count, dtype=np.int64)
    side = draws.below(seed, SIDE, indices, 2)
    batches = {}
    for code, name in enumerate(STREAMS):
        own = indices[side == code]
        columns = _columns(seed, own, config)
        partition = _partition(columns["l"], config.partitions)
        batches[name] = Batch(name, columns["ts"], partition, _ranks(partition), columns)
    return batches


def _columns(
    seed: int, indices: npt.NDArray[np.int64], config: SeedStreamConfig
) -> dict[str, npt.NDArray[np.int64]]:
    return {
        "ts": (indices // config.per_tick) * config.tick_ms,
        "l": draws.below(seed, KEY, indices, config.keys),
        "m": draws.below(seed, VALUE, indices, config.values),
    }


def _partition(keys: npt.NDArray[np.int64], partitions: int) -> npt.NDArray[np.int32]:
    hashed = draws.mix64(keys.astype(np.uint64)) % np.uint64(partitions)
    return hashed.astype(np.int32)


def _ranks(partition: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
    """Each event's rank within its partition, in index order."""
    order = np.argsort(partition, kind="stable")
    sizes = np.bincount(partition)
    firsts = np.cumsum(sizes) - sizes
    offset = np.empty(len(partition), dtype=np.int64)
    offset[order] = np.arange(len(partition), dtype=np.int64) - firsts[partition[order]]
    return offset


def seed_frame(
    spark: Any,
    seed: int,
    start_index: int,
    count: int,
    name: str,
    columns: Sequence[str] | None = None,
    config: SeedStreamConfig | None = None,
    with_offsets: bool = False,
) -> Any:
    """The events of stream `name` as a DataFrame: the named columns of `(ts, l, m)` (all by
    default) plus `index`, `partition` and, when asked, `offset`; chunks generated in tasks."""
    config = config or SeedStreamConfig()
    names = list(columns) if columns is not None else list(SEED_SCHEMA)
    code = STREAMS.index(name)
    end = start_index + count

    def run(chunks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for chunk_batch in chunks:
            for chunk in chunk_batch.column(0).to_pylist():
                first = start_index + chunk * CHUNK
                indices = np.arange(first, min(first + CHUNK, end), dtype=np.int64)
                own = indices[draws.below(seed, SIDE, indices, 2) == code]
                values = _columns(seed, own, config)
                partition = _partition(values["l"], config.partitions)
                arrays = [pa.array(values[n]) for n in names]
                arrays += [pa.array(own), pa.array(partition)]
                yield pa.RecordBatch.from_arrays(arrays, names=[*names, "index", "partition"])

    schema = ", ".join([*(f"`{n}` bigint" for n in names), "`index` bigint", "`partition` int"])
    chunks = -(-count // CHUNK)
    tasks = max(1, min(chunks, 2 * spark.sparkContext.defaultParallelism))
    frame = spark.range(0, chunks, numPartitions=tasks).mapInArrow(run, schema)
    return add_offsets(frame) if with_offsets else frame
