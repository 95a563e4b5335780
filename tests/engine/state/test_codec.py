"""The snapshot byte format: versioned, self-describing, pickle-free round trips."""

from __future__ import annotations

import numpy as np
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
    arrays = {
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
