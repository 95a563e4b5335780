"""Snapshot bytes: a versioned, self-describing, pickle-free encoding of metadata and arrays.

Layout: the magic `SSNAP`, a format version (uint16), the length of a JSON header (uint32),
the header, then the array payloads back to back. The header holds the caller's metadata and,
per array, its name, dtype, length and encoding: numeric and boolean arrays are stored as raw
little-endian bytes, object arrays (strings, Python scalars) as a JSON list.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

MAGIC = b"SSNAP"
VERSION = 1
_PREFIX = struct.Struct("<5sHI")


class SnapshotError(ValueError):
    """The bytes are not a snapshot of a version this engine reads."""


def encode(meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[Any]]) -> bytes:
    """Encode JSON-able `meta` and named one-dimensional arrays into snapshot bytes."""
    entries = []
    payloads = []
    for name, array in arrays.items():
        if array.dtype == object:
            payload = orjson.dumps(array.tolist(), option=orjson.OPT_SERIALIZE_NUMPY)
            dtype, encoding = "object", "json"
        else:
            payload = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
            dtype, encoding = array.dtype.newbyteorder("<").str, "raw"
        entries.append(
            {
                "name": name,
                "dtype": dtype,
                "length": len(array),
                "encoding": encoding,
                "nbytes": len(payload),
            }
        )
        payloads.append(payload)
    header = orjson.dumps({"meta": meta, "arrays": entries})
    return b"".join([_PREFIX.pack(MAGIC, VERSION, len(header)), header, *payloads])


def decode(data: bytes) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """The metadata and arrays of snapshot bytes made by `encode`."""
    if len(data) < _PREFIX.size:
        raise SnapshotError("too short to be a snapshot")
    magic, version, header_length = _PREFIX.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise SnapshotError(
            f"not a version {VERSION} snapshot (magic {magic!r}, version {version})"
        )
    start = _PREFIX.size
    header = orjson.loads(data[start : start + header_length])
    position = start + header_length
    arrays: dict[str, npt.NDArray[Any]] = {}
    for entry in header["arrays"]:
        payload = data[position : position + entry["nbytes"]]
        position += entry["nbytes"]
        if entry["encoding"] == "json":
            values = orjson.loads(payload)
            array = np.empty(len(values), dtype=object)
            array[:] = values
        else:
            array = np.frombuffer(payload, dtype=np.dtype(entry["dtype"])).copy()
        arrays[entry["name"]] = array
    return header["meta"], arrays
