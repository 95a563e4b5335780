"""The input of an elastic run: Nexmark persons and auctions (what q8 reads) produced to Kafka
from this process, at the rate a generator config's rate shape gives, with event time kept at
wall time (as `spark.pacing` does for the Spark generator: every tick writes the events whose
event time is due by then, `nexmark.rates.events_before`). So q8's tumbling windows close at
wall-clock pace whatever the rate, and the output rhythm a rescale's gap is set against is the
window's length.

`Producing` is a thread; `fed()` is everything produced, for the reference (the generator's
events do not depend on how they were sliced). Bids are generated (their proportion is 1) but
not produced: q8 does not read them. `Driver` is what the scenario needs of a load, this
producer or the Spark generator (`elastic_spark`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np
from confluent_kafka import Producer
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.rates import events_before

INPUTS = ("person", "auction")
SEED = 7
TICK_S = 0.1
PIECE_EVENTS = 50_000
"""The most events made and produced at once: a producer behind its schedule (the cores busy
with other work) catches up in pieces, each counted as written before the next is made, so its
rate shows the catching up (made at once, seconds of events showed as no input, then a burst)."""
RECORDS_PER_EVENT = 0.8
"""Persons and auctions among the events with bid proportion 1 (person 1, auction 3, bid 1)."""


def config(
    partitions: int, low: int, high: int = 0, step_at_s: int = 0, step_until_s: int = 0
) -> GeneratorConfig:
    """Events per second `low`, or a step to `high` from `step_at_s` to `step_until_s` (seconds
    of event time, which runs at wall time here)."""
    if not high:
        return GeneratorConfig(partitions=partitions, events_per_second=low, bid_proportion=1)
    return GeneratorConfig(
        partitions=partitions,
        events_per_second=low,
        bid_proportion=1,
        rate_shape="step",
        next_events_per_second=high,
        step_at_s=step_at_s,
        step_until_s=step_until_s,
    )


class Driver(Protocol):
    """A load: `started` (monotonic) once `start()` returns, `events` and `records` (persons
    and auctions) written so far, and `fed()` every event written."""

    started: float
    events: int
    records: int

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def rate(self, over_s: float = 1.0) -> float: ...

    def fed(self) -> dict[str, Batch]: ...

    def fed_in_chunks(self) -> Iterator[dict[str, Batch]]: ...


FED_CHUNK = 1_000_000
"""Events generated at a time for the reference of a whole run: generated at once, a full
`bench-autoscaler` run's events (bids included) took more memory than the machine has
(docs/autoscaler.md)."""


def generated(generator: GeneratorConfig, events: int, start: int = 0) -> dict[str, Batch]:
    """Events `start` to `events` of the scenario's seed, one batch per input q8 reads."""
    batches = generate(SEED, start, events - start, generator)
    return {name: batches[name] for name in INPUTS}


def generated_in_chunks(generator: GeneratorConfig, events: int) -> Iterator[dict[str, Batch]]:
    """The first `events` events as `generated` gives them, `FED_CHUNK` at a time: an event is
    a function of its index, and its offset, range-local in a chunk, is moved past the records
    of its partition in the chunks before."""
    before = {name: np.zeros(generator.partitions, np.int64) for name in INPUTS}
    for start in range(0, events, FED_CHUNK):
        chunk = generated(generator, min(events, start + FED_CHUNK), start)
        for name, batch in chunk.items():
            offset = batch.offset + before[name][batch.partition]
            chunk[name] = Batch(batch.source, batch.ts, batch.partition, offset, batch.columns)
            before[name] += np.bincount(batch.partition, minlength=generator.partitions)
        yield chunk


def records_among(generator: GeneratorConfig, start: int, count: int) -> int:
    """The persons and auctions among the events `start` to `start + count` (the kind is a
    function of the index, `nexmark.generator`)."""
    within = np.arange(start, start + count, dtype=np.int64) % generator.total_proportion
    first_bid = generator.person_proportion + generator.auction_proportion
    return int(np.count_nonzero(within < first_bid))


def rate_of(history: Iterable[tuple[float, int]], over_s: float) -> float:
    """Records per second over about the last `over_s` seconds of `(time, records)` points."""
    points = list(history)
    if len(points) < 2:
        return 0.0
    now_t, now_n = points[-1]
    older = [p for p in points if p[0] <= now_t - over_s] or points[:1]
    then_t, then_n = older[-1]
    return (now_n - then_n) / (now_t - then_t) if now_t > then_t else 0.0


def events_for(records_per_second: float) -> int:
    """Events per second that give `records_per_second` person and auction records."""
    return max(1, round(records_per_second / RECORDS_PER_EVENT))


class Writing(threading.Thread):
    """A load driver's thread and what it wrote so far: the events (the generator's first
    ones), their records, the recent history of the count (its rate), and a failure for
    `stop()` to raise."""

    def __init__(self, generator: GeneratorConfig) -> None:
        super().__init__(daemon=True)
        self.generator = generator
        self.events = 0
        self.records = 0
        self.started = 0.0
        self.history: deque[tuple[float, int]] = deque(maxlen=64)
        self.stopping = threading.Event()
        self.failure: BaseException | None = None

    def wrote(self, events: int, records: int) -> None:
        """`events` more events, of `records` records, are written."""
        self.events += events
        self.records += records
        self.history.append((time.monotonic(), self.records))

    def rate(self, over_s: float = 1.0) -> float:
        """Records per second written over about the last `over_s` seconds."""
        return rate_of(self.history, over_s)

    def fed(self) -> dict[str, Batch]:
        """Every event written, one batch per input."""
        return generated(self.generator, self.events)

    def fed_in_chunks(self) -> Iterator[dict[str, Batch]]:
        """Every event written, `FED_CHUNK` at a time (`generated_in_chunks`)."""
        return generated_in_chunks(self.generator, self.events)


class Producing(Writing):
    """Produces `{prefix}-person` and `{prefix}-auction` records at the config's rate from
    `start()` until `stop()`; or, `flat_out`, as fast as it can."""

    def __init__(
        self, bootstrap: str, prefix: str, generator: GeneratorConfig, flat_out: bool = False
    ) -> None:
        super().__init__(generator)
        self.prefix, self.flat_out = prefix, flat_out
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
        )

    def run(self) -> None:
        self.started = time.monotonic()
        try:
            while not self.stopping.is_set():
                elapsed = time.monotonic() - self.started
                if self.flat_out:
                    due = 20_000
                else:
                    due = events_before(self.generator, round(elapsed * 1000)) - self.events
                if due > 0:
                    self._produce(min(due, PIECE_EVENTS))
                if not self.flat_out:
                    self.stopping.wait(
                        max(0.0, TICK_S - (time.monotonic() - self.started - elapsed))
                    )
            if self.producer.flush(60):
                raise RuntimeError("records still unsent 60 s after the load stopped")
        except BaseException as error:  # reported by stop()
            self.failure = error

    def _produce(self, count: int) -> None:
        events = generate(SEED, self.events, count, self.generator)
        records = 0
        for name in INPUTS:
            batch = events[name]
            for partition in sorted(set(batch.partition.tolist())):
                part = batch.take(batch.partition == partition)
                for value in encode_json(part):
                    self._send(f"{self.prefix}-{name}", value, partition)
                records += len(part)
        self.wrote(count, records)

    def _send(self, topic: str, value: bytes, partition: int) -> None:
        while True:
            try:
                self.producer.produce(topic, value, partition=partition)
                break
            except BufferError:  # the local queue is full: let it drain
                self.producer.poll(0.05)
        self.producer.poll(0)

    def stop(self) -> None:
        """Stop producing and wait until every record is in Kafka."""
        self.stopping.set()
        self.join(90)
        if self.failure is not None:
            raise self.failure
