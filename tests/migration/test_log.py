"""The in-memory log: offsets, reads, seeks by offset and time, independent readers."""

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.cluster import Producer, make_log, sorted_inputs
from streamshift_engine.migration.log import Log, Reader, Topic


def two_partitions() -> Log:
    topic = Topic("bids", 2, ["price"])
    topic.append(0, np.array([1, 3, 3, 7]), {"price": np.array([10, 11, 12, 13])})
    topic.append(1, np.array([2, 5]), {"price": np.array([20, 21])})
    return Log([topic])


def test_appends_get_consecutive_offsets_per_partition() -> None:
    log = two_partitions()
    assert log["bids"].append(0, np.array([9]), {"price": np.array([14])}) == 4
    assert log.end_offsets([0, 1]) == {("bids", 0): 5, ("bids", 1): 2}
    assert log["bids"].read(0, 3).offset.tolist() == [3, 4]
    assert log["bids"].read(0, 3).columns["price"].tolist() == [13, 14]


def test_records_keep_arrival_order_when_timestamps_decrease() -> None:
    log = two_partitions()
    assert log["bids"].append(0, np.array([6, 2, 9]), {"price": np.array([14, 15, 16])}) == 4
    read = log["bids"].read(0, 0)
    assert read.offset.tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert read.ts.tolist() == [1, 3, 3, 7, 6, 2, 9]
    assert read.columns["price"].tolist() == [10, 11, 12, 13, 14, 15, 16]


def test_offset_for_time_scans_like_kafka_offsets_for_times() -> None:
    topic = Topic("bids", 1, ["price"])
    topic.append(0, np.array([5, 1, 8, 3, 8, 2]), {"price": np.arange(6)})
    # the first offset whose timestamp is >= t, not a binary search over unsorted times
    expected = {0: 0, 1: 0, 5: 0, 6: 2, 8: 2, 9: 6}
    assert {t: topic.offset_for_time(0, t) for t in expected} == expected
    assert topic.offset_for_time(0, 4) == 0


def test_offset_for_time_is_first_offset_at_or_after() -> None:
    topic = two_partitions()["bids"]
    assert [topic.offset_for_time(0, t) for t in (0, 1, 2, 3, 4, 7, 8)] == [0, 0, 1, 1, 3, 3, 4]


def test_readers_are_independent_and_respect_limits() -> None:
    log = two_partitions()
    first, second = Reader(log), Reader(log)
    first.assign({("bids", 0): 0, ("bids", 1): 0})
    second.seek_to_time([0], 3)
    second.stop_at({("bids", 0): 3})
    assert [b.ts.tolist() for b in first.poll(2)] == [[1, 3], [2, 5]]
    assert [b.ts.tolist() for b in second.poll(10)] == [[3, 3]]
    assert second.poll(10) == []
    assert second.at_limit(("bids", 0))
    assert [b.ts.tolist() for b in first.poll(10)] == [[3, 7]]


def test_seek_to_end_reads_only_later_appends() -> None:
    log = two_partitions()
    reader = Reader(log)
    reader.seek_to_end([1])
    assert reader.poll(10) == []
    log["bids"].append(1, np.array([6]), {"price": np.array([22])})
    assert [b.offset.tolist() for b in reader.poll(10)] == [[2]]


def _bids(ts: list[int], partitions: list[int]) -> Batch:
    times = np.array(ts, np.int64)
    return Batch(
        "bids",
        times,
        np.array(partitions, np.int32),
        np.zeros(len(ts), np.int64),
        {"price": np.arange(len(ts))},
    )


def test_the_producer_writes_in_arrival_order_by_arrival_time() -> None:
    bids = _bids([10, 40, 20, 50, 30, 45], [0, 0, 0, 1, 0, 1])
    inputs = sorted_inputs({"bids": bids})
    log = make_log(inputs, 2)
    producer = Producer(log, inputs, 25)
    assert producer.next_ts == 10
    producer.produce()  # arrival times [10, 40, 40, 50, 40, 50]: only the first arrives < 35
    assert log["bids"].read(0, 0).ts.tolist() == [10]
    producer.produce()  # < 60: the late 20 and 30 arrive after 40, in their order
    assert log["bids"].read(0, 0).ts.tolist() == [10, 40, 20, 30]
    assert log["bids"].read(1, 0).ts.tolist() == [50, 45]
    assert log["bids"].read(0, 0).columns["price"].tolist() == [0, 1, 2, 4]
    assert producer.exhausted


def test_the_producer_by_records_counts_arrival_order() -> None:
    inputs = sorted_inputs({"bids": _bids([10, 40, 20, 30], [0, 0, 0, 0])})
    log = make_log(inputs, 1)
    producer = Producer(log, inputs, 25, records_per_step=2)
    producer.produce()
    assert log["bids"].read(0, 0).ts.tolist() == [10, 40]
    assert producer.next_ts == 40  # the late 20 arrives after 40
    producer.produce()
    assert log["bids"].read(0, 0).ts.tolist() == [10, 40, 20, 30]
    assert producer.exhausted
