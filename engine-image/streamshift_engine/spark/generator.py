"""The Nexmark generator distributed by Spark and written through Spark's own Kafka data source.

The engine's `nexmark.generator.generate` is the definition of the events; Spark only
distributes it. Every Kafka partition must keep the generator's arrival order, so a Spark task
owns whole Kafka partitions (`partition % tasks == task`) and walks the range in chunks, keeping
its own partitions' events: no two tasks ever write to one Kafka partition, and within a task the
records leave in arrival order: index (event-time) order by default; with out-of-order groups or
late events (`nexmark.arrival`) a chunk is a window of arrival slots
(`generator.generate_arriving`), so the chunks one after the other are the whole range's order.

Records: in `json` one event per record (the bytes of `wire.encode_json`, kept as an Arrow array
by `event_json`), keyed by the kind's key field (bids by auction, auctions by seller, persons by
id); in `columnar` one Arrow IPC stream per chunk, kind and partition (`wire.encode_columnar`),
keyed by the partition number. The Kafka partition of a record is the engine's key group
(`Batch.partition`), written explicitly. A task hands Spark one Arrow batch a chunk, all kinds
together.

Every task generates every chunk, in both formats: that costs some CPU per event for each extra
task, while generating each chunk once and shuffling the encoded records to their owning task
costs more, as the shuffle writes, reads and sorts the records' bytes (in both formats the string
columns dominate them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.event_json import encode_events_json
from streamshift_engine.events.wire import encode_columnar
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate, generate_arriving
from streamshift_engine.nexmark.model import KEY_FIELDS

Wire = Literal["json", "columnar"]
RECORD_SCHEMA = "topic string, partition int, key binary, value binary"
DEFAULT_CHUNKS: Mapping[str, int] = {"json": 50_000, "columnar": 20_000}
"""JSON: larger calls cost less per event (about 15% less Python time at 50K than at 20K);
columnar: 20K indices keep a record (about 2,300 bids of one partition) far below Kafka's
default 1 MB message limit."""
DEFAULT_TOPICS: Mapping[str, str] = {
    "person": "nexmark-person",
    "auction": "nexmark-auction",
    "bid": "nexmark-bid",
}


@dataclass(frozen=True, slots=True)
class GenerateSpec:
    """One bounded generation: which events, in which wire format, to which topics."""

    seed: int
    start_index: int
    count: int
    wire: Wire = "json"
    config: GeneratorConfig = field(default_factory=GeneratorConfig)
    topics: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TOPICS))
    tasks: int = 1
    """Spark tasks, each owning the Kafka partitions `p % tasks == task`. One on `local[2]`:
    its Python worker (generate, encode) and its JVM thread (Arrow to rows, Kafka producer)
    already run side by side on the two cores, and every extra task generates every chunk
    again (measured: about 1 us of Spark CPU an event more with two tasks). More on a cluster
    with more cores than that."""
    chunk: int = 0
    """Indices per `generate` call; in `columnar` also the most events of one record. 0 takes
    the wire's default (`DEFAULT_CHUNKS`)."""

    def __post_init__(self) -> None:
        if self.chunk == 0:
            object.__setattr__(self, "chunk", DEFAULT_CHUNKS.get(self.wire, 1))
        if self.tasks < 1 or self.chunk < 1:
            raise ValueError("tasks and chunk must be at least 1")
        if self.wire not in ("json", "columnar"):
            raise ValueError(f"unknown wire format {self.wire!r}")

    def advanced(self, start_index: int, count: int) -> GenerateSpec:
        """The same generation over another index range."""
        return GenerateSpec(
            self.seed,
            start_index,
            count,
            self.wire,
            self.config,
            self.topics,
            self.tasks,
            self.chunk,
        )


def task_records(spec: GenerateSpec, task: int) -> Iterator[pa.RecordBatch]:
    """The Kafka records of the partitions owned by `task`, one Arrow batch a chunk, in arrival
    order."""
    end = spec.start_index + spec.count
    for start in range(spec.start_index, end, spec.chunk):
        stop = min(start + spec.chunk, end)
        if spec.config.in_order:
            batches = generate(spec.seed, start, stop - start, spec.config)
        else:
            batches = generate_arriving(
                spec.seed, spec.start_index, spec.count, start, stop, spec.config
            )
        parts = []
        for kind, batch in batches.items():
            own = batch.take(batch.partition % spec.tasks == task)
            if len(own):
                parts.append(_records(spec, kind, own))
        if parts:
            yield pa.Table.from_batches(parts).combine_chunks().to_batches()[0]


def _records(spec: GenerateSpec, kind: str, batch: Batch) -> pa.RecordBatch:
    if spec.wire == "json":
        keys = pc.cast(pc.cast(batch.columns[KEY_FIELDS[kind]], pa.string()), pa.binary())
        values = pc.cast(encode_events_json(batch), pa.binary())
        partitions = pa.array(batch.partition, pa.int32())
    else:
        grouped = batch.take(np.argsort(batch.partition, kind="stable"))
        present, firsts = np.unique(grouped.partition, return_index=True)
        bounds = [*firsts.tolist(), len(grouped)]
        groups = [grouped.take(slice(a, b)) for a, b in pairwise(bounds)]
        keys = pa.array([str(p).encode() for p in present.tolist()], pa.binary())
        values = pa.array([encode_columnar(g) for g in groups], pa.binary())
        partitions = pa.array(present, pa.int32())
    topic = pa.repeat(pa.scalar(spec.topics[kind], pa.string()), len(values))
    return pa.RecordBatch.from_arrays(
        [topic, partitions, keys, values], names=["topic", "partition", "key", "value"]
    )


def records_frame(spark: Any, spec: GenerateSpec) -> Any:
    """A DataFrame `(topic, partition, key, value)` of the spec's records; each Kafka partition's
    records in one Spark partition, in index order."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for tasks in batches:
            for task in tasks.column(0).to_pylist():
                yield from task_records(spec, task)

    owners = spark.range(0, spec.tasks, numPartitions=spec.tasks)
    return owners.mapInArrow(run, RECORD_SCHEMA)


PRODUCER_OPTIONS: Mapping[str, str] = {
    "enable.idempotence": "true",
    "acks": "all",
    "linger.ms": "20",
    "batch.size": "1048576",
    "max.request.size": "8388608",
    "compression.type": "lz4",
}
"""The Kafka sink's producer settings: idempotent and ordered, large batches. Measured on this
machine (Spark CPU an event): no compression saved the JVM about 0.3 us a JSON event, but the
broker (whose CPU the other users' traffic blurred) then stores and checks twice the bytes
(lz4 halves a partition's JSON records, and its columnar ones by 1.7); acks=1 without
idempotence, and linger 5 ms with 256 KB batches, changed nothing beyond the noise."""


def write_kafka(frame: Any, bootstrap: str) -> None:
    """Write a records frame through Spark's Kafka sink with `PRODUCER_OPTIONS`."""
    writer = frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for name, value in PRODUCER_OPTIONS.items():
        writer = writer.option(f"kafka.{name}", value)
    writer.save()


def generate_to_kafka(spark: Any, spec: GenerateSpec, bootstrap: str) -> int:
    """Run one bounded generation into Kafka; the number of events written."""
    write_kafka(records_frame(spark, spec), bootstrap)
    return spec.count
