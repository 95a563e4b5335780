"""`result_json.joined` (`_rowtext` where it can) gives row by row what Arrow's
`binary_join_element_wise` gives: for constants, string arrays (sliced ones too), empty and
non-ASCII text, int64 values (as Arrow's cast writes them, both ends of the range too), nulls
(which take Arrow's kernel) and no rows; and `_rowtext.join` refuses buffers that do not hold
what the rows need."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events import _rowtext
from streamshift_engine.events.result_json import joined

TEXT = st.text(max_size=6) | st.sampled_from(["", "é", "漢字", '"', "\x00"])
INT64 = st.integers(-(2**63), 2**63 - 1) | st.sampled_from([0, -1, 9, 10, -(2**63), 2**63 - 1])


@st.composite
def pieces(draw: Any) -> tuple[list[Any], int]:
    count = draw(st.integers(0, 12))
    found: list[Any] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["constant", "integers", "strings"]))
        if kind == "constant":
            found.append(draw(TEXT))
            continue
        if kind == "integers":
            values = draw(st.lists(INT64, min_size=count, max_size=count))
            found.append(np.array(values, np.int64))
            continue
        cut = draw(st.integers(0, 3))
        values = draw(st.lists(TEXT | st.none(), min_size=count + cut, max_size=count + cut))
        if not draw(st.integers(0, 4)):
            values = [v if v is not None else "" for v in values]
        found.append(pa.array(values, pa.string()).slice(cut, count))
    if all(isinstance(p, str) for p in found):
        found.append(pa.array([draw(TEXT) for _ in range(count)], pa.string()))
    return found, count


@settings(max_examples=300, deadline=None)
@given(drawn=pieces(), kind=st.sampled_from([pa.binary(), pa.string()]))
def test_joined_is_arrows_join(drawn: tuple[list[Any], int], kind: pa.DataType) -> None:
    found, count = drawn
    arrow = [pc.cast(pa.array(p), pa.string()) if isinstance(p, np.ndarray) else p for p in found]
    expected = pc.cast(pc.binary_join_element_wise(*arrow, ""), kind)
    result = joined(found, count, kind)
    result.validate(full=True)
    assert result.type == kind
    assert result.to_pylist() == expected.to_pylist()


def test_join_refuses_offsets_beyond_the_data_or_rows() -> None:
    with pytest.raises(ValueError, match="beyond"):
        _rowtext.join(1, [(np.array([0, 5], np.int32), b"abc")])
    with pytest.raises(ValueError, match="fewer offsets"):
        _rowtext.join(2, [(np.array([0, 1], np.int32), b"abc")])
    with pytest.raises(ValueError, match="ascending"):
        _rowtext.join(2, [(np.array([0, 2, 1], np.int32), b"abc")])
    with pytest.raises(ValueError, match="int64"):
        _rowtext.join(2, [(np.array([1], np.int64),)])
    with pytest.raises(TypeError):
        _rowtext.join(1, ["text"])  # type: ignore[list-item]
    assert _rowtext.join(2, [b"<", (np.array([1, 2, 3], np.int32), b"abc"), b">"]) == (
        b"<b><c>",
        np.array([0, 3, 6], np.int32).tobytes(),
    )
    assert _rowtext.join(2, [(np.array([-(2**63), 40], np.int64),), b"|"]) == (
        b"-9223372036854775808|40|",
        np.array([0, 21, 24], np.int32).tobytes(),
    )


def test_joined_refuses_integer_parts_not_int64() -> None:
    with pytest.raises(TypeError, match="int64"):
        joined([np.array([1.5, 2.5])], 2, pa.string())
