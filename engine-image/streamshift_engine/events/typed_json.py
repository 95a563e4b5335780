"""Typed decoding of JSON records with msgspec: the fast path of `wire.decode_json`.

Each record is decoded on its own (see `wire` on why records are never joined) into a msgspec
`Struct` of the fields a query reads, each with its type: `int`, `float` (a JSON integer or
float) or `str`. An int field read is decoded as any integer and bounded by its column's int64
conversion (`OverflowError` refuses the batch as msgspec would). Decoding into a struct builds
no dict and no key strings: about half the cost of `orjson.loads` on Nexmark bids. Each column,
strings included, is one `np.fromiter` over a list comprehension reading one attribute of every
struct, compiled for that attribute name (`_attribute_values`): CPython 3.11 specialises a
literal attribute load on a struct's slot, where `operator.attrgetter` looks the name up
generically, at several times the cost per value.

The values a query does not read are skipped when the whole batch is `skippable` (C,
`_skippable.c`: all ASCII, no exponent, fewer than 300 digits a record), as unknown fields of a
struct of the read fields only. msgspec's skip checks a value's grammar, escapes, surrogates and
control characters but neither UTF-8 nor whether a number fits a double; in such records every
value is valid UTF-8 and every number does. Skipping spares building a Python string for each
unread text (an auction's item name, description and extra: about half of q3's decode). Any
other batch is decoded by a struct of exactly the schema's fields, read or not (unknown fields
forbidden, an unread int bounded to int64 by msgspec, an unread str decoded), which checks
every byte of a record itself.

A record msgspec accepts is one `wire._check` accepts, with the same values: JSON syntax, UTF-8
and string escapes are checked as strictly as orjson does, a float beyond the double range is
refused by both, integers outside int64 and booleans in number fields read are refused, and a
duplicated key keeps its last value in both. msgspec may refuse more than the reference does (a
batch not skippable with an unknown field, or a malformed field the query does not read): such
a batch raises here and goes to the slower orjson paths, which decide.
`tests/engine/events/test_typed_json.py` checks the agreement on random and edge-case records.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import numpy as np
import numpy.typing as npt

from streamshift_engine.events._skippable import skippable

if TYPE_CHECKING:
    from typing_extensions import Buffer

INT64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_TYPES: dict[str, Any] = {"int": INT64, "float": float, "str": str}
_DTYPES: dict[str, type[np.generic]] = {"int": np.int64, "float": np.float64}

Errors = (msgspec.DecodeError, UnicodeDecodeError, OverflowError)
"""What `decode_columns` raises for a batch it does not accept (a validation error is a
`DecodeError`; invalid UTF-8 in a string raises `UnicodeDecodeError`; an integer outside int64
in a field it reads, `OverflowError` from its column)."""


@lru_cache(maxsize=256)
def _decoder(
    fields: tuple[tuple[str, str], ...],
    unbounded: frozenset[str] = frozenset(),
    only: frozenset[str] | None = None,
) -> msgspec.json.Decoder[Any]:
    """A decoder of records holding exactly `fields` (attributes `f0`, `f1`, ... renamed to the
    field names, which need not be Python identifiers). The int fields `unbounded` take any
    integer: their columns' int64 conversion refuses the others (msgspec checks a bound on
    each value it decodes, some 2% of its time on Nexmark records). With `only`, the struct
    has just those fields (same attribute names) and skips any other."""
    kept = [(i, n, kind) for i, (n, kind) in enumerate(fields) if only is None or n in only]
    attributes = [(f"f{i}", int if name in unbounded else _TYPES[kind]) for i, name, kind in kept]
    renamed = {f"f{i}": name for i, name, _ in kept}
    struct = msgspec.defstruct(
        "Record", attributes, rename=renamed, forbid_unknown_fields=only is None, gc=False
    )
    return msgspec.json.Decoder(struct)


@lru_cache(maxsize=256)
def _attribute_values(attribute: str) -> Callable[[list[Any]], list[Any]]:
    """`[record.<attribute> for record in records]` for one attribute name (`f0`, `f1`, ...),
    compiled once, so that the interpreter specialises its attribute load."""
    if not attribute.isidentifier():
        raise ValueError(f"not an attribute name: {attribute!r}")
    namespace: dict[str, Any] = {}
    exec(f"def values(records):\n    return [record.{attribute} for record in records]", namespace)
    values: Callable[[list[Any]], list[Any]] = namespace["values"]
    return values


Reader = Callable[[Collection["Buffer"]], dict[str, npt.NDArray[Any]]]


@lru_cache(maxsize=256)
def columns_reader(
    fields: tuple[tuple[str, str], ...], read: tuple[tuple[str, str], ...]
) -> Reader:
    """`decode_columns` of these `fields` and `read` as one function, its decoders and column
    getters built once (a worker decodes every input partition of every consume: the fixed
    cost of a call counts). A batch is scanned by `skippable` only when some field is unread."""
    unbounded = frozenset(name for name, kind in read if kind == "int")
    decode = _decoder(fields, unbounded).decode
    skip = _decoder(fields, unbounded, frozenset(name for name, _ in read)).decode
    unread = len(read) < len(fields)
    attribute = {name: f"f{i}" for i, (name, _) in enumerate(fields)}
    getters = [
        (name, _attribute_values(attribute[name]), object if kind == "str" else _DTYPES[kind])
        for name, kind in read
    ]

    def read_columns(records: Collection[Buffer]) -> dict[str, npt.NDArray[Any]]:
        skipping = unread and skippable(records)
        decoded = list(map(skip if skipping else decode, records))
        count = len(decoded)
        return {name: np.fromiter(get(decoded), dtype, count) for name, get, dtype in getters}

    return read_columns


def decode_columns(
    records: Collection[Buffer],
    fields: tuple[tuple[str, str], ...],
    read: tuple[tuple[str, str], ...],
) -> dict[str, npt.NDArray[Any]]:
    """Columns of the `read` fields of well-formed records holding `fields` (name, kind), and
    only those unless the batch is `skippable`; raises one of `Errors` otherwise."""
    return columns_reader(fields, read)(records)
