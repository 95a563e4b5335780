"""Events as JSON records, built column by column instead of record by record.

`encode_events_json` gives, per event, exactly the bytes `orjson.dumps` gives for the dict of
that event's payload columns (in column order), without building a dict per event. Each column
becomes the JSON text of its values as one Arrow array, and one `binary_join_element_wise` glues
the columns between the constant `{"name":` parts:

- integer columns: an Arrow cast to text (the decimal digits `orjson` writes for an int);
- columns whose values are all `str`, or all `bool`, `int`, `float` or `None`: one
  `orjson.dumps` of the whole list, split into its elements with numpy. Inside orjson's text of
  a list of such numbers the only commas are the separators; in a list of strings the
  separators are the commas outside the strings (after an even number of unescaped quotes).
  Escapes, unicode and float formatting are orjson's own;
- anything else: one `orjson.dumps` per value.

Values `orjson` cannot serialise raise `orjson.JSONEncodeError`, as the per-record dumps would.
Offsets are 64-bit throughout, so any batch size fits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from streamshift_engine.events.batch import Batch

_COMMA, _QUOTE, _BACKSLASH = 0x2C, 0x22, 0x5C
_NUMBER_TYPES = frozenset({bool, int, float, type(None)})


def encode_events_json(batch: Batch) -> pa.Array:
    """One JSON object per event as a `large_binary` array: the batch's payload columns."""
    n = len(batch)
    if n == 0:
        return pa.array([], pa.large_binary())
    if not batch.columns:
        return pa.repeat(pa.scalar(b"{}", pa.large_binary()), n)
    pieces: list[Any] = []
    for index, (name, column) in enumerate(batch.columns.items()):
        label = ("{" if index == 0 else ",") + orjson.dumps(name).decode() + ":"
        pieces += [pa.scalar(label, pa.large_string()), _text(column)]
    end, separator = (pa.scalar(text, pa.large_string()) for text in ("}", ""))
    joined = pc.binary_join_element_wise(*pieces, end, separator)
    return joined.cast(pa.large_binary())


def _text(column: npt.NDArray[Any]) -> pa.Array:
    """The JSON text of each value of a column, as a `large_string` array."""
    if column.dtype.kind in "iu":
        return pc.cast(pa.array(column), pa.large_string())
    values = column.tolist()
    types = set(map(type, values))
    if types <= {str}:
        return _elements(orjson.dumps(values), len(values), quoted=True)
    if types <= _NUMBER_TYPES:
        return number_text(values)
    dumped = pa.array(list(map(orjson.dumps, values)), pa.large_binary())
    return dumped.cast(pa.large_string())


def number_text(values: list[Any]) -> pa.Array:
    """The JSON text of each of a non-empty list of numbers, booleans and nulls."""
    return _elements(orjson.dumps(values), len(values), quoted=False)


def _separators(inner: npt.NDArray[np.uint8]) -> npt.NDArray[np.intp]:
    """Positions of the commas outside every string of JSON text: those after an even number of
    unescaped quotes (a quote is escaped when an odd run of backslashes precedes it). Only quote
    and comma positions are looked at, and backslashes only when the text has any."""
    commas = np.flatnonzero(inner == _COMMA)
    quotes = np.flatnonzero(inner == _QUOTE)
    if quotes.size and (inner == _BACKSLASH).any():
        positions = np.arange(len(inner))
        plain = np.maximum.accumulate(np.where(inner == _BACKSLASH, -1, positions))
        run = np.zeros(len(inner), np.int64)  # backslashes right before each byte
        run[1:] = positions[:-1] - plain[:-1]
        quotes = quotes[run[quotes] % 2 == 0]
    separators: npt.NDArray[np.intp] = commas[np.searchsorted(quotes, commas) % 2 == 0]
    return separators


def _elements(dumped: bytes, n: int, quoted: bool) -> pa.Array:
    """The `n` elements of orjson's text of a non-empty list of strings (`quoted`) or of numbers,
    booleans and nulls: the text between the brackets without the separating commas."""
    inner = np.frombuffer(dumped, np.uint8)[1:-1]
    commas = _separators(inner) if quoted else np.flatnonzero(inner == _COMMA)
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    offsets[1:-1] = commas - np.arange(n - 1)
    offsets[-1] = len(inner) - (n - 1)
    data = np.delete(inner, commas)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.large_string(), n, buffers)
