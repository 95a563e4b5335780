"""The worker loop on the local stack. Its consume in slices (`Worker.gather`): what the slices
read comes back merged per position, every record once and in offset order, while records
arrive a few per slice; a waiting control command ends the gather after the slice it waits on,
not after the step's time (librdkafka's consume cannot be woken). Work a command defers
(`Worker.later`: a release's drop of the state) runs after its answer, before the next command."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace
from typing import cast

import pytest
from confluent_kafka import Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import DeadLetter, encode_json
from streamshift_engine.runtime.config import load
from streamshift_engine.runtime.loop import Command, Worker
from streamshift_engine.runtime.metrics import Metrics
from streamshift_engine.runtime.source import KafkaSource, Position

from .harness import Services, create_topics, nexmark_input, worker_env

pytestmark = [pytest.mark.stack, pytest.mark.timeout(60)]


class Counted:
    """The real source, counting the slices that read something per position."""

    def __init__(self, source: KafkaSource) -> None:
        self.source = source
        self.slices: dict[Position, int] = {}

    def fetch(self, timeout: float) -> tuple[dict[Position, Batch], list[DeadLetter]]:
        batches, dead = self.source.fetch(timeout)
        for position in batches:
            self.slices[position] = self.slices.get(position, 0) + 1
        return batches, dead


def test_slices_merge_every_record_once_and_a_command_ends_the_wait(
    services: Services, run_id: str
) -> None:
    config = load(worker_env(services, run_id, "nexmark-q5"))
    [spec] = config.sources
    create_topics(services, [spec.topic], 2)
    bids = nexmark_input(3000, 2)["bid"]
    expected = {(spec.name, p): int((bids.partition == p).sum()) for p in range(2)}
    values = [(p, v) for p in range(2) for v in encode_json(bids.take(bids.partition == p))]

    producer = Producer({"bootstrap.servers": services.kafka, "linger.ms": 0})

    def trickle(sent: list[tuple[int, bytes]]) -> None:  # 5 at a time, flushed: a few a slice
        for start in range(0, len(sent), 5):
            for partition, value in sent[start : start + 5]:
                producer.produce(spec.topic, value, partition=partition)
            producer.flush(10)
            time.sleep(0.001)

    source = Counted(KafkaSource(config))
    loop = SimpleNamespace(source=source, commands=queue.Queue())
    gather = Worker.gather.__get__(cast(Worker, loop))
    merged = 0
    try:
        source.source.seek(dict.fromkeys(expected, 0))
        trickle(values[:1])  # the rest once the consumer reads: it takes a while to start
        flowing = threading.Thread(target=trickle, args=(values[1:],), daemon=True)
        read: dict[Position, list[int]] = {p: [] for p in expected}
        deadline = time.monotonic() + 30
        while any(len(read[p]) < n for p, n in expected.items()) and time.monotonic() < deadline:
            if any(read.values()) and not flowing.is_alive() and flowing.ident is None:
                flowing.start()
            source.slices.clear()
            batches, dead = gather(0.05)
            assert dead == []
            merged += sum(source.slices[p] > 1 for p in batches)
            for position, batch in batches.items():
                read[position] += batch.offset.tolist()
        flowing.join(10)
        assert read == {p: list(range(n)) for p, n in expected.items()}
        assert merged > 0  # some gathers did join several slices' reads of a position
        loop.commands.put(Command(lambda _worker: None))
        begin = time.monotonic()
        assert gather(20.0) == ({}, [])  # nothing left to read: ended by the command
        assert time.monotonic() - begin < 10.0
    finally:
        source.source.close()


def test_deferred_work_runs_after_the_answer_and_before_the_next_command(
    services: Services, run_id: str
) -> None:
    worker = Worker(load(worker_env(services, run_id, "nexmark-q5")), Metrics())
    seen: list[str] = []
    first = Command(
        lambda w: w.later(lambda: seen.append(f"deferred, answered {first.future.done()}"))
    )
    second = Command(lambda _w: seen.append("second"))
    try:
        worker.commands.put(first)
        worker.commands.put(second)
        worker._commands()
        assert seen == ["deferred, answered True", "second"]
        assert worker.deferred == []
    finally:
        worker.sink.close()
        worker.source.close()
