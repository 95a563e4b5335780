"""Snapshot bytes: a versioned, self-describing, pickle-free encoding of metadata and arrays.

Layout: the magic `SSNAP`, a format version (uint16), the length of a JSON header (uint32),
the header, then the array payloads back to back. The header holds the caller's metadata and,
per array, its name, dtype, length and encoding: numeric and boolean arrays are stored as raw
little-endian bytes, object arrays (strings, Python scalars) as a JSON list. Version 2 (written
now) starts every payload at a multiple of 8 bytes from the start (the header padded with
spaces, zero bytes before a payload), so arrays decoded without a copy are aligned views, and
stores an object array of strings without a NUL character as their UTF-8 text joined by NULs
(encoding `text`: faster to encode and to decode than JSON for columns such as q8's person
names); version 1 (no padding, no `text`) is still read.

Raw payloads are copied once, into the snapshot bytes, and once out of them; `encode_parts`
leaves out the first copy (the parts view the arrays: for a sender that writes them out one
after the other), `decode(..., copy=False)` the second (read-only views for bytes consumed at
once, or views of a writable buffer the caller hands over for good). Extra copies (bytes
slices, `tobytes`) would more than double the time a large snapshot takes to write and restore.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

MAGIC = b"SSNAP"
VERSION = 2
READS = (1, 2)
ALIGN = 8
_PREFIX = struct.Struct("<5sHI")


class SnapshotError(ValueError):
    """The bytes are not a snapshot of a version this engine reads."""


def encode(meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[Any]]) -> bytes:
    """Encode JSON-able `meta` and named one-dimensional arrays into snapshot bytes."""
    return b"".join(encode_parts(meta, arrays))


def encode_parts(
    meta: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[Any]]
) -> list[bytes | memoryview]:
    """The snapshot bytes of `encode` as parts to write one after the other, raw payloads as
    views of the arrays (no copy: the arrays must stay unchanged until the parts are written)."""
    entries = []
    payloads: list[bytes | memoryview] = []
    for name, array in arrays.items():
        payload: bytes | memoryview
        if array.dtype == object:
            values = array.tolist()
            text = _text(values)
            encoding = "json" if text is None else "text"
            if text is None:
                payload = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)
            else:  # one empty string is empty text
                payload = text
            dtype, nbytes = "object", len(payload)
        else:
            little = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
            payload = little.view(np.uint8).data  # a view: no copy here
            dtype, encoding, nbytes = little.dtype.str, "raw", little.nbytes
        entries.append(
            {
                "name": name,
                "dtype": dtype,
                "length": len(array),
                "encoding": encoding,
                "nbytes": nbytes,
            }
        )
        payloads.append(payload)
    header = orjson.dumps({"meta": meta, "arrays": entries})
    header += b" " * (-(_PREFIX.size + len(header)) % ALIGN)
    parts: list[bytes | memoryview] = [_PREFIX.pack(MAGIC, VERSION, len(header)), header]
    position = _PREFIX.size + len(header)
    for payload in payloads:
        padding = -position % ALIGN
        if padding:
            parts.append(b"\0" * padding)
        parts.append(payload)
        position += padding + len(payload)
    return parts


def decode(
    data: bytes | bytearray | memoryview, copy: bool = True
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """The metadata and arrays of snapshot bytes made by `encode`; without `copy`, the raw
    arrays are views of `data` (read-only unless `data` is writable)."""
    data = memoryview(data).cast("B")
    if len(data) < _PREFIX.size:
        raise SnapshotError("too short to be a snapshot")
    magic, version, header_length = _PREFIX.unpack_from(data)
    if magic != MAGIC or version not in READS:
        raise SnapshotError(
            f"not a snapshot of a version read here {READS} (magic {magic!r}, version {version})"
        )
    align = ALIGN if version >= 2 else 1
    start = _PREFIX.size
    header = orjson.loads(data[start : start + header_length])
    position = start + header_length
    arrays: dict[str, npt.NDArray[Any]] = {}
    for entry in header["arrays"]:
        position += -position % align
        payload = data[position : position + entry["nbytes"]]
        position += entry["nbytes"]
        if entry["encoding"] in ("json", "text"):
            values = _values(entry, payload)
            array = np.empty(len(values), dtype=object)
            array[:] = values
        else:
            array = np.frombuffer(payload, dtype=np.dtype(entry["dtype"]))
            array = array.copy() if copy else array
        arrays[entry["name"]] = array
    return header["meta"], arrays


def _text(values: list[Any]) -> bytes | None:
    """Strings without a NUL as their UTF-8 text joined by NULs; None for other values."""
    try:
        joined = "\0".join(values)
    except TypeError:  # not all strings
        return None
    if joined.count("\0") != len(values) - 1 or not values:
        return None
    try:
        return joined.encode()
    except UnicodeEncodeError:  # a lone surrogate: JSON says what is wrong
        return None


def _values(entry: dict[str, Any], payload: memoryview) -> list[Any]:
    if entry["encoding"] == "json":
        values: list[Any] = orjson.loads(payload)
        return values
    values = str(payload, "utf-8").split("\0")
    if len(values) != entry["length"]:
        raise SnapshotError(f"{entry['name']}: {len(values)} strings, not {entry['length']}")
    return values
