"""The field checks the plan parser (`parse`), its per-operator validators (`validate`) and the
compiler share: the field types a schema may name, the aggregate functions, and the checks of a
positive integer, an expression over known fields and a `window` param.

A leaf of `plan`: it imports only the plan's errors, expressions and model, so `parse` imports
`validate` and both import these checks, with no import cycle between them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from streamshift_engine.plan.errors import PlanError
from streamshift_engine.plan.expressions import ExpressionError, compile_expression
from streamshift_engine.plan.model import WindowSpec

FIELD_TYPES = {"int": np.int64, "float": np.float64, "str": object, "bool": np.bool_}
AGGREGATES = frozenset({"count", "sum", "min", "max", "avg"})


def positive(
    raw: Mapping[str, Any], key: str, node: str, default: int | None = None, prefix: str = ""
) -> int:
    """`raw[key]` (or `default`), which must be a positive integer; errors name `prefix + key`."""
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise PlanError(node, prefix + key, f"must be a positive integer, got {value!r}")
    return value


def expression_type(node: str, key: str, text: Any, fields: Mapping[str, str]) -> str:
    """Compile `text`, check the fields it reads, and return the type of its result."""
    try:
        expression = compile_expression(text)
    except ExpressionError as error:
        raise PlanError(node, key, str(error)) from error
    for name in sorted(expression.fields):
        if name not in fields:
            raise PlanError(node, key, f"unknown field {name!r}")
    sample: dict[str, npt.NDArray[Any]] = {
        name: np.array(["x"] if kind == "str" else [1], dtype=FIELD_TYPES[kind])
        for name, kind in fields.items()
    }
    try:
        with np.errstate(all="ignore"):
            result = np.asarray(expression(sample, 1))
    except (TypeError, ValueError) as error:
        raise PlanError(node, key, f"cannot evaluate {text!r}: {error}") from error
    return {"b": "bool", "i": "int", "u": "int", "f": "float"}.get(result.dtype.kind, "str")


def window_spec(node: str, raw: Any, kinds: tuple[str, ...]) -> WindowSpec:
    """Validate a `window` param of one of the allowed kinds."""
    if not isinstance(raw, Mapping):
        raise PlanError(node, "window", "must be a mapping with a kind")
    kind = raw.get("kind")
    if kind not in kinds:
        raise PlanError(node, "window.kind", f"must be one of {', '.join(kinds)}, got {kind!r}")
    if kind == "session":
        return WindowSpec("session", positive(raw, "gap", node, prefix="window."), 0)
    size = positive(raw, "size", node, prefix="window.")
    if kind == "range":
        return WindowSpec("range", size, 0)
    slide = positive(raw, "slide", node, size, "window.")
    if slide > size:
        raise PlanError(node, "window.slide", f"slide {slide} exceeds size {size}")
    return WindowSpec(kind, size, slide)
