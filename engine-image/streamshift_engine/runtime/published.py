"""What the output already holds, for an origin recovered after a hand-off that split its output.

While a UniMiCo or parallel-track origin hands partitions over, it emits only its side of the
split (`Role.splitting_output`); the target holds the other side, and may already have made some
of it visible (parallel track's `release-until`, UniMiCo's `release-output`). If the migration
rolls back (a lost pod, a failed step), the origin that takes the partitions back cannot tell
from the committed watermark which results are in the output: those its predecessor left to the
target were not emitted unless the target released them, whatever their window's end. So an
origin marks its commits while it splits (`Committed.split`) and takes no snapshot meanwhile,
and its replacement restores a snapshot taken before the split, replays, and emits each result
and dead letter that the output and dead-letter topics do not hold yet, read with
`read_committed` from a while before that snapshot on (`read`). The operator deletes the
targets before it starts the replacement, so nothing is added to the output meanwhile.

The ledger is dropped once the replacement is past everything its predecessors could have
published: its watermark beyond the last window end read, and its positions at the input's end
offsets as they were when the ledger was read (a window-less result goes out when its newest
tuple is fed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import orjson
from confluent_kafka import OFFSET_END, Consumer, KafkaException, Message, TopicPartition

from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, result_ids
from streamshift_engine.runtime.config import WorkerConfig
from streamshift_engine.runtime.source import Position, slots

log = logging.getLogger("streamshift.worker")
MARGIN_S = 30.0  # read the output from this long before the restored snapshot was taken
OPEN_TRANSACTION_S = 70.0  # a lost writer's open transaction ends by its timeout (60 s)
LetterId = tuple[str, int, int]  # input, partition, event offset


@dataclass
class Published:
    """The results (by id) and dead letters (by input coordinates) the output holds."""

    ids: set[str]
    letters: set[LetterId]
    last_window_end: int  # the largest window end among the results read (-1: none)
    input_ends: dict[Position, int]  # event offsets the predecessors may have read up to

    def unpublished(
        self, results: list[ResultBatch], letters: list[DeadLetter]
    ) -> tuple[list[ResultBatch], list[DeadLetter]]:
        """The results and dead letters the output does not hold yet."""
        kept = []
        for batch in results:
            if not len(batch):
                continue
            fresh = np.array([i not in self.ids for i in result_ids(batch).to_pylist()])
            if fresh.any():
                kept.append(batch if fresh.all() else batch.take(fresh))
        new = [d for d in letters if (d.source, d.partition, d.offset) not in self.letters]
        return kept, new

    def passed(self, watermark: int | None, consumed: Mapping[Position, int]) -> bool:
        """Whether nothing the output holds can come out of this instance again."""
        past_windows = self.last_window_end < 0 or (
            watermark is not None and watermark > self.last_window_end
        )
        return past_windows and all(consumed.get(p, 0) >= o for p, o in self.input_ends.items())


def read(config: WorkerConfig, positions: Sequence[Position], since: float | None) -> Published:
    """The output and dead-letter records committed from `since` (epoch seconds) on, less
    `MARGIN_S` (all of them when None: no snapshot was restored), and the end offsets of the
    input `positions` now."""
    reader = Consumer(
        {
            "bootstrap.servers": config.kafka_bootstrap,
            "group.id": f"{config.writer}.published",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": False,
        }
    )
    try:
        topics = {s.name: s.topic for s in config.sources}
        per_record = slots(config)
        ends = {}
        for name, partition in positions:
            _, high = reader.get_watermark_offsets(TopicPartition(topics[name], partition), 10.0)
            ends[(name, partition)] = high * per_record
        ids: set[str] = set()
        letters: set[LetterId] = set()
        last_end = -1
        sink = config.sinks[0]
        own = {p % sink.partitions for _, p in positions}  # where their results go (`sink`)
        wanted = {sink.topic: own, config.dead_letter_topic: None}
        for record in _records(reader, wanted, since):
            if record.topic() == config.dead_letter_topic:
                headers = record.headers() or []
                pairs = headers.items() if isinstance(headers, dict) else headers
                letters.add(_letter_id(list(pairs), per_record))
                continue
            key = record.key()
            if key is not None:
                ids.add(key.decode())
            end = orjson.loads(record.value() or b"{}").get("window_end", -1)
            last_end = max(last_end, int(end))
    finally:
        reader.close()
    log.info(
        "output read for a recovery after a split hand-off",
        extra={"results": len(ids), "dead_letters": len(letters), "last_window_end": last_end},
    )
    return Published(ids, letters, last_end, ends)


def _records(
    reader: Consumer, topics: Mapping[str, set[int] | None], since: float | None
) -> Iterator[Message]:
    """Every committed record of `topics` (of the partitions given, or all) from
    `since - MARGIN_S` (or their start) to the end offsets now (waiting, at most
    `OPEN_TRANSACTION_S`, for an open transaction of a lost writer to end)."""
    wanted = []
    for topic, partitions in topics.items():
        meta = reader.list_topics(topic, timeout=10.0).topics[topic]
        if meta.error is not None:
            raise KafkaException(meta.error)
        chosen = sorted(meta.partitions) if partitions is None else sorted(partitions)
        wanted += [TopicPartition(topic, p) for p in chosen]
    if since is None:
        starts = wanted  # offset unset: from the partition's first record
    else:
        start_ms = max(0, int((since - MARGIN_S) * 1000))
        timed = [TopicPartition(tp.topic, tp.partition, start_ms) for tp in wanted]
        starts = reader.offsets_for_times(timed, timeout=10.0)
    ends = {}
    for tp in starts:
        low, high = reader.get_watermark_offsets(tp, 10.0)
        if since is None:
            tp.offset = low
        if tp.offset != OFFSET_END and 0 <= tp.offset < high:
            ends[(tp.topic, tp.partition)] = high
    reader.assign([tp for tp in starts if (tp.topic, tp.partition) in ends])
    deadline = time.monotonic() + OPEN_TRANSACTION_S
    reached = dict.fromkeys(ends, -1)
    while any(reached[k] + 1 < ends[k] for k in ends) and time.monotonic() < deadline:
        for record in reader.consume(10000, 1.0):
            if record.error() is not None:
                continue
            where = (str(record.topic()), int(record.partition() or 0))
            reached[where] = max(reached[where], int(record.offset() or 0))
            yield record
        for tp in reader.position([TopicPartition(t, p) for t, p in ends]):
            # a read_committed reader steps over transaction markers and aborted records
            where = (tp.topic, tp.partition)
            reached[where] = max(reached[where], tp.offset - 1)


def _letter_id(headers: list[tuple[str, str | bytes | None]], per_record: int) -> LetterId:
    """A dead letter's input coordinates from its headers (`dead_letters`)."""
    found = {k: v.decode() if isinstance(v, bytes) else v or "" for k, v in headers}
    event = int(found.get("event") or 0)
    return found["source"], int(found["partition"]), int(found["offset"]) * per_record + event
