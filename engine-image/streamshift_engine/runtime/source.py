"""Kafka source: explicitly assigned partitions, batched consume and decode, exact positions.

Positions are *event offsets*: for JSON (one event per record) the Kafka offset itself, so result
ids that name input records match any reader's; for the columnar format (many events per record)
`kafka_offset * SLOTS + index` of the event inside its record, so a position between the events
of one record is exact: seeking to it reads the record again and skips the events before it. The
group offsets committed with the output use the Kafka offset and keep the event offset and the
instance's watermark in their metadata. No group membership: the operator assigns partitions.

Records are read by `_fastconsume` (C) from the confluent-kafka Consumer's own librdkafka handle:
values and packed partitions, offsets and topic indices, no Python object per record besides its
value; everything else (assignment, seeks, pause and resume, commits, offset look-ups) goes
through confluent-kafka on the same handle. Values are never copied out: msgspec decodes a JSON
record, and Arrow a columnar one, where the consumer holds it (a `Payload`); `read` returns the
records undecoded, and the loop may hold several consumes' records (`Consumes`) for one
`decode`, which returns only what was decoded (copies of the columns read), so no record
outlives it (librdkafka's close waits for records still held: the loop drops what it holds
before `close`). Copying a large columnar record out as bytes costs the
loop more CPU (page faults of fresh memory and the copy) than the rest of its consume.

Every fetch tells the loop's `Progress` (liveness) which partitions it returned records of and,
for those it read and returned none of, whether input waited on them: the loop is not alive when
it stops fetching, or when input waits on a partition and no fetch returns it. A columnar record
that does not decode is a dead letter, as a malformed JSON record is, never an error that stops
the worker; so is a record longer than `max_record_bytes` (STREAMSHIFT_MAX_RECORD_BYTES), which is
neither decoded nor fed: the bound is on records, a columnar record's events go with it.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from streamshift_engine.events.batch import Batch
from streamshift_engine.events.chained import Chained
from streamshift_engine.events.wire import DeadLetter, decode_columnar, decode_json
from streamshift_engine.runtime import _fastconsume
from streamshift_engine.runtime._fastconsume import Payload
from streamshift_engine.runtime.config import WorkerConfig
from streamshift_engine.runtime.dead_letters import oversize
from streamshift_engine.runtime.liveness import Progress

COLUMNAR_SLOTS = 1 << 20
FETCH_MAX_BYTES = 8 << 20
PARTITION_FETCH_MAX_BYTES = 2 << 20
PARTITION_FETCH_MIN_BYTES = 64 << 10
CLIENT_ID = "streamshift-source"  # `_fastconsume` checks the handle it reads is named so
Position = tuple[str, int]
Records = tuple[npt.NDArray[np.int64], Collection[Payload]]  # a position's Kafka offsets, values


SPLIT_MARK = ":split"  # ends a committed offset's metadata while a hand-off splits the output


@dataclass(frozen=True)
class Committed:
    """What committed output covers of one (input, partition): the event offset reached and
    the committing instance's watermark then (None before it had one)."""

    event_offset: int
    watermark: int | None
    split: bool = False  # its committer split the output with a hand-off's target (`published`)


class Consumes:
    """The records of consecutive consumes, not yet decoded: per (input, partition) each
    consume's Kafka offsets and values, decoded together (`KafkaSource.decode`: the loop's
    mini-batch hold, `runtime.loop`). Which consume read each record, and in what order each
    consume returned its positions, is kept: dead letters come in the order that decoding
    consume by consume gives them (`in_order`), and the loop's read-back index keeps an entry
    per consume (`firsts`, `Worker.starts`)."""

    def __init__(self) -> None:
        self.parts: dict[Position, list[tuple[int, Records]]] = {}  # (consume index, records)
        self.ranks: list[dict[Position, int]] = []  # per consume, its positions in their order
        self.records = 0

    def __bool__(self) -> bool:
        return self.records > 0

    def add(self, fetched: Mapping[Position, Records]) -> None:
        """One consume's records (`KafkaSource.read`); one that read none leaves no trace."""
        if not fetched:
            return
        index = len(self.ranks)
        self.ranks.append({position: rank for rank, position in enumerate(fetched)})
        for position, records in fetched.items():
            self.parts.setdefault(position, []).append((index, records))
            self.records += len(records[0])

    def follows(self, fetched: Mapping[Position, Records]) -> bool:
        """Whether every position of `fetched` reads on past the records held of it (and not
        again from further back, as a consumer's offset reset would)."""
        for position, (offsets, _) in fetched.items():
            held = self.parts.get(position)
            if held and offsets[0] <= held[-1][1][0][-1]:
                return False
        return True

    def joined(self) -> Iterator[tuple[Position, Records]]:
        """Per (input, partition), the records of all consumes, in offset order: the values of
        several consumes `Chained`, not copied into one list."""
        for position, parts in self.parts.items():
            if len(parts) == 1:
                yield position, parts[0][1]
            else:
                offsets = np.concatenate([records[0] for _, records in parts])
                yield position, (offsets, Chained([records[1] for _, records in parts]))

    def ends(self, slots: int) -> dict[Position, int]:
        """Per position held, the event offset after its last record held."""
        return {p: (int(parts[-1][1][0][-1]) + 1) * slots for p, parts in self.parts.items()}

    def firsts(self, position: Position, slots: int) -> npt.NDArray[np.int64]:
        """The event offset of each consume's first record of `position`, in consume order."""
        parts = self.parts.get(position, [])
        return np.array([int(records[0][0]) for _, records in parts], np.int64) * slots

    def in_order(self, letters: list[DeadLetter], slots: int) -> list[DeadLetter]:
        """`letters` of records held here (each position's in offset order, as a decode or a
        feed gives them) in the order consume by consume would give them: by the consume that
        read the record, then by its position's rank in that consume (a stable sort: each
        position's letters of one consume keep their order)."""
        if len(self.ranks) < 2 or len(letters) < 2:
            return letters
        firsts = {p: self.firsts(p, slots).tolist() for p in self.parts}

        def consume_of(letter: DeadLetter) -> tuple[int, int]:
            position = (letter.source, letter.partition)
            part = bisect.bisect_right(firsts[position], letter.offset) - 1
            index = self.parts[position][part][0]
            return index, self.ranks[index][position]

        return sorted(letters, key=consume_of)


def partition_fetch_bytes(config: WorkerConfig) -> int:
    """The most one fetch response carries of one partition: `FETCH_MAX_BYTES` shared by every
    (input, partition) the query has (a worker may come to read them all), at most 2 MB and at
    least 64 KB (a larger record still comes whole).

    A response ends once it holds `FETCH_MAX_BYTES`: with larger shares it carries some of the
    partitions only, and a worker behind on all of them (input always waiting, as under a CPU
    limit) read some partitions not at all, while it read the others, for longer than its
    liveness allows (`liveness`): it reported itself stalled, its pod unready, and a scale-up
    lost its origin. With shares that fit, every response carries each partition that has
    input."""
    partitions = sum(source.partitions for source in config.sources)
    share = FETCH_MAX_BYTES // max(1, partitions)
    return max(PARTITION_FETCH_MIN_BYTES, min(PARTITION_FETCH_MAX_BYTES, share))


def slots(config: WorkerConfig) -> int:
    """Event offsets per Kafka offset."""
    return 1 if config.input_format == "json" else COLUMNAR_SLOTS


class KafkaSource:
    """Reads the plan's inputs for a set of partitions, per (input, partition) in offset order."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.topics = {s.name: s.topic for s in config.sources}
        self.inputs = {s.topic: s.name for s in config.sources}
        self.topic_names = tuple(s.topic for s in config.sources)  # by the index consume gives
        self.names = [s.name for s in config.sources]
        self.schemas = config.schemas
        self.consumer = Consumer(
            {
                "bootstrap.servers": config.kafka_bootstrap,
                "client.id": CLIENT_ID,
                "group.id": config.group,
                "enable.auto.commit": False,
                # Offsets go to the group inside each transaction, never from librdkafka's
                # offset store: storing each message's offset took a partition lock per record.
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                # A light load's fetch waits for 64 KB or 100 ms (the mini-batch hold's time)
                # at the broker: fewer, fuller fetches, the client threads' CPU per record
                # nearer a full load's (`load`: their CPU is taken off what the quota leaves).
                "fetch.min.bytes": 65536,
                "fetch.wait.max.ms": 100,
                # Fetch responses of at most 8 MB (the consumer spends less CPU on them than on
                # 64 MB ones), with room for every partition's share (`partition_fetch_bytes`).
                "max.partition.fetch.bytes": partition_fetch_bytes(config),
                "fetch.max.bytes": FETCH_MAX_BYTES,
                "queued.min.messages": 200000,
                # Once the queue holds `queued.min.messages` (or 64 MB), librdkafka postpones
                # the next fetch by this long (1 s by default): the loop empties the queue in
                # a fraction of that and would then wait idle with a backlog in Kafka.
                "fetch.queue.backoff.ms": 10,
                "enable.partition.eof": False,  # an EOF would come as an error record: raised
            }
        )
        self.slots = slots(config)
        self.closing = threading.Lock()  # `wake` (any thread) never meets a handle being closed
        self.closed = False
        self.floor: dict[Position, int] = {}
        self.assigned: dict[Position, int] = {}
        self.paused: set[Position] = set()
        self.progress = Progress(config.stall_s, config.commit_interval_s)
        self.waited = 0.0  # seconds the last `records` spent in the consume

    def seek(self, positions: Mapping[Position, int]) -> None:
        """Read each (input, partition) from its event offset on (adds partitions as needed).

        Paused partitions are resumed before they are assigned, not after: a resume issued right
        after `assign` races with the fetch start librdkafka's own thread makes for the
        assignment, and now and then the partition stays paused for good, with no error
        (librdkafka issue 5591). A UniMiCo target seeks back to its connect offsets after its
        probe paused them, a replay ends by seeking back from the positions it paused at: a
        stalled partition's results would go missing.

        The metadata of a topic this consumer reads none of yet is asked for first: librdkafka
        otherwise starts fetching a newly assigned topic's partitions only once it learns their
        leader on its own, about a second after the `assign`, so a migration's target, holding
        with nothing assigned, would read its first records that much late."""
        reading = {self.topics[name] for name, _ in self.assigned}
        for topic in sorted({self.topics[name] for name, _ in positions} - reading):
            self.consumer.list_topics(topic, timeout=10.0)
        for position, event_offset in positions.items():
            self.floor[position] = event_offset
            self.assigned[position] = event_offset
        self.paused.clear()
        partitions = [self._partition(p, o) for p, o in self.assigned.items()]
        self.consumer.resume(partitions)
        self.consumer.assign(partitions)

    def kafka_offset(self, event_offset: int) -> int:
        return event_offset // self.slots

    def _partition(self, position: Position, event_offset: int) -> TopicPartition:
        offset = self.kafka_offset(event_offset) if event_offset > 0 else OFFSET_BEGINNING
        return TopicPartition(self.topics[position[0]], position[1], offset)

    def seek_to_time(self, partitions: Iterable[int], ts: int, timeout: float = 10.0) -> None:
        """Read the given partitions of every input from the first record at or after `ts`."""
        wanted = [TopicPartition(t, p, ts) for t in self.topics.values() for p in partitions]
        found = self.consumer.offsets_for_times(wanted, timeout=timeout)
        positions = {}
        for tp in found:
            end = tp.offset if tp.offset >= 0 else self._end(tp)
            positions[(self.inputs[tp.topic], tp.partition)] = end * self.slots
        self.seek(positions)

    def end_offsets(self, positions: Iterable[Position]) -> dict[Position, int]:
        """The event offset at the end of each (input, partition) now."""
        return {
            (n, p): self._end(TopicPartition(self.topics[n], p)) * self.slots for n, p in positions
        }

    def _end(self, tp: TopicPartition) -> int:
        _, high = self.consumer.get_watermark_offsets(
            TopicPartition(tp.topic, tp.partition), timeout=10.0
        )
        return int(high)

    def release(self, partitions: Iterable[int]) -> None:
        """Stop reading `partitions`; the others read on from where they are."""
        leaving = set(partitions)
        gone = [p for p in self.assigned if p[1] in leaving]
        for position in gone:
            del self.assigned[position]
            self.floor.pop(position, None)
            self.paused.discard(position)
        self.consumer.incremental_unassign([TopicPartition(self.topics[n], p) for n, p in gone])

    def pause(self, positions: Iterable[Position]) -> None:
        positions = list(positions)
        self.paused.update(positions)
        self.consumer.pause([TopicPartition(self.topics[n], p) for n, p in positions])

    def committed(
        self, positions: Iterable[Position], timeout: float = 10.0
    ) -> dict[Position, Committed]:
        """What committed output covers, per (input, partition) that has a commit."""
        wanted = [TopicPartition(self.topics[n], p) for n, p in positions]
        result = {}
        for tp in committed_offsets(self.consumer, wanted, timeout):
            if tp.error is not None:
                raise KafkaException(tp.error)
            if tp.offset >= 0:
                event, _, rest = (tp.metadata or "").partition(":")
                watermark, _, flag = rest.partition(":")
                exact = int(event) if event.isdigit() else tp.offset * self.slots
                mark = int(watermark) if watermark.lstrip("-").isdigit() else None
                split = f":{flag}" == SPLIT_MARK
                result[(self.inputs[tp.topic], tp.partition)] = Committed(exact, mark, split)
        return result

    def cached_ends(self, positions: Iterable[Position]) -> dict[Position, int]:
        """The Kafka end offset of each (input, partition) as last fetched (no request)."""
        ends = {}
        for name, partition in positions:
            tp = TopicPartition(self.topics[name], partition)
            _, high = self.consumer.get_watermark_offsets(tp, timeout=1.0, cached=True)
            ends[(name, partition)] = int(high)
        return ends

    def fetch(self, timeout: float) -> tuple[dict[Position, Batch], list[DeadLetter]]:
        """One batched consume, decoded (`read`, then `decode`)."""
        consumes = Consumes()
        consumes.add(self.read(timeout))
        return self.decode(consumes)

    def read(self, timeout: float) -> dict[Position, Records]:
        """One batched consume, its records not decoded (`records`); tells `progress` which
        partitions it returned records of."""
        fetched = self.records(timeout)
        reading = [p for p in self.assigned if p not in self.paused]
        self.progress.fetch_returned(fetched.keys(), reading, self._waiting)
        return fetched

    def decode(self, consumes: Consumes) -> tuple[dict[Position, Batch], list[DeadLetter]]:
        """The records of `consumes` decoded, one decode per (input, partition) of all its
        consumes; malformed and oversize records as dead letters (their offsets are event
        offsets), in the order a decode per consume would give them (`Consumes.in_order`).
        Records below the position's `floor` (read again after a seek) are dropped."""
        batches: dict[Position, Batch] = {}
        dead: list[DeadLetter] = []
        for position, records in consumes.joined():
            records, oversize = self._bounded(position, records)
            batch, bad = self._decode(position, records)
            bad += oversize
            floor = self.floor.get(position, 0)
            if len(batch) and batch.offset[0] < floor:
                batch = batch.take(batch.offset >= floor)
            batches[position] = batch
            dead += [d for d in bad if d.offset >= floor]
        return batches, consumes.in_order(dead, self.slots)

    def _waiting(self, positions: list[Position]) -> set[Position]:
        """Those of `positions` with records past the consumer's position, by the high
        watermark it last saw (both local: no request). The position, not the last record
        returned, since a `read_committed` reader steps over transaction markers and aborted
        records, which the high watermark counts."""
        wanted = [TopicPartition(self.topics[name], p) for name, p in positions]
        found = set()
        for position, tp in zip(positions, self.consumer.position(wanted), strict=True):
            at = tp.offset if tp.offset >= 0 else self.kafka_offset(self.assigned[position])
            _, high = self.consumer.get_watermark_offsets(
                TopicPartition(tp.topic, tp.partition), cached=True
            )
            if high > at:
                found.add(position)
        return found

    def records(self, timeout: float) -> dict[Position, Records]:
        """One batched consume (`_fastconsume`: packed columns, no object per record), its
        Kafka offsets and values per (input, partition) in offset order. A partition's records
        come in runs; the runs are found with numpy and each is sliced once."""
        began = time.perf_counter()
        values, partitions, offsets, codes = _fastconsume.consume(
            self.consumer, CLIENT_ID, self.topic_names, self.config.batch_size, timeout
        )
        self.waited = time.perf_counter() - began  # the step's wait for input is not busy time
        n = len(values)
        if not n:
            return {}
        keys = np.frombuffer(partitions, np.int32).astype(np.int64)
        if len(self.names) > 1:
            keys |= np.frombuffer(codes, np.int32).astype(np.int64) << 32
        kafka_offsets = np.frombuffer(offsets, np.int64)
        bounds = [0, *(np.flatnonzero(np.diff(keys)) + 1).tolist(), n]
        runs: dict[Position, tuple[list[npt.NDArray[np.int64]], list[Payload]]] = {}
        for low, high in itertools.pairwise(bounds):
            key = int(keys[low])
            entry = runs.setdefault((self.names[key >> 32], key & 0xFFFFFFFF), ([], []))
            entry[0].append(kafka_offsets[low:high])
            entry[1].extend(values[low:high])
        return {key: (np.concatenate(starts), found) for key, (starts, found) in runs.items()}

    def _bounded(self, position: Position, records: Records) -> tuple[Records, list[DeadLetter]]:
        """The records of at most `max_record_bytes`, and a dead letter for each longer one
        (the record's first `max_record_bytes` as its raw value; the dead letter reads it again
        whole and cuts it, `dead_letters`). One pass over the lengths in C when none is longer,
        about 20 ns a record."""
        offsets, values = records
        limit = self.config.max_record_bytes
        if max(map(len, values)) <= limit:
            return records, []
        name, partition = position
        listed = list(values)  # indexed below: a `Chained` is not
        kept = [i for i, value in enumerate(listed) if len(value) <= limit]
        dead = [
            DeadLetter(
                name,
                partition,
                int(offsets[i]) * self.slots,
                oversize(len(value), limit),
                bytes(memoryview(value)[:limit]),
            )
            for i, value in enumerate(listed)
            if len(value) > limit
        ]
        return (offsets[kept], [listed[i] for i in kept]), dead

    def _decode(self, position: Position, records: Records) -> tuple[Batch, list[DeadLetter]]:
        name, partition = position
        offsets = records[0] * self.slots
        if not records[1]:  # every record of the position was oversize
            return Batch.empty(name, self.schemas[name].names), []
        if self.config.input_format == "json":
            partitions = np.full(len(records[1]), partition, np.int32)
            return decode_json(name, records[1], partitions, offsets, self.schemas[name])
        parts, dead = [], []
        for event_base, value in zip(offsets.tolist(), records[1], strict=True):
            try:
                batch = decode_columnar(pa.py_buffer(value), self.schemas[name].names)
            except (pa.ArrowException, KeyError, TypeError, ValueError) as error:
                reason = f"bad columnar record: {error}"
                dead.append(DeadLetter(name, partition, event_base, reason, bytes(value)))
                continue
            n = len(batch)
            parts.append(
                Batch(
                    name,
                    batch.ts,
                    np.full(n, partition, np.int32),
                    event_base + np.arange(n, dtype=np.int64),
                    batch.columns,
                )
            )
        if len(parts) > 1:
            return Batch.concat(parts), dead  # copies: the batch views no record
        if not parts:
            return Batch.empty(name, self.schemas[name].names), dead
        return _owned(parts[0]), dead

    def wake(self) -> None:
        """End a `fetch` waiting for records in another thread now (it returns what it holds);
        with none waiting, the next fetch returns at once. Does nothing once closed."""
        with self.closing:
            if not self.closed:
                _fastconsume.wake(self.consumer, CLIENT_ID)

    def close(self) -> None:
        with self.closing:
            self.closed = True
            self.consumer.close()


COORDINATOR_NOT_READY = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def committed_offsets(
    consumer: Consumer, wanted: list[TopicPartition], timeout: float, pause: float = 0.1
) -> list[TopicPartition]:
    """The group's committed offsets of `wanted`, asked again while the group coordinator is
    not ready (a broker just started loads its offsets topic first: a worker starting then got
    NOT_COORDINATOR and exited), until `timeout` seconds passed; other errors raise at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            left = max(pause, deadline - time.monotonic())
            return list(consumer.committed(wanted, timeout=left))
        except KafkaException as error:
            code = error.args[0].code() if error.args else None
            if code not in COORDINATOR_NOT_READY or time.monotonic() + pause >= deadline:
                raise
            time.sleep(pause)


def _owned(batch: Batch) -> Batch:
    """The batch with its numeric arrays copied: decoded from a record in the consumer's memory
    they view it, and the record is freed when nothing views it (what a batch keeps, read
    columns only, is copied; the record's other bytes are never)."""
    return Batch(
        batch.source,
        batch.ts.copy(),
        batch.partition,
        batch.offset,
        {name: column.copy() for name, column in batch.columns.items()},
    )
