"""`_skippable.skippable` against its definition in Python: every record all ASCII, no digit
followed by `e` or `E`, fewer than 300 digits; at every offset around the C scan's 16-byte blocks,
across its digit counters' flushes, and on any buffer or collection of them."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events._skippable import skippable
from streamshift_engine.events.chained import Chained

MAX_DIGITS = 300


def _plain(record: bytes) -> bool:
    exponent = any(a in b"0123456789" and b in b"eE" for a, b in pairwise(record))
    digits = sum(byte in b"0123456789" for byte in record)
    return record.isascii() and not exponent and digits < MAX_DIGITS


BYTES = st.sampled_from([b"0", b"9", b"5", b"e", b"E", b"d", b"f", b"/", b":", b"\x80", b"\xff"])
FILLER = st.sampled_from([b"x", b" ", b'"', b"1", b"12345678", b"abcdefghijklmnop"])
RECORDS = st.lists(BYTES | FILLER, max_size=60).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(records=st.lists(RECORDS, max_size=4))
def test_random_records_are_judged_as_defined(records: list[bytes]) -> None:
    assert skippable(records) == all(map(_plain, records))


@pytest.mark.parametrize("at", range(48))
def test_an_exponent_or_a_non_ascii_byte_is_found_at_any_offset(at: int) -> None:
    before, after = b"x" * at, b"x" * (47 - at)
    assert skippable([before + b"7x" + after])
    assert not skippable([before + b"7e" + after])
    assert not skippable([before + b"7E" + after])
    assert not skippable([before + b"\xc3" + after])
    assert skippable([before + b"xe" + after])


@pytest.mark.parametrize("spread", [1, 2, 16, 17])
def test_digits_are_counted_up_to_the_limit_across_blocks(spread: int) -> None:
    """Digits one every `spread` bytes: every 16th byte (`spread` 16) puts them all in one lane
    of the 16-byte counters, past their 255 before a flush."""
    for digits, expected in ((MAX_DIGITS - 1, True), (MAX_DIGITS, False)):
        record = (b"1" + b"x" * (spread - 1)) * digits
        assert skippable([record]) is expected
        assert skippable([b"x" * 7 + record]) is expected


def test_any_buffer_in_any_iterable_is_read() -> None:
    good, bad = b'{"a":1,"b":"x"}', b'{"a":1e5}'
    assert skippable([]) and skippable(iter([good]))
    assert skippable([memoryview(good), bytearray(good), good])
    assert skippable(Chained([[good], [], [good, good]]))
    assert not skippable(Chained([[good], [good, bad]]))
    assert not skippable([good, memoryview(b"x" * 20 + bad)[20:]])


def test_what_is_not_a_buffer_is_refused() -> None:
    with pytest.raises(TypeError):
        skippable([b"x", "x"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        skippable(3)  # type: ignore[arg-type]
