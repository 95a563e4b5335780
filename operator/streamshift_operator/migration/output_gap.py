"""The output gap of a migration, measured on the output topic (every protocol alike).

The moving partitions' results land in the sink partitions of their key groups (`p mod n`, the
workers' sink rule). Their Kafka timestamps are the wall-clock times the workers produced them;
read `read_committed`, they are exactly the output a consumer sees. Pauses are measured on each
sink partition alone, the stream one consumer of it reads: the results of several instances
interleave across partitions, each firing at its own moment, so over the union of partitions
their staggered windows would show a rhythm shorter than any one stream's, and fewer instances
after a scale-down a longer one, with no pause in any stream. The gap is the longest pause
between consecutive results of one partition over the migration, from entering Preparing to the
cost being recorded, the pause still open at that time included; it is set against the query's
steady rhythm: the longest pause between consecutive results of one partition over a stretch as
long just before the migration (q5 fires every slide). The rhythm counts only pauses after a
result, so a query that started within that stretch does not count its start-up (the wait for
its first result); a partition without a result over both stretches has no stream to pause.
The cost is recorded once the output has resumed (no open pause longer than the rhythm), or
after `RESUME_WAIT_S` in Finalizing with the pause still open, a lower bound.
Blocking reads run in a thread.
"""

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from confluent_kafka import Consumer, TopicPartition

from streamshift_operator.migration.run import Run
from streamshift_operator.migration.status import cost, entered
from streamshift_operator.models.migration import MigrationStatus, Phase

TIMEOUT_S = 10.0
QUIET_S = 1.0
RESUME_WAIT_S = 10.0


@dataclass(frozen=True)
class Gap:
    """Longest pauses (s) in the moving partitions' output during and before the migration."""

    during: float
    before: float
    open: float  # the pause still open at the end of the migration's stretch


def longest_pause(
    times: Sequence[float], start: float, end: float, after_a_result: bool = False
) -> tuple[float, float]:
    """The longest stretch of (start, end] without a result, and the one still open at `end`.
    A pause is measured from the previous result (or `start` when none came before it); with
    `after_a_result`, only from a result (the wait for the stretch's first result is none)."""
    before = [t for t in times if t <= start]
    inside = sorted(t for t in times if start < t <= end)
    if after_a_result and not before:
        if not inside:
            return 0.0, 0.0
        before, inside = [inside[0]], inside[1:]
    last = max(before, default=start)
    longest = 0.0
    for t in inside:
        longest = max(longest, t - last)
        last = t
    return max(longest, end - last), end - last


def output_times(
    bootstrap: str, topic: str, partitions: list[int], since: float
) -> dict[int, list[float]]:
    """Timestamps (s) of the committed records on each of `partitions` from `since` to the end
    now."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"streamshift-gap-{time.time_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        wanted = [TopicPartition(topic, p, int(since * 1000)) for p in partitions]
        starts = consumer.offsets_for_times(wanted, TIMEOUT_S)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S)[1]
            for p in partitions
        }
        reading = [tp for tp in starts if 0 <= tp.offset < ends[tp.partition]]
        consumer.assign(reading)
        times: dict[int, list[float]] = {p: [] for p in partitions}
        deadline, quiet = time.monotonic() + TIMEOUT_S, time.monotonic() + QUIET_S
        while reading and time.monotonic() < min(deadline, quiet):
            for message in consumer.consume(10_000, 0.2):
                quiet = time.monotonic() + QUIET_S
                if message.error() is None:
                    times[int(message.partition() or 0)].append(message.timestamp()[1] / 1000)
            positions = consumer.position(reading)
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                break
        return times
    finally:
        consumer.close()


def measure(bootstrap: str, topic: str, partitions: list[int], start: float, end: float) -> Gap:
    """The pauses on `partitions` over [start, end] and over the stretch as long before it."""
    return gap_of(output_times(bootstrap, topic, partitions, 2 * start - end), start, end)


def gap_of(times_by_partition: Mapping[int, Sequence[float]], start: float, end: float) -> Gap:
    """The longest pause of any one partition over [start, end], and the rhythm: its longest
    pause after a result over the stretch as long before it."""
    length = end - start
    during = before = still_open = 0.0
    for times in times_by_partition.values():
        if times:
            pause, pause_open = longest_pause(times, start, end)
            rhythm, _ = longest_pause(times, start - length, start, after_a_result=True)
            during, before = max(during, pause), max(before, rhythm)
            still_open = max(still_open, pause_open)
    return Gap(during=round(during, 3), before=round(before, 3), open=round(still_open, 3))


async def record(run: Run, status: MigrationStatus, now: datetime) -> bool:
    """Record the cost with the measured gap; False while the output has not resumed yet."""
    start = entered(status, Phase.PREPARING)
    finalizing = entered(status, Phase.FINALIZING)
    if start is None:
        status.cost = cost(status, now)
        return True
    sink = run.spec.sinks[0]
    moving = sorted({p % sink.partitions for _, parts in run.targets() for p in parts})
    bootstrap = run.spec.kafka.bootstrap_servers
    gap = await asyncio.to_thread(
        measure, bootstrap, sink.topic, moving, start.timestamp(), now.timestamp()
    )
    waited = 0.0 if finalizing is None else (now - finalizing).total_seconds()
    if gap.open > gap.before and waited < RESUME_WAIT_S:
        return False
    status.cost = cost(status, now).model_copy(
        update={"output_gap_seconds": gap.during, "output_gap_before_seconds": gap.before}
    )
    return True
