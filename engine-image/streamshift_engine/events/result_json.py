"""Results as JSON records, built column by column instead of record by record.

`encode_results_records` gives, per result, the bytes `orjson.dumps(record)` gives for the
record of `ResultBatch.to_records()` (id, window bounds, key and value fields, in that order),
without building a dict per result: each column becomes the JSON text of its values as one
part (integers as their int64 values, which `joined` writes in decimal, or beyond int64 by an
Arrow cast; strings with nothing to escape as they are, their quotes put in the constant parts
around them; floats and other numbers by one `orjson.dumps` of the whole column split into its
elements as `event_json` does; anything else by one `orjson.dumps` per value), and the columns
are glued between the constant `{"name":` parts row by row (`joined`: `_rowtext`, a few
`memcpy`s a row; Arrow's `binary_join_element_wise`, which takes about 10 ns a part and row,
constants too, where a part holds nulls or 64-bit offsets). An integer column holding one value
(the window bounds, -1, of results without a window) is folded into those constant parts
instead. Ids come from `id_parts` (the parts of the result ids), quoted the same way. A column's
text is made once per encoding (`Texts`): the window bounds and a key column are parts of the id
and fields as well. The records come back as one Arrow binary array (one buffer and its offsets,
no Python object per result); `encode_results_json` makes them a list of `bytes`.

A batch of fewer than `SMALL` results is encoded record by record, as the reference does: the
column-wise path costs about 0.2 ms whatever the size (some 20 Arrow calls), `orjson.dumps` of a
record about 1.7 us, and small batches come often when input arrives in small polls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from streamshift_engine.events import _rowtext, event_json
from streamshift_engine.events.results import ResultBatch

_CONTROL_BELOW = 0x20
SMALL = 96
"""Result batches of fewer results are encoded record by record (module docstring)."""


Part: TypeAlias = "pa.Array | npt.NDArray[np.int64] | str"
"""A piece of each row's text: a string array or int64 values (written in decimal; one value per
row), or one constant for all rows."""


class Texts:
    """The text of each column of one result batch, made once. Kept by the column's
    identity, with the column itself (so that its identity cannot pass to another array)."""

    def __init__(self) -> None:
        self.made: dict[tuple[str, int], tuple[npt.NDArray[Any], Any]] = {}

    def integers(self, column: npt.NDArray[np.integer[Any]]) -> Part:
        """`integer_text` of the column."""
        key = ("integers", id(column))
        if key not in self.made:
            self.made[key] = (column, integer_text(column))
        found: Part = self.made[key][1]
        return found

    def inferred(self, column: npt.NDArray[Any]) -> pa.Array | None:
        """The object column as Arrow infers it (None where it cannot)."""
        key = ("inferred", id(column))
        if key not in self.made:
            try:
                self.made[key] = (column, pa.array(column))
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                self.made[key] = (column, None)
        found: pa.Array | None = self.made[key][1]
        return found


IdParts: TypeAlias = "Callable[[ResultBatch, Texts], list[Part]]"
"""The result ids as parts, from the batch's column texts."""


def encode_results_json(results: ResultBatch, id_parts: IdParts) -> list[bytes]:
    """One JSON object per result as `bytes`; `id_parts` gives the result ids as parts."""
    records: list[bytes] = encode_results_records(results, id_parts).to_pylist()
    return records


def encode_results_records(results: ResultBatch, id_parts: IdParts) -> pa.Array:
    """One JSON object per result, as a binary array; `id_parts` gives the result ids as parts
    (Arrow text)."""
    if len(results) < SMALL:
        return pa.array(list(map(orjson.dumps, results.to_records())), pa.binary())
    texts = Texts()
    fields: list[tuple[str, list[Part]]] = [("id", _string_parts(id_parts(results, texts)))]
    fields += [("window_start", [_text(results.window_start, texts)])]
    fields += [("window_end", [_text(results.window_end, texts)])]
    for name, column in [*results.keys.items(), *results.values.items()]:
        if name != "id":  # a join's identity: the key part of the result id
            fields.append((name, _column_parts(column, texts)))
    pieces: list[Any] = []
    constant = ""
    for index, (name, parts) in enumerate(fields):
        constant += ("{" if index == 0 else ",") + orjson.dumps(name).decode() + ":"
        for part in parts:
            if isinstance(part, str):
                constant += part
            else:
                pieces += [constant, part]
                constant = ""
    return joined([*pieces, constant + "}"], len(results), pa.binary())


def joined(pieces: list[Part], count: int, kind: pa.DataType) -> pa.Array:
    """Row by row, the pieces (`str` constants, int64 values, string arrays) concatenated, as an
    array of `kind` (binary or string): by `_rowtext` when every array is a `pa.string()` array
    without nulls, else by Arrow."""
    parts: list[bytes | tuple[Any, ...]] = []
    for piece in pieces:
        if isinstance(piece, str):
            parts.append(piece.encode())
        elif isinstance(piece, np.ndarray):
            if piece.dtype != np.int64:
                raise TypeError(f"integer parts are int64, not {piece.dtype}")
            parts.append((piece,))
        elif piece.type == pa.string() and piece.null_count == 0:
            _, offsets, data = piece.buffers()
            ends = np.frombuffer(offsets, np.int32)[piece.offset : piece.offset + count + 1]
            parts.append((ends, b"" if data is None else data))
        else:
            return pc.cast(pc.binary_join_element_wise(*map(_arrow, pieces), ""), kind)
    if count == 0:
        return pa.array([], kind)
    data, offsets = _rowtext.join(count, parts)
    return pa.Array.from_buffers(kind, count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _arrow(piece: Part) -> pa.Array | str:
    """A piece as Arrow's join takes it (int64 values as their text)."""
    if isinstance(piece, np.ndarray):
        return pc.cast(pa.array(piece), pa.string())
    return piece


def integer_text(column: npt.NDArray[np.integer[Any]]) -> Part:
    """The decimal text of each value of an integer column: its only value as one `str` when
    every value is the same (a constant part), else the values as int64 (`joined` writes them)
    or, beyond int64, Arrow's text."""
    if len(column) and column[0] == column[-1] and bool((column == column[0]).all()):
        return str(int(column[0]))
    if column.dtype.kind == "i" or column.dtype.itemsize < 8:
        return np.ascontiguousarray(column, np.int64)
    return pc.cast(pa.array(column), pa.string())


def _column_parts(column: npt.NDArray[Any], texts: Texts) -> list[Part]:
    """The JSON text of each value of a column, as parts."""
    if column.dtype == object:
        inferred = texts.inferred(column)
        if inferred is not None and pa.types.is_string(inferred.type):
            return _string_parts([inferred])
    return [_text(column, texts)]


def _text(column: npt.NDArray[Any], texts: Texts) -> Part:
    """The JSON text of each value of a column that is not one of strings (a `str` for a
    constant integer column)."""
    if column.dtype.kind in "iu":
        return texts.integers(column)
    if len(column) and column.dtype.kind in "fb":
        return event_json.number_text(column.tolist()).cast(pa.string())
    dumped = list(map(orjson.dumps, column.tolist()))
    return pc.cast(pa.array(dumped, pa.binary()), pa.string())


def _string_parts(parts: list[Part]) -> list[Part]:
    """The JSON string of each row's concatenated parts: the parts between quotes when nothing
    needs escaping (non-ASCII needs none), else the text `orjson.dumps` gives each row."""
    if all(_escape_free(part) for part in parts):
        return ['"', *parts, '"']
    count = next(len(part) for part in parts if not isinstance(part, str))
    dumped = list(map(orjson.dumps, joined(parts, count, pa.string()).to_pylist()))
    return [pc.cast(pa.array(dumped, pa.binary()), pa.string())]


def _escape_free(part: Part) -> bool:
    if isinstance(part, str):
        return orjson.dumps(part)[1:-1] == part.encode()
    if isinstance(part, np.ndarray):
        return True  # digits and "-"
    return part.null_count == 0 and not _needs_escape(part)


def _needs_escape(strings: pa.Array) -> bool:
    """Whether some value holds a quote, a backslash or a control character (a byte search for
    each and one minimum over the UTF-8 bytes: their bytes never occur inside a multi-byte
    character)."""
    if not pa.types.is_string(strings.type):
        return True
    _, offsets, data = strings.buffers()
    if data is None:
        return False
    bounds = np.frombuffer(offsets, np.int32)[strings.offset : strings.offset + len(strings) + 1]
    text = np.frombuffer(data, np.uint8)[bounds[0] : bounds[-1]]
    if len(text) == 0:
        return False
    raw = text.tobytes()
    return b'"' in raw or b"\\" in raw or int(text.min()) < _CONTROL_BELOW
