"""Kafka sink: results and dead letters inside one transaction per commit, with input offsets.

The transactional id is the worker's (query, instance, epoch), so a restarted worker fences its
predecessor and aborts whatever it left open. Each commit sends the consumed input positions to
the query's consumer group inside the transaction (`send_offsets_to_transaction`): the output of
a commit and the input it covers become visible together, and a restarted worker knows exactly
which input its committed output already reflects. Results are keyed by their deterministic id
and go to the output partition of their key group (records built column-wise by the engine's
result encoder); dead letters carry the original input record, the reason and the record's
coordinates (`dead_letters`), at most `max_record_bytes` long.

A commit takes several round trips to the brokers (the offsets to the group's coordinator, the
transaction's end and its markers): 28 ms on average on the local stack while a q8 worker ran
flat out, a fifth of its loop's wall-clock time at a commit every 0.1 s. `start_commit` hands
the commit to a thread of its own and returns: the loop fetches, feeds and polls meanwhile,
and the next produce (or `settle`) waits for the commit and opens the next transaction first.
The rule exactly-once output rests on holds: a transaction's positions are taken when its
commit starts, after every result of the input they cover was queued in it, and nothing is
queued in the next transaction before the commit has ended.

Broker outages (`outage`): transactional calls are made again while they fail with retriable
errors, and a commit that never ends (a librdkafka call ignoring its timeout) raises
`CommitStuck` in the loop within seconds of the brokers' return, so the worker exits and is
restarted rather than hanging.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from streamshift_engine.events.result_json import Part, Texts, encode_results_json
from streamshift_engine.events.results import ResultBatch
from streamshift_engine.events.wire import DeadLetter, result_ids
from streamshift_engine.runtime.config import WorkerConfig
from streamshift_engine.runtime.dead_letters import DeadLetters, Letter
from streamshift_engine.runtime.outage import GIVE_UP_S, await_commit, kafka_answers, retrying
from streamshift_engine.runtime.source import SPLIT_MARK, Position, slots


def _nothing() -> None:
    return None


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
                # A dead letter is cut to `max_record_bytes` (`dead_letters`); the client's own
                # limit leaves room for the framing of the request around it.
                "message.max.bytes": max(1_000_000, config.max_record_bytes + (64 << 10)),
            }
        )
        self.letters = DeadLetters(
            config.kafka_bootstrap, self.topics, self.slots, config.max_record_bytes
        )
        began = time.monotonic()
        retrying(self.producer.init_transactions, timeout, began + GIVE_UP_S, "init_transactions")
        self.producer.begin_transaction()
        self.committer = ThreadPoolExecutor(1, thread_name_prefix="commit")
        self.committing: Future[None] | None = None
        self.commit_began = 0.0
        self.settled: Callable[[], None] = _nothing  # called once the commit in flight ended

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
            self.settle()  # encoded while a commit may still be in flight
            self._produce_all(topic, ids, values, (batch.partition % n).tolist())
            count += len(values)
        return count

    def dead_letters(self, letters: Sequence[DeadLetter]) -> None:
        """Queue the dead letters in the open transaction, each with its original record."""
        if not letters:
            return
        self.settle()
        for letter in self.letters.letters(letters):
            self._produce_letter(letter)
        self.producer.poll(0)

    def _produce_letter(self, letter: Letter) -> None:
        """Queue one dead letter; one the client still finds too long goes with its headers
        alone (its coordinates), never failing the worker."""
        topic = self.config.dead_letter_topic
        while True:
            try:
                self.producer.produce(topic, letter.value, letter.key, headers=letter.headers)
                return
            except BufferError:
                self.producer.poll(0.05)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.MSG_SIZE_TOO_LARGE or not letter.value:
                    raise
                letter = letter.bare()

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

    def start_commit(
        self,
        positions: Mapping[Position, int],
        watermark: int | None,
        group: Consumer,
        settled: Callable[[], None] = _nothing,
        ended: Callable[[], None] = _nothing,
        split: Collection[int] = (),
    ) -> None:
        """Start committing the open transaction with the input positions it covers and the
        watermark its output reached (offset metadata `event_offset:watermark`, and `:split`
        on the partitions whose output a hand-off splits with a target, `published`) on the
        commit thread; `ended` is called there when it ends, `settled` by `settle` (which
        opens the next transaction) on the caller's thread. A commit still in flight is
        settled first."""
        self.settle()
        mark = "" if watermark is None else str(watermark)
        offsets = [
            TopicPartition(
                self.topics[name],
                p,
                event // self.slots,
                f"{event}:{mark}{SPLIT_MARK if p in split else ''}",
            )
            for (name, p), event in sorted(positions.items())
        ]
        metadata = group.consumer_group_metadata() if offsets else None
        self.settled = settled
        self.commit_began = time.monotonic()
        self.committing = self.committer.submit(self._commit, offsets, metadata)
        self.committing.add_done_callback(lambda _: ended())

    def _commit(self, offsets: list[TopicPartition], metadata: object) -> None:
        """The offsets and the commit, each made again after a retriable error (the brokers
        away) until the transaction's own timeout."""
        deadline = self.commit_began + GIVE_UP_S
        if offsets:
            producer = self.producer

            def send(timeout: float) -> None:
                producer.send_offsets_to_transaction(offsets, metadata, timeout)

            retrying(send, self.timeout, deadline, "send_offsets_to_transaction")
        retrying(self.producer.commit_transaction, self.timeout, deadline, "commit_transaction")

    def reachable(self) -> bool:
        """Whether a broker answers a metadata request (within 2 s), asked by a client of its
        own: the producer's connections may hold requests sent while a broker was frozen,
        which keep its own requests waiting until the socket times out (60 s), brokers back
        or not."""
        return kafka_answers(self.config.kafka_bootstrap)

    def settle(self, wait: bool = True) -> bool:
        """End the commit in flight, if any (waiting for it unless `wait` is false; its error
        raised here), open the next transaction and call the commit's `settled`. Answers
        whether no commit is in flight any more."""
        committing = self.committing
        if committing is None:
            return True
        if not wait and not committing.done():
            return False
        await_commit(committing, self.commit_began, self.reachable, time.monotonic)
        self.committing = None
        committing.result()
        self.producer.begin_transaction()
        settled, self.settled = self.settled, _nothing
        settled()
        return True

    def close(self) -> None:
        try:
            self.settle()
        finally:
            self.committer.shutdown(wait=True)
        self.producer.abort_transaction(self.timeout)
        self.producer.flush(self.timeout)
        self.letters.close()


class _Known:
    """Result ids built once, handed to the encoder (which would build them again) as its one
    id part."""

    def __init__(self, ids: pa.Array) -> None:
        self.ids = ids

    def __call__(self, _: ResultBatch, __: Texts) -> list[Part]:
        return [self.ids]
