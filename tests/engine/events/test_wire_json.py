"""JSON wire format: round trips, and every malformed record kind reaching the dead letters."""

from __future__ import annotations

import array
import itertools
from collections.abc import Collection

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.chained import Chained
from streamshift_engine.events.wire import DeadLetter, Schema, decode_json, encode_json
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import BID, SCHEMAS

SCHEMA = Schema("s", (("k", "int"), ("v", "float"), ("name", "str"), ("t", "int")), "t")
NOTED = Schema("s", SCHEMA.fields, "t", unread=(("note", "str"),))
"""`SCHEMA` in records that also hold a `note` the query does not read."""
INT64 = st.integers(-(2**63), 2**63 - 1)
ROW = st.fixed_dictionaries(
    {
        "k": INT64,
        "v": st.floats(allow_nan=False, allow_infinity=False),
        "name": st.text(),
        "t": INT64,
    }
)
PLAIN_ROW = st.fixed_dictionaries(
    {
        "k": INT64,
        "v": st.integers(-(10**6), 10**6).map(lambda eighths: eighths / 8),
        "name": st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E)),
        "t": INT64,
    }
)
"""Rows whose records `_skippable` passes (ASCII, no exponent): their unread values are
skipped, not decoded."""
NOTES = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
    st.integers(-(2**63), 2**64 - 1),
    st.lists(st.integers(0, 9), max_size=2),
    st.none(),
)
"""Unread values, of the schema's type or not: the reference does not check them."""


def _buffer(record: bytes) -> array.array[int]:
    """The record in a buffer that is not bytes, bytearray or memoryview (which orjson reads
    as they are), like the Kafka source's `Payload`."""
    return array.array("B", record)


def _batch(rows: list[dict[str, object]]) -> Batch:
    columns = {
        "k": np.array([r["k"] for r in rows], dtype=np.int64),
        "v": np.array([r["v"] for r in rows], dtype=np.float64),
        "name": np.array([r["name"] for r in rows] + [None], dtype=object)[:-1],
        "t": np.array([r["t"] for r in rows], dtype=np.int64),
    }
    n = len(rows)
    partition = np.arange(n, dtype=np.int32) % 3
    return Batch("s", columns["t"], partition, np.arange(n, dtype=np.int64), columns)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(ROW, max_size=30))
def test_json_round_trip(rows: list[dict[str, object]]) -> None:
    batch = _batch(rows)
    decoded, dead = decode_json("s", encode_json(batch), batch.partition, batch.offset, SCHEMA)
    assert dead == []
    assert list(decoded.rows()) == list(batch.rows())
    assert np.array_equal(decoded.ts, batch.ts)
    assert np.array_equal(decoded.partition, batch.partition)
    assert np.array_equal(decoded.offset, batch.offset)


def test_nexmark_events_round_trip() -> None:
    for kind, batch in generate(1, 0, 3000).items():
        records = encode_json(batch)
        decoded, dead = decode_json(kind, records, batch.partition, batch.offset, SCHEMAS[kind])
        assert dead == []
        assert list(decoded.rows()) == list(batch.rows())
        assert np.array_equal(decoded.ts, batch.ts)


GOOD = {"k": 1, "v": 2.5, "name": "a", "t": 10}
MALFORMED = [
    (b'{"k": 1, "v": 2.5, "name": "a", "t": 1', "bad json: "),
    (b"", "bad json: "),
    (b"\xff\xfe", "bad json: "),
    (b"[1, 2]", "not a JSON object: list"),
    (b"7", "not a JSON object: int"),
    (orjson.dumps({"k": 1, "v": 2.5, "t": 10}), "missing field 'name'"),
    (orjson.dumps({**GOOD, "k": "1"}), "wrong type for field 'k': expected int, got str"),
    (orjson.dumps({**GOOD, "k": 1.0}), "wrong type for field 'k': expected int, got float"),
    (orjson.dumps({**GOOD, "t": True}), "wrong type for field 't': expected int, got bool"),
    (orjson.dumps({**GOOD, "v": None}), "wrong type for field 'v': expected float, got null"),
    (orjson.dumps({**GOOD, "name": 5}), "wrong type for field 'name': expected str, got int"),
    (orjson.dumps({**GOOD, "name": [1]}), "wrong type for field 'name': expected str, got array"),
    (b'{"k": 18446744073709551615, "v": 1, "name": "a", "t": 1}', "field 'k' out of int64 range"),
]
_NOTED = b'{"k":1,"v":2.5,"name":"a","t":10,"note":'
MALFORMED_NOTES = [
    (_NOTED + b'"\xff"}', "bad json: "),
    (_NOTED + b'"a\xc3"}', "bad json: "),
    (_NOTED + b'"\xed\xa0\x80"}', "bad json: "),
    (_NOTED + b"1e999}", "bad json: "),
    (_NOTED + b"-2E400}", "bad json: "),
    (_NOTED + b"1" + b"0" * 400 + b"}", "bad json: "),
    (_NOTED + b"[1, 9" + b"9" * 320 + b"]}", "bad json: "),
    (_NOTED + b'"\\q"}', "bad json: "),
    (_NOTED + b'"a\x01"}', "bad json: "),
    (_NOTED + b'"\\ud800"}', "bad json: "),
    (_NOTED + b"01}", "bad json: "),
    (b'{"k":1,"v":2.5,"t":10,"note":"x"}', "missing field 'name'"),
    (_NOTED + b'"x","name":5}', "wrong type for field 'name': expected str, got int"),
]
"""Malformed records holding a `note` (`NOTED`): the unread value itself (invalid UTF-8, a
number beyond a double, a bad escape, a raw control character, a lone surrogate, a leading
zero), or a field read."""


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(ROW, min_size=0, max_size=8),
    bad=st.lists(st.integers(0, len(MALFORMED) + len(MALFORMED_NOTES) - 1), min_size=1, max_size=4),
    data=st.data(),
    as_buffers=st.booleans(),
    cuts=st.lists(st.integers(0, 12), max_size=3),
    noted=st.booleans(),
)
def test_malformed_records_become_dead_letters_and_decoding_continues(
    rows: list[dict[str, object]],
    bad: list[int],
    data: st.DataObject,
    as_buffers: bool,
    cuts: list[int],
    noted: bool,
) -> None:
    """Records as bytes or as other buffers (as the Kafka source hands them over, where the
    consumer holds them), in one list or in several `Chained` (cut at `cuts`, as a worker holds
    several consumes): the same batch and dead letters, whose raw records are bytes. `noted`:
    plain records also holding an unread `note` (`NOTED`), and malformed ones of its own."""
    schema, malformed = (NOTED, MALFORMED + MALFORMED_NOTES) if noted else (SCHEMA, MALFORMED)
    if noted:
        rows = data.draw(st.lists(PLAIN_ROW, max_size=8))
    records = [orjson.dumps({**row, "note": data.draw(NOTES)} if noted else row) for row in rows]
    expected_rows = list(_batch(rows).rows())
    positions = []
    for choice in bad:
        choice %= len(malformed)
        at = data.draw(st.integers(0, len(records)))
        records.insert(at, malformed[choice][0])
        positions = [p + 1 if p >= at else p for p in positions]
        positions.append(at)
    reasons = {p: malformed[c % len(malformed)][1] for p, c in zip(positions, bad, strict=True)}
    n = len(records)
    partitions, offsets = [p % 4 for p in range(n)], [100 + p for p in range(n)]
    listed: list[bytes | array.array[int]] = [_buffer(r) if as_buffers else r for r in records]
    handed: Collection[bytes | array.array[int]] = listed
    if cuts:
        bounds = [0, *sorted(min(cut, n) for cut in cuts), n]
        handed = Chained([listed[a:b] for a, b in itertools.pairwise(bounds)])
    decoded, dead = decode_json("s", handed, partitions, offsets, schema)
    assert list(decoded.rows()) == expected_rows
    good = [p for p in range(n) if p not in reasons]
    assert decoded.offset.tolist() == [100 + p for p in good]
    assert [d.offset - 100 for d in dead] == sorted(reasons)
    for letter in dead:
        position = letter.offset - 100
        assert letter.source == "s" and letter.partition == position % 4
        assert type(letter.raw) is bytes and letter.raw == records[position]
        assert letter.reason.startswith(reasons[position]), (letter.reason, reasons[position])


@pytest.mark.parametrize(("record", "reason"), MALFORMED_NOTES)
def test_a_malformed_record_among_plain_ones_is_a_dead_letter(record: bytes, reason: str) -> None:
    """Alone among records whose unread values the typed path may skip (`_skippable`), each
    malformed one still reaches the dead letters with its reason."""
    plain = [orjson.dumps({**GOOD, "k": k, "note": "x" * k}) for k in range(3)]
    for handed in ([*plain, record], [record, *plain], [_buffer(r) for r in [*plain, record]]):
        decoded, dead = decode_json("s", handed, [0] * 4, range(4), NOTED)
        assert decoded.columns["k"].tolist() == [0, 1, 2]
        assert len(dead) == 1 and dead[0].raw == record and dead[0].reason.startswith(reason)


def test_bad_json_reason_says_where() -> None:
    _, dead = decode_json("bid", [b'{"auction": 1,'], [2], [7], BID)
    assert dead[0] == DeadLetter("bid", 2, 7, dead[0].reason, b'{"auction": 1,')
    assert dead[0].reason.startswith("bad json: ") and "line 1" in dead[0].reason


def test_ints_are_accepted_where_floats_are_expected_and_extra_fields_ignored() -> None:
    record = orjson.dumps({**GOOD, "v": 3, "unknown": [1]})
    for handed in (record, _buffer(record)):  # the untyped path reads a buffer's copy
        decoded, dead = decode_json("s", [handed], [0], [0], SCHEMA)
        assert dead == []
        assert decoded.columns["v"].dtype == np.float64 and decoded.columns["v"].tolist() == [3.0]
        assert list(decoded.columns) == ["k", "v", "name", "t"]
