"""Dead-letter records: the original input record, its coordinates and reason, bounded in size.

The engine names a record it cannot use by its coordinates (input, partition, event offset) and a
reason; what it holds of the record is what it decoded (a late record's projected fields), not
what was produced. A dead letter must be replayable, so `DeadLetters` reads the original record
again from its input topic with a small consumer of its own, only when there are dead letters
(they are rare: the ordinary path reads nothing twice), and writes it with its key, value and
headers as produced. A columnar record holds many events: its dead letter is the one event, sliced
out of the original record as a columnar record of its own with every column of the original.

Headers: the original record's headers first, then the worker's (`ours`): `reason`, `source`
(the plan input), `topic`, `partition`, `offset` (Kafka offset), `event` (index of the event in
a columnar record, 0 for JSON), `size` (bytes of the original value), `original` (`record`: the
value is the record as produced; `event`: the columnar event sliced out; `decoded`: the record
could not be read again, the value is what the engine decoded), `truncated` (`true` when the
value was cut to fit) and `original-headers` (how many leading headers came with the record: a
replay keeps exactly those).

An input record longer than `max_record_bytes` is not read by the worker (`source`): its dead
letter, reason `oversize`, is the whole record as produced, truncated, also when it is columnar.

Size: a dead letter never exceeds `max_record_bytes` (value, key and headers): a longer value is
truncated, and the original headers are dropped when they alone do not fit. A dead letter that
failed to produce would fail the commit of its transaction, and the worker would read and reject
the same record again after every restart: a crash loop.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition

from streamshift_engine.events.wire import DeadLetter

Headers = list[tuple[str, str | bytes | None]]  # as confluent-kafka takes and gives them
Coordinates = tuple[str, int, int]  # topic, partition, Kafka offset
OVERSIZE = "oversize"  # the reason of an input record longer than `max_record_bytes`
RECORD_OVERHEAD = 512  # bytes of framing a record may take beyond its key, value and headers
READ_AHEAD = 1000  # records read on to the next wanted one rather than seeking to it


@dataclass(frozen=True)
class Original:
    """An input record as it was produced."""

    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(frozen=True)
class Letter:
    """A dead-letter record ready to produce: the original record's key, value (cut to fit
    when `truncated`) and the headers kept of it, then the worker's headers."""

    key: bytes | None
    value: bytes | None
    kept: Headers
    ours: Headers
    truncated: bool = False

    @property
    def headers(self) -> Headers:
        flag = b"true" if self.truncated else b"false"
        count = str(len(self.kept)).encode()
        return [*self.kept, *self.ours, ("truncated", flag), ("original-headers", count)]

    def size(self) -> int:
        return _size(self.key, self.value, self.headers)

    def bare(self) -> Letter:
        """The letter with its coordinates and reason only."""
        return Letter(None, b"", [], self.ours, truncated=True)


class DeadLetters:
    """Builds the dead-letter records of one worker's dead letters."""

    def __init__(
        self,
        bootstrap: str,
        topics: Mapping[str, str],
        slots: int,
        max_record_bytes: int,
        timeout: float = 30.0,
    ) -> None:
        self.bootstrap = bootstrap
        self.topics = topics  # plan input -> Kafka topic
        self.slots = slots
        self.max_record_bytes = max_record_bytes
        self.timeout = timeout
        self.consumer: Consumer | None = None  # made at the first dead letter

    def letters(self, dead: Sequence[DeadLetter]) -> list[Letter]:
        """The dead-letter record of each dead letter, in order."""
        wanted = [self._coordinates(letter) for letter in dead]
        originals = self._read(wanted)
        return [
            self._letter(letter, at, originals.get(at))
            for letter, at in zip(dead, wanted, strict=True)
        ]

    def _coordinates(self, letter: DeadLetter) -> Coordinates:
        return self.topics[letter.source], letter.partition, letter.offset // self.slots

    def _letter(self, letter: DeadLetter, at: Coordinates, original: Original | None) -> Letter:
        event = letter.offset % self.slots
        key: bytes | None
        value: bytes | None
        headers: Headers
        if original is None:
            key, value, headers, kind = None, letter.raw, [], "decoded"
        elif (
            self.slots > 1
            and not letter.reason.startswith(OVERSIZE)  # the record was not read: all of it
            and (sliced := event_record(original.value, event)) is not None
        ):
            key, value, headers, kind = original.key, sliced, original.headers, "event"
        else:
            key, value, headers, kind = original.key, original.value, original.headers, "record"
        size = len(value or b"")
        ours: Headers = [
            ("reason", letter.reason.encode()),
            ("source", letter.source.encode()),
            ("topic", at[0].encode()),
            ("partition", str(at[1]).encode()),
            ("offset", str(at[2]).encode()),
            ("event", str(event).encode()),
            ("size", str(size).encode()),
            ("original", kind.encode()),
        ]
        return bounded(key, value, headers, ours, self.max_record_bytes)

    def _read(self, wanted: Sequence[Coordinates]) -> dict[Coordinates, Original]:
        """The records at `wanted`, read again from Kafka (`read_committed`, as the source reads
        them) within `timeout` seconds in all; a record not read by then is left out."""
        found: dict[Coordinates, Original] = {}
        consumer = self._consumer()
        deadline = time.monotonic() + self.timeout
        try:
            for at in sorted(set(wanted)):
                if at not in found and time.monotonic() < deadline:
                    self._read_from(consumer, at, set(wanted), found, deadline)
        finally:
            consumer.unassign()
        return found

    def _read_from(
        self,
        consumer: Consumer,
        at: Coordinates,
        wanted: set[Coordinates],
        found: dict[Coordinates, Original],
        deadline: float,
    ) -> None:
        """Read `at`'s partition from `at` on, keeping every record of `wanted` met, until no
        wanted record of the partition is left within `READ_AHEAD` records of the last one read
        (seeking is then cheaper than reading on)."""
        topic, partition, offset = at
        ahead = sorted(o for t, p, o in wanted if (t, p) == (topic, partition) and o >= offset)
        consumer.assign([TopicPartition(topic, partition, offset)])
        while time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._AUTO_OFFSET_RESET:  # the record is gone
                        return
                    continue
                where = (topic, partition, message.offset() or 0)
                if where in wanted:
                    found[where] = Original(
                        message.key(), message.value(), _listed(message.headers())
                    )
                following = bisect.bisect_right(ahead, where[2])
                if following == len(ahead) or ahead[following] > where[2] + READ_AHEAD:
                    return

    def _consumer(self) -> Consumer:
        if self.consumer is None:
            self.consumer = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "client.id": "streamshift-dead-letters",
                    "group.id": "streamshift-dead-letters",  # never joined nor committed to
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "isolation.level": "read_committed",
                    "auto.offset.reset": "error",
                    "queued.min.messages": 100,  # read ahead little: one record is wanted
                    "enable.partition.eof": False,
                }
            )
        return self.consumer

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


def oversize(size: int, max_record_bytes: int) -> str:
    """The reason of an input record of `size` bytes, longer than `max_record_bytes`."""
    return f"{OVERSIZE}: {size} bytes, more than {max_record_bytes}"


def bounded(
    key: bytes | None,
    value: bytes | None,
    headers: Headers,
    ours: Headers,
    max_record_bytes: int,
) -> Letter:
    """The dead-letter record with at most `max_record_bytes` (less framing): the value cut
    first, then the original headers dropped when they alone do not fit."""
    budget = max_record_bytes - RECORD_OVERHEAD
    letter = Letter(key, value, headers, ours)
    if letter.size() <= budget:
        return letter
    for kept in (headers, []):
        empty = Letter(key, b"", kept, ours, truncated=True)
        room = budget - empty.size()
        if room >= 0:
            return Letter(key, (value or b"")[:room], kept, ours, truncated=True)
    return letter.bare()


def _size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    return len(key or b"") + len(value or b"") + sum(len(n) + _length(v) for n, v in headers)


def _length(value: str | bytes | None) -> int:
    return len(value.encode() if isinstance(value, str) else value or b"")


def _listed(headers: Headers | dict[str, str | bytes | None] | None) -> Headers:
    return list(headers.items() if isinstance(headers, dict) else headers or [])


def event_record(record: bytes | None, index: int) -> bytes | None:
    """Event `index` of a columnar record as a columnar record of its own (every column, the
    record's schema and metadata); None when the record is no readable columnar record."""
    if record is None:
        return None
    try:
        table = pa.ipc.open_stream(record).read_all()
        if not 0 <= index < table.num_rows:
            return None
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(index, 1))
        return bytes(sink.getvalue().to_pybytes())
    except (pa.ArrowInvalid, OSError):
        return None
