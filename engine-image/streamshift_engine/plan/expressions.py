"""A small, safe expression language for filter predicates and computed fields.

Grammar (lowest precedence first)::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("==" | "=" | "!=" | "<" | "<=" | ">" | ">=") sum
               | ["not"] "in" "[" literal ("," literal)* "]")?
    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/" | "//" | "%") unary)*
    unary   := "-" unary | atom
    atom    := number | 'string' | "string" | true | false | field | "(" expr ")"

Fields are identifiers that may contain dots (`S.m`, the columns of a join). The text is parsed
by hand into a tree and compiled to a function over whole numpy columns; nothing is ever passed
to `eval`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Columns = Mapping[str, npt.NDArray[Any]]
Evaluator = Callable[[Columns, int], npt.NDArray[Any]]

_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d+\.\d*|\.\d+|\d+)|(?P<string>'[^']*'|\"[^\"]*\")"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>==|!=|<=|>=|//|[-+*/%<>=()\[\],]))"
)
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": np.equal,
    "=": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "//": np.floor_divide,
    "%": np.mod,
}


class ExpressionError(ValueError):
    """The expression text is malformed; the message says where."""


@dataclass(frozen=True)
class Expression:
    """A compiled expression: its text, the fields it reads, and its column evaluator."""

    text: str
    fields: frozenset[str]
    evaluate: Evaluator

    def __call__(self, columns: Columns, length: int) -> npt.NDArray[Any]:
        return self.evaluate(columns, length)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ExpressionError(f"unexpected character at {position}: {text[position:]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.index = 0
        self.fields: set[str] = set()

    def peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.index >= len(self.tokens):
            raise ExpressionError(f"unexpected end of expression, expected {expected or 'more'}")
        token = self.tokens[self.index]
        if expected is not None and token[1] != expected:
            raise ExpressionError(f"expected {expected!r}, found {token[1]!r}")
        self.index += 1
        return token

    def parse(self) -> Evaluator:
        evaluator = self.disjunction()
        if self.index != len(self.tokens):
            raise ExpressionError(f"unexpected {self.tokens[self.index][1]!r}")
        return evaluator

    def disjunction(self) -> Evaluator:
        left = self.conjunction()
        while self.peek() == "or":
            self.take()
            left = _binary(np.logical_or, left, self.conjunction())
        return left

    def conjunction(self) -> Evaluator:
        left = self.negation()
        while self.peek() == "and":
            self.take()
            left = _binary(np.logical_and, left, self.negation())
        return left

    def negation(self) -> Evaluator:
        if self.peek() == "not":
            self.take()
            inner = self.negation()
            return lambda columns, n: np.logical_not(inner(columns, n))
        return self.comparison()

    def comparison(self) -> Evaluator:
        left = self.sum()
        operator = self.peek()
        if operator in _COMPARE:
            self.take()
            return _binary(_COMPARE[operator], left, self.sum())
        negate = False
        following = self.tokens[self.index + 1][1] if self.index + 1 < len(self.tokens) else None
        if operator == "not" and following == "in":
            self.take()
            negate = True
        if self.peek() == "in":
            self.take()
            return _membership(left, self.literal_list(), negate)
        if negate:
            raise ExpressionError("expected 'in' after 'not'")
        return left

    def literal_list(self) -> list[Any]:
        self.take("[")
        values = [self.literal()]
        while self.peek() == ",":
            self.take()
            values.append(self.literal())
        self.take("]")
        return values

    def literal(self) -> Any:
        negative = self.peek() == "-"
        if negative:
            self.take()
        kind, text = self.take()
        if kind == "number":
            number = float(text) if "." in text else int(text)
            return -number if negative else number
        if kind == "string" and not negative:
            return text[1:-1]
        if kind == "name" and text in ("true", "false") and not negative:
            return text == "true"
        raise ExpressionError(f"expected a literal, found {text!r}")

    def sum(self) -> Evaluator:
        left = self.product()
        while self.peek() in ("+", "-"):
            operator = self.take()[1]
            left = _binary(_ARITHMETIC[operator], left, self.product())
        return left

    def product(self) -> Evaluator:
        left = self.unary()
        while self.peek() in ("*", "/", "//", "%"):
            operator = self.take()[1]
            left = _binary(_ARITHMETIC[operator], left, self.unary())
        return left

    def unary(self) -> Evaluator:
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            return lambda columns, n: np.negative(inner(columns, n))
        return self.atom()

    def atom(self) -> Evaluator:
        kind, text = self.tokens[self.index] if self.index < len(self.tokens) else ("", "")
        if text == "(":
            self.take()
            inner = self.disjunction()
            self.take(")")
            return inner
        if kind == "name" and text not in ("true", "false", "and", "or", "not", "in"):
            self.take()
            self.fields.add(text)
            return lambda columns, n: columns[text]
        value = self.literal()
        return lambda columns, n: np.full(
            n, value, dtype=object if isinstance(value, str) else None
        )


def _binary(function: Callable[[Any, Any], Any], left: Evaluator, right: Evaluator) -> Evaluator:
    return lambda columns, n: np.asarray(function(left(columns, n), right(columns, n)))


def _membership(operand: Evaluator, values: list[Any], negate: bool) -> Evaluator:
    def evaluate(columns: Columns, n: int) -> npt.NDArray[Any]:
        column = operand(columns, n)
        member = np.zeros(n, dtype=bool)
        for value in values:
            member |= np.asarray(column == value, dtype=bool)
        return ~member if negate else member

    return evaluate


def compile_expression(text: str) -> Expression:
    """Parse `text` and return its compiled form; raises `ExpressionError` when malformed."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression must be a non-empty string")
    parser = _Parser(text)
    evaluate = parser.parse()
    return Expression(text=text, fields=frozenset(parser.fields), evaluate=evaluate)
