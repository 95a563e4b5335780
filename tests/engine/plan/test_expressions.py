"""The expression language against Python's own arithmetic on random values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan.expressions import ExpressionError, compile_expression


@settings(max_examples=50, deadline=None)
@given(a=st.lists(st.integers(-20, 20), min_size=1, max_size=10), b=st.integers(1, 7))
def test_arithmetic_and_logic_match_python(a: list[int], b: int) -> None:
    columns = {"a": np.array(a), "S.b": np.full(len(a), b)}
    value = compile_expression("-a * 2 + S.b % 3 - (a // S.b)")(columns, len(a))
    assert value.tolist() == [-x * 2 + b % 3 - (x // b) for x in a]
    mask = compile_expression("a >= 0 and not (a in [1, 2, -3] or a == S.b) or a < -15")(
        columns, len(a)
    )
    assert mask.tolist() == [(x >= 0 and not (x in (1, 2, -3) or x == b)) or x < -15 for x in a]
    divided = compile_expression("a / 2.0 != 1.5")(columns, len(a))
    assert divided.tolist() == [x / 2.0 != 1.5 for x in a]


def test_strings_and_not_in() -> None:
    columns = {"state": np.array(["OR", "WA", "CA"], dtype=object)}
    mask = compile_expression("state not in ['WA', \"ID\"]")(columns, 3)
    assert mask.tolist() == [True, False, True]
    assert compile_expression("state == 'CA'").fields == {"state"}


@pytest.mark.parametrize(
    "text", ["a +", "(a", "a in [b]", "a ; b", "__import__('os')", "", "a not b"]
)
def test_malformed_expressions_are_refused(text: str) -> None:
    with pytest.raises(ExpressionError):
        compile_expression(text)
