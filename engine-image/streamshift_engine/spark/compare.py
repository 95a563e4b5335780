"""Compare a query's output with its reference, by result id: missing, duplicate, wrong, extra.

Pure Python over plain records, so it is tested without Spark or Kafka. A result's id is
rebuilt from its fields (`query|window_start|window_end|key`, key parts joined by `:`) unless
its `id` field already is one: a key column may itself be called `id` and hide the result id.
A result without key columns is keyed by the identity of the record it came from, `id`.
Values are compared field by field; floats with a relative tolerance of 1e-9 (a product may
be rounded differently by the JVM and by numpy only in its last bit).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

EXAMPLES = 5


def result_id(query: str, record: Mapping[str, Any], key_names: Sequence[str]) -> str:
    """The deterministic id of one output record, as `ResultBatch.ids()` builds it."""
    own = str(record.get("id", ""))
    if own.startswith(f"{query}|"):
        return own
    key = ":".join(str(record[name]) for name in key_names or ("id",))
    return f"{query}|{record['window_start']}|{record['window_end']}|{key}"


@dataclass
class Report:
    """What differs between an output and its reference; `ok` when nothing does."""

    expected: int
    received: int
    missing: int = 0
    duplicates: int = 0
    wrong: int = 0
    extra: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicates or self.wrong or self.extra)

    def lines(self) -> list[str]:
        """A human summary: the counts, then up to `EXAMPLES` examples of each problem."""
        head = (
            f"expected={self.expected} received={self.received} missing={self.missing} "
            f"duplicates={self.duplicates} wrong={self.wrong} extra={self.extra} "
            f"{'OK' if self.ok else 'MISMATCH'}"
        )
        return [head] + [f"  {kind}: {ex}" for kind, exs in self.examples.items() for ex in exs]

    def _note(self, kind: str, example: str) -> None:
        found = self.examples.setdefault(kind, [])
        if len(found) < EXAMPLES:
            found.append(example)


def _same(expected: Any, got: Any) -> bool:
    if isinstance(expected, float) or isinstance(got, float):
        if not isinstance(got, int | float) or not isinstance(expected, int | float):
            return False
        return math.isclose(expected, got, rel_tol=1e-9, abs_tol=0.0)
    return bool(expected == got)


def compare(
    reference: Mapping[str, Mapping[str, Any]],
    output: Iterable[Mapping[str, Any]],
    query: str,
    key_names: Sequence[str],
) -> Report:
    """Check `output` records against `reference` (id -> expected value fields)."""
    seen: Counter[str] = Counter()
    report = Report(expected=len(reference), received=0)
    for record in output:
        report.received += 1
        rid = result_id(query, record, key_names)
        seen[rid] += 1
        if seen[rid] > 1:
            report.duplicates += 1
            if seen[rid] == 2:
                report._note("duplicate", rid)
            continue
        expected = reference.get(rid)
        if expected is None:
            report.extra += 1
            report._note("extra", rid)
            continue
        diffs = {
            name: (value, record.get(name))
            for name, value in expected.items()
            if not _same(value, record.get(name))
        }
        if diffs:
            report.wrong += 1
            shown = ", ".join(f"{n}: expected {e!r} got {g!r}" for n, (e, g) in diffs.items())
            report._note("wrong", f"{rid} ({shown})")
    for rid in reference:
        if rid not in seen:
            report.missing += 1
            report._note("missing", rid)
    return report
