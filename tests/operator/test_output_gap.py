"""The output gap: longest pauses between results (pure), and the committed output's timestamps
read from the local Kafka (aborted records and other partitions do not count)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from operator_stack import read_stack
from streamshift_operator.migration.output_gap import gap_of, longest_pause, measure, output_times


def test_the_longest_pause_counts_from_the_last_result_before_the_stretch() -> None:
    times = [8.0, 10.5, 11.0, 14.0, 15.0]
    assert longest_pause(times, 10.0, 16.0) == (3.0, 1.0)  # 11.0 -> 14.0; open 15.0 -> 16.0
    assert longest_pause([9.0], 10.0, 12.0) == (3.0, 3.0)  # nothing since 9.0: still open
    assert longest_pause([], 10.0, 12.0) == (2.0, 2.0)


def test_a_pause_still_open_at_the_end_is_the_longest() -> None:
    assert longest_pause([1.0, 2.0, 3.0], 0.0, 9.0) == (6.0, 6.0)


def test_the_rhythm_before_does_not_count_the_query_start_up() -> None:
    """A query whose first result came 21 s into the stretch before the migration: its
    rhythm is the pause between results (2 s), not the wait for the first one."""
    times = [21.0, 23.0, 25.0, 27.0, 29.0]
    assert longest_pause(times, 0.0, 30.0) == (21.0, 1.0)
    assert longest_pause(times, 0.0, 30.0, after_a_result=True) == (2.0, 1.0)
    assert longest_pause([5.0], 10.0, 12.0, after_a_result=True) == (7.0, 7.0)  # from 5.0
    assert longest_pause([], 0.0, 30.0, after_a_result=True) == (0.0, 0.0)


def test_each_partition_pauses_on_its_own_so_staggered_instances_show_no_false_gap() -> None:
    """Three instances fire every 10 s, each at its own moment, into partitions 0-2; after a
    scale-down at 30 s one instance fires every 10 s into all three. No stream paused longer
    than 10 s; over the union of the partitions the rhythm before would read 4 s and the
    scale-down a gap of 10 s."""
    before = {p: [offset + 10.0 * k for k in range(3)] for p, offset in enumerate((1.0, 4.0, 7.0))}
    times = {p: [*earlier, 31.0, 41.0, 51.0] for p, earlier in before.items()}
    gap = gap_of(times, 30.0, 55.0)
    assert (gap.during, gap.before, gap.open) == (10.0, 10.0, 4.0)


def test_a_partition_that_stops_is_a_gap_and_one_without_results_is_none() -> None:
    times = {0: [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0], 1: [2.0, 4.0, 6.0], 2: []}
    gap = gap_of(times, 5.0, 15.0)
    assert (gap.during, gap.before, gap.open) == (9.0, 2.0, 9.0)  # partition 1 since 6.0


def _topic(bootstrap: str, partitions: int) -> str:
    topic = f"gap-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


@pytest.mark.stack
def test_committed_timestamps_of_the_moving_partitions_give_the_gap() -> None:
    bootstrap = read_stack().kafka
    topic = _topic(bootstrap, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{topic}"})
    producer.init_transactions(30)
    base = time.time() - 90
    steady = [base + 2 * i for i in range(20)]  # a result every 2 s, then a 7 s pause
    resumed = [steady[-1] + 7, steady[-1] + 8, steady[-1] + 10]
    producer.begin_transaction()
    for t in steady + resumed:
        producer.produce(topic, b"r", partition=0, timestamp=int(t * 1000))
    producer.produce(topic, b"other", partition=1, timestamp=int((steady[-1] + 3) * 1000))
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"aborted", partition=0, timestamp=int((steady[-1] + 4) * 1000))
    producer.abort_transaction(30)

    read = output_times(bootstrap, topic, [0], steady[2])
    assert read.keys() == {0}
    assert read[0] == pytest.approx(steady[2:] + resumed, abs=0.001)
    start, end = steady[15] + 1, resumed[-1]  # the migration's stretch
    gap = measure(bootstrap, topic, [0], start, end)
    assert gap.during == pytest.approx(7.0, abs=0.01)
    assert gap.before == pytest.approx(2.0, abs=0.01)
    assert gap.open == pytest.approx(0.0, abs=0.01)
