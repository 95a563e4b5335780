"""The typed fast path (msgspec) against the record-by-record reference (`wire._check`, orjson).

Whatever the typed path accepts, the reference accepts with the same values: on well-formed
records written in any JSON style, on random mutations of them, on random values of any JSON
type, and on numbers and strings at the edges (int64 and double range, escapes, UTF-8).
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events import typed_json
from streamshift_engine.events._skippable import skippable
from streamshift_engine.events.wire import FieldKind, Schema, _check, decode_json, encode_json
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.nexmark.model import SCHEMAS

FIELDS: tuple[tuple[str, FieldKind], ...] = (
    ("k", "int"),
    ("v", "float"),
    ("name", "str"),
    ("t", "int"),
    ("note", "str"),
)
READ = FIELDS[:4]
SCHEMA = Schema("s", READ, "t", unread=FIELDS[4:])
INT64 = st.integers(-(2**63), 2**63 - 1)
VALUES = {
    "k": INT64,
    "v": st.one_of(st.floats(allow_nan=False, allow_infinity=False), INT64),
    "name": st.text(),
    "t": INT64,
    "note": st.text(max_size=5),
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)
NUMBER_TEXT = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,4})?\Z")
NOISE = st.sampled_from(
    [
        *(b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\", b" ", b"\t", b"\n", b"0", b"9", b"-"),
        *(b"e", b"E", b".", b"+", b"u", b"t", b"n", b"\x00", b"\x7f", b"\xff", b"\xc3", b"\xe9"),
        *(b"\\u", b"\\ud800", b"null", b"true", b"1e999", b"18446744073709551616", b'"k"'),
    ]
)


def _reference(record: bytes) -> dict[str, Any] | None:
    """The reference's reading of one record: its read fields as column values, or None."""
    reason, parsed = _check(record, SCHEMA)
    if reason is not None:
        return None
    return {name: float(parsed[name]) if kind == "float" else parsed[name] for name, kind in READ}


def _typed(record: bytes) -> dict[str, Any] | None:
    try:
        columns = typed_json.decode_columns([record], FIELDS, READ)
    except typed_json.Errors:
        return None
    return {
        name: column[0].item() if column.dtype != object else column[0]
        for name, column in columns.items()
    }


def _agrees(record: bytes) -> None:
    typed = _typed(record)
    if typed is not None:
        reference = _reference(record)
        assert reference is not None, record
        assert typed.keys() == reference.keys()
        for name, value in typed.items():
            assert type(value) is type(reference[name]), (record, name)
            assert value == reference[name] or (
                value != value and reference[name] != reference[name]
            )


def _styled(row: dict[str, Any], style: int) -> bytes:
    """The row as JSON in one of several styles a producer might use."""
    if style == 0:
        return orjson.dumps(row)
    if style == 1:
        return json.dumps(row, ensure_ascii=True).encode()
    if style == 2:
        return json.dumps(dict(reversed(row.items())), ensure_ascii=False, indent=1).encode()
    return (" " + json.dumps(row, separators=(" ,", " : ")) + "\n").encode()


@settings(max_examples=300, deadline=None)
@given(row=st.fixed_dictionaries(VALUES), style=st.integers(0, 3))
def test_well_formed_records_in_any_style_are_accepted_with_the_reference_values(
    row: dict[str, Any], style: int
) -> None:
    record = _styled(row, style)
    assert _typed(record) is not None
    _agrees(record)


@settings(max_examples=300, deadline=None)
@given(
    row=st.fixed_dictionaries(VALUES),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 2), NOISE), min_size=1, max_size=4
    ),
)
def test_mutated_records_are_accepted_only_as_the_reference_accepts_them(
    row: dict[str, Any], edits: list[tuple[int, int, bytes]]
) -> None:
    record = bytearray(orjson.dumps(row))
    for at, action, noise in edits:
        at %= len(record) + 1
        if action == 0:
            record[at:at] = noise
        elif action == 1:
            record[at : at + len(noise)] = noise
        else:
            del record[at : at + len(noise)]
    _agrees(bytes(record))


@settings(max_examples=300, deadline=None)
@given(
    row=st.fixed_dictionaries(VALUES),
    field=st.sampled_from([n for n, _ in FIELDS] + ["x"]),
    value=JSON_VALUES,
)
def test_values_of_any_json_type_are_accepted_only_where_the_reference_accepts_them(
    row: dict[str, Any], field: str, value: Any
) -> None:
    _agrees(orjson.dumps({**row, field: value}))


@settings(max_examples=300, deadline=None)
@given(
    row=st.fixed_dictionaries(VALUES), field=st.sampled_from(["k", "v", "note"]), text=NUMBER_TEXT
)
def test_number_texts_parse_as_the_reference_parses_them(
    row: dict[str, Any], field: str, text: str
) -> None:
    dumped = orjson.dumps({**row, field: 0})
    _agrees(dumped.replace(f'"{field}":0'.encode(), f'"{field}":{text}'.encode()))


STRING_PIECES = st.sampled_from(
    [
        *(b"a", b"e", b"E", b"1", b" ", b"\\", b'\\"', b"\\n", b"\\u00e9", b"\\ud83d\\ude00"),
        *(b"\\ud800", b"\\udc00", b"\\x", b"\\u12", b"\t", b"\x00", b"\x1f", b"\x7f"),
        *(b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"),
    ]
)
LAX_NUMBERS = st.one_of(
    NUMBER_TEXT.map(str.encode),
    st.sampled_from([b"1e999", b"-1E400", b"1e308", b"2e308", b"1.8e308", b"1e-400", b"01", b"1."]),
    st.integers(300, 420).map(lambda digits: b"9" * digits),
    st.integers(300, 420).map(lambda digits: b"0." + b"1" * digits),
)
RAW_VALUES = st.recursive(
    LAX_NUMBERS
    | st.sampled_from([b"true", b"null", b"tru", b"NaN"])
    | st.lists(STRING_PIECES, max_size=6).map(lambda pieces: b'"' + b"".join(pieces) + b'"'),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda items: b"[" + b",".join(items) + b"]")
        | st.lists(st.tuples(STRING_PIECES, inner), max_size=2).map(
            lambda pairs: b"{" + b",".join(b'"' + k + b'":' + v for k, v in pairs) + b"}"
        )
    ),
    max_leaves=4,
)
"""JSON value texts, well formed or not in the ways a parser skipping a value may overlook:
invalid UTF-8, bad escapes, raw control characters, numbers beyond a double or off the
grammar, all possibly nested."""
PLAIN_VALUES = {
    **VALUES,
    "v": st.integers(-(10**6), 10**6).map(lambda eighths: eighths / 8),
    "name": st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E)),
}
"""Rows whose read fields are plain ASCII without exponents, so that what a record's unread
value holds decides alone."""


@settings(max_examples=500, deadline=None)
@given(
    row=st.fixed_dictionaries(PLAIN_VALUES),
    field=st.sampled_from([b'"note"', b'"x"', b'"\\u006eote"']),
    value=RAW_VALUES,
)
def test_values_the_query_does_not_read_are_checked_as_the_reference_checks_them(
    row: dict[str, Any], field: bytes, value: bytes
) -> None:
    """An unread field (`note`, also with an escaped name, or an unknown `x`) holding any
    value, malformed ones included: accepted only where the reference accepts the record."""
    _agrees(orjson.dumps(row)[:-1] + b"," + field + b":" + value + b"}")


EDGES = [
    '{"k":9223372036854775807,"v":1.7976931348623157e308,"name":"","t":-9223372036854775808,"note":""}',
    '{"k":9223372036854775808,"v":1,"name":"","t":0,"note":""}',
    '{"k":-9223372036854775809,"v":1,"name":"","t":0,"note":""}',
    '{"k":1,"v":1.7976931348623159e308,"name":"","t":0,"note":""}',
    '{"k":1,"v":1e-400,"name":"","t":0,"note":""}',
    '{"k":1,"v":18446744073709551616,"name":"","t":0,"note":""}',
    '{"k":1,"v":1' + "0" * 400 + ',"name":"","t":0,"note":""}',
    '{"k":1,"v":9007199254740993,"name":"","t":0,"note":""}',
    '{"k":1,"v":-0,"name":"-0.0","t":0,"note":""}',
    '{"k":1,"v":1,"name":"\\ud800","t":0,"note":""}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"\\udc00\\ud800"}',
    '{"k":1,"v":1,"name":"\\ud83d\\ude00\\u00e9\\n\\"","t":0,"note":"\\/"}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"\\x"}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"a\tb"}',
    '{"k":1,"k":2,"v":1,"name":"x","t":0,"note":""}',
    '{"k":"a","k":2,"v":1,"name":"x","t":0,"note":""}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"","note":5}',
    '{"\\u006b":1,"v":1,"name":"x","t":0,"note":""}',
    '{"k":1,"v":1,"name":"x","t":0,"note":""}\x0c',
    '\ufeff{"k":1,"v":1,"name":"x","t":0,"note":""}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"","extra":[[[[]]]]}',
    '{"k":true,"v":false,"name":null,"t":0,"note":""}',
    '{"k":1,"v":NaN,"name":"x","t":0,"note":""}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"","extra":1e999}',
    '{"k":1,"v":1,"name":"x","t":0,"note":"","extra":1' + "0" * 400 + "}",
]


@pytest.mark.parametrize("text", EDGES)
def test_edge_cases_agree(text: str) -> None:
    _agrees(text.encode())


@pytest.mark.parametrize(
    "raw",
    [
        b'{"k":1,"v":1,"name":"\xff","t":0,"note":""}',
        b'{"k":1,"v":1,"name":"x","t":0,"note":"\xed\xa0\x80"}',
        b'{"k":1,"v":1,"name":"x","t":0,"note":"\xc3"}',
        b'{"k":1,"v":1,"name":"x","t":0,"note":"","extra":"\xff"}',
    ],
)
def test_invalid_utf8_anywhere_is_refused(raw: bytes) -> None:
    assert _typed(raw) is None and _reference(raw) is None


def test_nexmark_records_take_the_typed_path_for_projected_schemas() -> None:
    for kind, batch in generate(2, 0, 3000).items():
        schema = SCHEMAS[kind]
        projected = schema.project(schema.names[:2])
        records = encode_json(batch)
        columns = typed_json.decode_columns(
            records, projected.fields + projected.unread, projected.fields
        )
        for name, _ in projected.fields:
            assert columns[name].tolist() == batch.columns[name].tolist()
        decoded, dead = decode_json(kind, records, batch.partition, batch.offset, projected)
        assert dead == [] and list(decoded.columns) == [n for n, _ in projected.fields]
        assert np.array_equal(decoded.ts, batch.ts)


def test_unread_values_are_skipped_only_in_skippable_batches() -> None:
    """A batch `_skippable` passes is decoded by a struct of the read fields, other fields
    skipped (an unknown one too); any other batch by one of exactly the schema's fields, which
    refuses an unknown field (the orjson paths then decide)."""
    plain = b'{"k":1,"v":0.5,"name":"x","t":7,"note":"","x":[1,{"y":null}]}'
    assert typed_json.decode_columns([plain], FIELDS, READ)["k"].tolist() == [1]
    for other in (plain.replace(b"null", b"1e5"), plain.replace(b'"x"', b'"\xc3\xa9"')):
        assert _reference(other) is not None
        with pytest.raises(typed_json.Errors):
            typed_json.decode_columns([plain, other], FIELDS, READ)
    for kind, batch in generate(4, 0, 2000).items():
        assert skippable(encode_json(batch)), kind


def test_each_schema_object_gets_its_own_reader() -> None:
    """Each schema object carries its own typed reader (`Schema.reader`): schemas of one
    source reading different fields, used in turns, each read their own fields."""
    batch = generate(3, 0, 200)["bid"]
    records = encode_json(batch)
    names = SCHEMAS["bid"].names
    schemas = [SCHEMAS["bid"].project(names[: 1 + i % len(names)]) for i in range(300)]
    for schema in [*schemas, *reversed(schemas)]:
        decoded, dead = decode_json("bid", records, batch.partition, batch.offset, schema)
        assert dead == [] and list(decoded.columns) == [n for n, _ in schema.fields]
        for name in decoded.columns:
            assert decoded.columns[name].tolist() == batch.columns[name].tolist()


def test_projected_schemas_keep_the_records_field_order() -> None:
    """`project` keeps the order records hold their fields in (the typed reader's struct
    declares them so), also projected again and pickled; it decodes the same columns."""
    person = SCHEMAS["person"]
    once = person.project(["state", "id"])
    twice = once.project(["id"])
    for schema in (once, twice, pickle.loads(pickle.dumps(twice))):
        assert schema.record_order == person.names
    batch = generate(5, 0, 500)["person"]
    records = encode_json(batch)
    for schema in (once, twice):
        unordered = Schema(schema.source, schema.fields, schema.time_field, schema.unread)
        decoded, _ = decode_json("person", records, batch.partition, batch.offset, schema)
        plain, _ = decode_json("person", records, batch.partition, batch.offset, unordered)
        assert unordered == schema
        for name, column in decoded.columns.items():
            assert column.tolist() == plain.columns[name].tolist() == batch.columns[name].tolist()


INT_EDGES = [
    "0",
    "-9223372036854775808",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1" + "0" * 30,
]


@pytest.mark.parametrize("value", INT_EDGES)
@pytest.mark.parametrize("field", ["k", "count"])
def test_integers_beyond_int64_are_refused_where_read(value: str, field: str) -> None:
    """An int field read (`k`: msgspec takes any integer, its column's conversion bounds it)
    or not (`count`: skipped, the record being plain ASCII): the typed path takes exactly the
    int64 values of `k` and any integer in `count`, and the batch decodes as the reference
    judges its records (a read field beyond int64 is a dead letter, an unread one is not
    checked unless orjson cannot parse it)."""
    fields = (*FIELDS, ("count", "int"))
    schema = Schema("s", READ, "t", unread=fields[len(READ) :])
    row = orjson.dumps({"k": 1, "v": 0.5, "name": "x", "t": 7, "note": "", "count": 2})
    record = row.replace(
        f'"{field}":{1 if field == "k" else 2}'.encode(), f'"{field}":{value}'.encode()
    )
    accepted = -(2**63) <= int(value) < 2**63 or field == "count"
    try:
        columns = typed_json.decode_columns([record], fields, READ)
    except typed_json.Errors:
        columns = None
    assert (columns is not None) == accepted
    if columns is not None and field == "k":
        assert columns["k"].tolist() == [int(value)]
    good = orjson.dumps({"k": 3, "v": 1.5, "name": "y", "t": 8, "note": "", "count": 4})
    batch, dead = decode_json("s", [good, record], [0, 0], [10, 11], schema)
    reason, _ = _check(record, schema)
    assert [letter.offset for letter in dead] == ([] if reason is None else [11])
    assert batch.offset.tolist() == ([10, 11] if reason is None else [10])
    assert batch.columns["k"].tolist()[:1] == [3]
