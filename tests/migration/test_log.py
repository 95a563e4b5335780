"""The in-memory log: offsets, reads, seeks by offset and time, independent readers."""

import numpy as np
import pytest
from streamshift_engine.migration.log import Log, Reader, Topic


def make_log() -> Log:
    topic = Topic("bids", 2, ["price"])
    topic.append(0, np.array([1, 3, 3, 7]), {"price": np.array([10, 11, 12, 13])})
    topic.append(1, np.array([2, 5]), {"price": np.array([20, 21])})
    return Log([topic])


def test_appends_get_consecutive_offsets_per_partition() -> None:
    log = make_log()
    assert log["bids"].append(0, np.array([9]), {"price": np.array([14])}) == 4
    assert log.end_offsets([0, 1]) == {("bids", 0): 5, ("bids", 1): 2}
    assert log["bids"].read(0, 3).offset.tolist() == [3, 4]
    assert log["bids"].read(0, 3).columns["price"].tolist() == [13, 14]


def test_decreasing_timestamps_are_rejected() -> None:
    log = make_log()
    with pytest.raises(ValueError, match="must not decrease"):
        log["bids"].append(0, np.array([6]), {"price": np.array([1])})


def test_offset_for_time_is_first_offset_at_or_after() -> None:
    topic = make_log()["bids"]
    assert [topic.offset_for_time(0, t) for t in (0, 1, 2, 3, 4, 7, 8)] == [0, 0, 1, 1, 3, 3, 4]


def test_readers_are_independent_and_respect_limits() -> None:
    log = make_log()
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
    log = make_log()
    reader = Reader(log)
    reader.seek_to_end([1])
    assert reader.poll(10) == []
    log["bids"].append(1, np.array([6]), {"price": np.array([22])})
    assert [b.offset.tolist() for b in reader.poll(10)] == [[2]]
