"""Kafka sink: results and dead letters inside one transaction per commit, with input offsets.

The transactional id is the worker's (query, instance, epoch), so a restarted worker fences its
predecessor and aborts whatever it left open. Each commit sends the consumed input positions to
the query's consumer group inside the transaction (`send_offsets_to_transaction`): the output of
a commit and the input it covers become visible together, and a restarted worker knows exactly
which input its committed output already reflects. Results are keyed by their deterministic id
and go to the output partition of their key group (records built column-wise by the engine's
result encoder); dead letters carry the reason in a header.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
from confluent_kafka import Consumer, Producer, TopicPartition

from streamshift_engine.events.result_json import Part, encode_results_json
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, result_ids
from streamshift_engine.runtime.config import WorkerConfig
from streamshift_engine.runtime.source import Position, slots


class KafkaSink:
    """The transactional producer of one worker."""

    def __init__(
        self, config: WorkerConfig, timeout: float = 30.0, queue_records: int = 1_000_000
    ) -> None:
        self.config = config
        self.sink = config.sinks[0]
        self.topics = {s.name: s.topic for s in config.sources}
        self.timeout = timeout
        self.slots = slots(config)
        self.producer = Producer(
            {
                "bootstrap.servers": config.kafka_bootstrap,
                "transactional.id": config.writer,
                # Output is visible only once its transaction commits, and a commit sends what
                # waits at once: lingering up to the output commit interval delays nothing a
                # reader sees, and makes a produce request per commit rather than one every few
                # ms (a full batch, `batch.size`, still goes at once).
                "linger.ms": max(5, round(config.output_commit_interval_s * 1000)),
                # A failed record fails the commit, which is what the loop acts on: reports of
                # the records that arrived were work per record for no one.
                "delivery.report.only.error": True,
                "transaction.timeout.ms": 60000,
                "queue.buffering.max.messages": queue_records,
            }
        )
        self.producer.init_transactions(timeout)
        self.producer.begin_transaction()
        self.pending = 0

    def results(self, batches: Sequence[ResultBatch]) -> int:
        """Queue results in the open transaction: key = id, partition = key group mod n."""
        count = 0
        topic, n = self.sink.topic, self.sink.partitions
        for batch in batches:
            if not len(batch):
                continue
            keys = result_ids(batch)
            values = encode_results_json(batch, _Known(keys))
            ids: list[str] = keys.to_pylist()
            self._produce_all(topic, ids, values, (batch.partition % n).tolist())
            count += len(values)
        self.pending += count
        return count

    def dead_letters(self, letters: Sequence[DeadLetter]) -> None:
        for letter in letters:
            headers: list[tuple[str, str | bytes | None]] = [
                ("reason", letter.reason.encode()),
                ("source", letter.source.encode()),
                ("partition", str(letter.partition).encode()),
                ("offset", str(letter.offset // self.slots).encode()),
                ("event", str(letter.offset % self.slots).encode()),
            ]
            self.producer.produce(
                self.config.dead_letter_topic, letter.raw, key=None, headers=headers
            )
            self.producer.poll(0)
        self.pending += len(letters)

    def _produce_all(
        self, topic: str, keys: list[str], values: list[bytes], partitions: list[int]
    ) -> None:
        """Queue one record per result. The loop calls `produce` with positional arguments
        and no frame of its own per record (on q8, about one result in ten events, the
        per-record Python around `produce` was most of the sink's cost); a full queue is
        drained and the record tried again."""
        produce = self.producer.produce
        rows = zip(values, keys, partitions, strict=True)
        done = 0
        while True:
            try:
                for value, key, partition in rows:
                    produce(topic, value, key, partition)
                    done += 1
                return
            except BufferError:
                self.producer.poll(0.05)
                rows = zip(values[done:], keys[done:], partitions[done:], strict=True)

    def commit(
        self, positions: Mapping[Position, int], watermark: int | None, group: Consumer
    ) -> None:
        """Commit the open transaction with the input positions it covers and the watermark
        its output reached (offset metadata `event_offset:watermark`); open the next."""
        mark = "" if watermark is None else str(watermark)
        offsets = [
            TopicPartition(self.topics[name], p, event // self.slots, f"{event}:{mark}")
            for (name, p), event in sorted(positions.items())
        ]
        if offsets:
            metadata = group.consumer_group_metadata()
            self.producer.send_offsets_to_transaction(offsets, metadata, self.timeout)
        self.producer.commit_transaction(self.timeout)
        self.pending = 0
        self.producer.begin_transaction()

    def close(self) -> None:
        self.producer.abort_transaction(self.timeout)
        self.producer.flush(self.timeout)


class _Known:
    """Result ids built once, handed to the encoder (which would build them again) as its one
    id part."""

    def __init__(self, ids: pa.Array) -> None:
        self.ids = ids

    def __call__(self, _: ResultBatch) -> list[Part]:
        return [self.ids]
