"""Results as JSON records, built column by column instead of record by record.

`encode_results_json` gives, per result, the bytes `orjson.dumps(record)` gives for the record of
`ResultBatch.to_records()` (id, window bounds, key and value fields, in that order), without
building a dict per result: each column becomes the JSON text of its values as one Arrow array
(integers by an Arrow cast, strings with nothing to escape by quoting, floats and other
numbers by one `orjson.dumps` of the whole column split into its elements as `event_json`
does, anything else by one `orjson.dumps` per value), and one `binary_join_element_wise` glues
the columns between the constant `{"name":` parts. An integer column holding one value (the
window bounds, -1, of results without a window) is folded into those constant parts instead.
Ids come from `ids` (the Arrow-built result ids).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from streamshift_engine.events import event_json
from streamshift_engine.events.results import ResultBatch

_CONTROL_BELOW = 0x20


def encode_results_json(
    results: ResultBatch, ids: Callable[[ResultBatch], pa.Array]
) -> list[bytes]:
    """One JSON object per result; `ids` builds the result ids as an Arrow string array."""
    if len(results) == 0:
        return []
    fields: list[tuple[str, pa.Array | str]] = [("id", _string_text(ids(results)))]
    fields += [("window_start", _text(results.window_start))]
    fields += [("window_end", _text(results.window_end))]
    for name, column in [*results.keys.items(), *results.values.items()]:
        if name != "id":  # a join's identity: the key part of the result id
            fields.append((name, _text(column)))
    pieces: list[Any] = []
    constant = ""
    for index, (name, text) in enumerate(fields):
        constant += ("{" if index == 0 else ",") + orjson.dumps(name).decode() + ":"
        if isinstance(text, str):
            constant += text
        else:
            pieces += [constant, text]
            constant = ""
    joined = pc.binary_join_element_wise(*pieces, constant + "}", "")
    records: list[bytes] = pc.cast(joined, pa.binary()).to_pylist()
    return records


def integer_text(column: npt.NDArray[np.integer[Any]]) -> pa.Array | str:
    """The decimal text of each value of an integer column, or that of its only value as one
    `str` when every value is the same (a constant part for `binary_join_element_wise`)."""
    if len(column) and column[0] == column[-1] and bool((column == column[0]).all()):
        return str(int(column[0]))
    return pc.cast(pa.array(column), pa.string())


def _text(column: npt.NDArray[Any]) -> pa.Array | str:
    """The JSON text of each value of a column (a `str` for a constant integer column)."""
    if column.dtype.kind in "iu":
        return integer_text(column)
    if column.dtype == object:
        try:
            inferred = pa.array(column)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            inferred = None
        if inferred is not None and pa.types.is_string(inferred.type):
            return _string_text(inferred)
    if len(column) and column.dtype.kind in "fb":
        return event_json.number_text(column.tolist()).cast(pa.string())
    dumped = list(map(orjson.dumps, column.tolist()))
    return pc.cast(pa.array(dumped, pa.binary()), pa.string())


def _string_text(strings: pa.Array) -> pa.Array:
    """JSON strings: quoted as they are when no value needs escaping (non-ASCII needs none)."""
    if strings.null_count == 0 and not _needs_escape(strings):
        return pc.binary_join_element_wise('"', strings, '"', "")
    dumped = list(map(orjson.dumps, strings.to_pylist()))
    return pc.cast(pa.array(dumped, pa.binary()), pa.string())


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
