"""The Kafka source on the local stack: a paused partition sought back to an earlier offset is read
again, every time. A UniMiCo target pauses its partitions once it has probed their first event
times and seeks back to where it connected when it activates; a partition left paused there was
never read again, and its results after the hand-off were missing. The stall is rare per seek
with `resume` after `assign` (docs/performance.md), so six sources seek 32 positions back 40 times
each, about 7,700 seeks."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from streamshift_dev import workers
from streamshift_engine.runtime.config import WorkerConfig, load
from streamshift_engine.runtime.source import KafkaSource, Position
from support.kafka import produce

from .harness import Services, create_topics, nexmark_input, worker_env

PARTITIONS = 16
SOURCES = 6  # sources seeking at once, each its own consumer
ROUNDS = 40


def read_again(source: KafkaSource, positions: list[Position], deadline: float) -> set[Position]:
    """The positions that deliver a record before `deadline`, pausing each once it did (as the
    probe does)."""
    seen: set[Position] = set()
    while len(seen) < len(positions) and time.monotonic() < deadline:
        batches, dead = source.fetch(0.05)
        seen |= {p for p, b in batches.items() if len(b)} | {(d.source, d.partition) for d in dead}
        source.pause(seen)
    return seen


def seek_back_rounds(config: WorkerConfig, positions: list[Position]) -> list[tuple[int, Position]]:
    """`ROUNDS` times: seek every position back, read until each delivered, pause them all;
    the (round, position) pairs that delivered nothing within 10 s."""
    source = KafkaSource(config)
    stalled = []
    try:
        for round_ in range(ROUNDS):
            source.seek(dict.fromkeys(positions, 1 + round_ % 3))
            seen = read_again(source, positions, time.monotonic() + 10)
            stalled += [(round_, p) for p in sorted(set(positions) - seen)]
            source.pause(positions)
    finally:
        source.close()
    return stalled


def test_paused_partitions_sought_back_are_read_again(services: Services, run_id: str) -> None:
    config = load(worker_env(services, run_id, "nexmark-q8"))
    topics = [s.topic for s in config.sources]
    create_topics(services, topics, PARTITIONS)
    try:
        inputs = nexmark_input(20_000, PARTITIONS)
        for spec in config.sources:
            produce(services.kafka, spec.topic, inputs[spec.name], "json")
        positions = [(s.name, p) for s in config.sources for p in range(PARTITIONS)]
        with ThreadPoolExecutor(SOURCES) as pool:
            runs = [pool.submit(seek_back_rounds, config, positions) for _ in range(SOURCES)]
            stalled = [r.result() for r in runs]
    finally:
        workers.delete_topics(services, topics)
    assert stalled == [[]] * SOURCES
