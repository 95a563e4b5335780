"""Dead-letter records without the stack: at most `max_record_bytes` long (the value cut first,
then the original headers dropped, at worst the coordinates alone), the original headers first
and counted, and a columnar event sliced out of its record with every column."""

from __future__ import annotations

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import decode_columnar, encode_columnar
from streamshift_engine.runtime.dead_letters import RECORD_OVERHEAD, bounded, event_record

OURS = [("reason", b"bad json"), ("topic", b"bids"), ("partition", b"2"), ("offset", b"7")]


def test_a_record_that_fits_keeps_its_key_value_and_headers_first() -> None:
    headers = [("trace", b"abc"), ("empty", None)]
    letter = bounded(b"k", b"{not json", headers, OURS, 10_000)
    assert (letter.key, letter.value) == (b"k", b"{not json")
    assert letter.headers[:2] == headers
    assert letter.headers[2:] == [*OURS, ("truncated", b"false"), ("original-headers", b"2")]


def test_a_long_value_is_cut_to_fit_with_the_headers() -> None:
    value = bytes(range(256)) * 400  # 102,400 bytes
    letter = bounded(None, value, [("trace", b"abc")], OURS, 10_000)
    assert letter.size() <= 10_000 - RECORD_OVERHEAD
    assert letter.value is not None and value.startswith(letter.value)
    assert len(letter.value) > 9_000
    assert dict(letter.headers)["truncated"] == b"true"
    assert letter.headers[0] == ("trace", b"abc")


def test_headers_too_long_to_fit_are_dropped_then_only_coordinates_remain() -> None:
    huge = [("h", b"x" * 20_000)]
    letter = bounded(b"k", b"v" * 100, huge, OURS, 10_000)
    assert letter.size() <= 10_000 - RECORD_OVERHEAD
    assert letter.value == b"v" * 100 and dict(letter.headers)["original-headers"] == b"0"
    bare = bounded(b"k", b"v", [], [("reason", b"r" * 20_000)], 10_000).bare()
    assert (bare.key, bare.value) == (None, b"")


def test_a_columnar_event_is_sliced_out_of_its_record_with_every_column() -> None:
    n = 5
    batch = Batch(
        "bid",
        np.arange(n, dtype=np.int64) * 10,
        np.zeros(n, np.int32),
        np.arange(n, dtype=np.int64),
        {"auction": np.arange(n, dtype=np.int64) + 1000, "url": np.array(list("abcde"), object)},
    )
    one = event_record(encode_columnar(batch), 3)
    assert one is not None
    event = decode_columnar(one)
    assert event.source == "bid" and len(event) == 1
    assert (int(event.ts[0]), int(event.columns["auction"][0])) == (30, 1003)
    assert event.columns["url"].tolist() == ["d"]
    assert event_record(encode_columnar(batch), 5) is None
    assert event_record(b"not arrow", 0) is None
