"""The snapshot byte format: versioned, self-describing, pickle-free round trips."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.state import codec


@settings(max_examples=50, deadline=None)
@given(
    ints=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20),
    floats=st.lists(st.floats(allow_nan=False), max_size=20),
    texts=st.lists(st.text(max_size=5), max_size=20),
)
def test_arrays_and_meta_round_trip(ints: list[int], floats: list[float], texts: list[str]) -> None:
    objects = np.empty(len(texts), dtype=object)
    objects[:] = texts
    arrays: dict[str, npt.NDArray[Any]] = {
        "a/i": np.array(ints, np.int64),
        "f": np.array(floats, np.float64),
        "p": np.arange(len(ints), dtype=np.int32),
        "o": objects,
    }
    meta = {"kind": "test", "covered": [["S", 0, 5]]}
    decoded_meta, decoded = codec.decode(codec.encode(meta, arrays))
    assert decoded_meta == meta
    for name, array in arrays.items():
        assert decoded[name].dtype == array.dtype
        assert decoded[name].tolist() == array.tolist()


def test_other_bytes_are_refused() -> None:
    data = codec.encode({}, {})
    with pytest.raises(codec.SnapshotError):
        codec.decode(b"PICKLE" + data[6:])
    with pytest.raises(codec.SnapshotError):
        codec.decode(data[:3])


def test_raw_payloads_are_little_endian_and_contiguous() -> None:
    big = np.array([1, -2, 3], dtype=">i8")
    strided = np.arange(10, dtype=np.int32)[::3]
    flags = np.array([True, False])
    data = codec.encode({"m": 1}, {"big": big, "strided": strided, "flags": flags})
    payloads = b"".join(
        [
            np.array([1, -2, 3], "<i8").tobytes(),
            np.array([0, 3, 6, 9], "<i4").tobytes(),
            b"\x01\x00",
        ]
    )
    assert data.endswith(payloads)
    _, arrays = codec.decode(data)
    assert arrays["big"].tolist() == [1, -2, 3]
    assert arrays["strided"].tolist() == [0, 3, 6, 9]
    assert arrays["flags"].tolist() == [True, False]


def test_decode_without_copy_views_the_bytes() -> None:
    data = codec.encode({}, {"x": np.arange(4, dtype=np.int64)})
    framed = memoryview(b"head" + data)[4:]
    _, views = codec.decode(framed, copy=False)
    assert views["x"].tolist() == [0, 1, 2, 3]
    assert not views["x"].flags.writeable
    assert np.shares_memory(views["x"], np.frombuffer(framed, np.uint8))
    _, copies = codec.decode(framed)
    copies["x"][0] = 7
    assert copies["x"].tolist() == [7, 1, 2, 3]
    assert codec.decode(framed, copy=False)[1]["x"].tolist() == [0, 1, 2, 3]


def test_payloads_start_aligned_and_parts_join_to_the_bytes() -> None:
    texts = np.empty(3, dtype=object)
    texts[:] = ["a", "bc", "def"]
    arrays = {"flags": np.array([True]), "o": texts, "x": np.arange(3, dtype=np.int64)}
    parts = codec.encode_parts({"m": "odd length"}, arrays)
    data = codec.encode({"m": "odd length"}, arrays)
    assert b"".join(parts) == data
    assert np.shares_memory(np.frombuffer(parts[-1], np.uint8), arrays["x"])
    buffer = bytearray(data)
    _, views = codec.decode(buffer, copy=False)
    base = np.frombuffer(buffer, np.uint8).ctypes.data
    assert (views["x"].ctypes.data - base) % codec.ALIGN == 0
    assert views["x"].flags.writeable and views["x"].tolist() == [0, 1, 2]
    assert views["o"].tolist() == ["a", "bc", "def"] and views["flags"].tolist() == [True]


def test_strings_round_trip_as_text_and_other_objects_as_json() -> None:
    cases: list[list[Any]] = [[""], ["", ""], ["a\u00e9\u4e2d", ""], ["nul\0in", "x"], ["a", 1], []]
    for values in cases:
        array = np.empty(len(values), dtype=object)
        array[:] = values
        _, decoded = codec.decode(codec.encode({}, {"o": array}))
        assert decoded["o"].tolist() == values
