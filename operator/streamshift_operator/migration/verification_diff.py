"""The verifier's pure half: the reference run over input records, and its comparison with the
output records. No Kafka here (`verification` reads the topics), so every failure is unit-testable.

The reference decodes input exactly as a worker does: the plan a worker runs is
`projected(plan)` and its decoder's schemas are `input_schemas(plan)` (the fields the plan reads;
the rest unread and unchecked), through the same `decode_json`. A record whose unread field is
malformed is therefore used by both, and one whose read field is malformed is dead-lettered by
both. Each result is compared whole (id, window bounds, keys and values), in both directions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from streamshift_engine.events.wire import decode_json
from streamshift_engine.plan import builtin, parse_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.runner import Instance
from streamshift_engine.runtime.projection import input_schemas, projected

from streamshift_operator.models.migration import Verification

Partitions = Mapping[int, Sequence[tuple[int, bytes]]]  # partition -> (Kafka offset, value)
EXAMPLES = 3  # ids named per kind of difference in the verification's message
REL_TOLERANCE = 1e-9  # float aggregates summed in another order differ in the last bits


@dataclass(frozen=True)
class Expected:
    """One reference result: the output record a worker writes for it, the event time from
    which it is final (its window's end, or for a result without a window its last tuple's),
    and the earliest event time it covers (its window's start, or its first tuple's)."""

    record: dict[str, Any]
    final: int
    start: int


@dataclass(frozen=True)
class Reference:
    """The reference run over the input as read: the results its watermark released, the ids
    of those only the end of input would release (windows still open), and its watermark."""

    results: list[Expected]
    open_ids: frozenset[str]
    watermark: int | None


def plan_of(plan_doc: Mapping[str, Any]) -> Plan:
    """The plan of a StreamQuery's `plan` (built-in name or inline object), unprojected."""
    if "builtin" in plan_doc:
        return builtin(plan_doc["builtin"])
    return parse_plan(plan_doc["inline"])


def reference(plan: Plan, partitions: int, inputs: Mapping[str, Partitions]) -> Reference:
    """Run `plan` as the workers run it (projected, decoding as they decode) over every record
    of `inputs` (per plan input, per partition, in offset order) on one instance."""
    schemas = input_schemas(plan)
    instance = Instance(projected(plan), range(partitions))
    for name, by_partition in inputs.items():
        for partition, records in sorted(by_partition.items()):
            if not records:
                continue
            batch, _ = decode_json(
                name,
                [value for _, value in records],
                np.full(len(records), partition, np.int32),
                np.array([offset for offset, _ in records], np.int64),
                schemas[name],
            )
            instance.feed(name, partition, batch)
    watermark = instance.watermark()
    released = [_expected(batch) for batch in instance.poll()]
    still_open = [e.record["id"] for batch in instance.flush() for e in _expected(batch)]
    return Reference([e for part in released for e in part], frozenset(still_open), watermark)


def _expected(batch: Any) -> list[Expected]:
    ends, starts = batch.window_end.tolist(), batch.window_start.tolist()
    firsts, lasts = batch.min_ts.tolist(), batch.max_ts.tolist()
    return [
        Expected(record, end if end >= 0 else last, start if end >= 0 else first)
        for record, end, start, first, last in zip(
            batch.to_records(), ends, starts, firsts, lasts, strict=True
        )
    ]


def extent(results: Sequence[Expected]) -> int:
    """The longest event-time span of one result: a window's length, or a join's reach."""
    return max((e.final - e.start for e in results), default=0)


def compare(reference: Reference, output: Sequence[dict[str, Any]], bound: int) -> Verification:
    """The output against the reference over every result final at or below `bound` (event
    time): missing, extra, differing and duplicate results.

    A windowed output record is in the span when its window ends at or below `bound`. A
    record without a window is in the span when the reference has it final there, or has it
    nowhere (the reference read all input the workers had read, so that one is extra); one
    the reference has only beyond `bound` is not yet comparable."""
    wanted = {e.record["id"]: e.record for e in reference.results if e.final <= bound}
    later = {e.record["id"] for e in reference.results if e.final > bound} | reference.open_ids
    spanned: dict[str, list[dict[str, Any]]] = {}
    for record in output:
        rid, end = record.get("id"), record.get("window_end", -1)
        if not isinstance(rid, str) or not isinstance(end, int):
            continue
        in_span = 0 <= end <= bound if end >= 0 else rid in wanted or rid not in later
        if in_span:
            spanned.setdefault(rid, []).append(record)
    counts = Counter({rid: len(copies) for rid, copies in spanned.items()})
    missing = sorted(set(wanted) - set(spanned))
    extra = sorted(set(spanned) - set(wanted))
    differing = sorted(
        rid
        for rid, copies in spanned.items()
        if rid in wanted and not any(same(copy, wanted[rid]) for copy in copies)
    )
    duplicate = sorted(rid for rid, n in counts.items() if n > 1)
    found = {"missing": missing, "extra": extra, "differing": differing, "duplicate": duplicate}
    problems = [
        f"{len(ids)} {kind} (e.g. {', '.join(ids[:EXAMPLES])})"
        for kind, ids in found.items()
        if ids
    ]
    compared = f"{len(wanted)} reference results final at or below event time {bound}"
    return Verification(
        missing=len(missing),
        extra=len(extra),
        differing=len(differing),
        duplicate=sum(counts[rid] - 1 for rid in duplicate),
        compared=len(wanted),
        bound=bound,
        exact=not problems,
        message=f"{compared}: " + ("; ".join(problems) if problems else "exact"),
    )


def same(output: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """One output record equal to the reference's: the same fields, equal values (floats to
    a relative 1e-9)."""
    if output.keys() != expected.keys():
        return False
    return all(_equal(output[k], expected[k]) for k in expected)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool):
            return False  # a float never equals a boolean in JSON
        if isinstance(a, int | float) and isinstance(b, int | float):
            return math.isclose(float(a), float(b), rel_tol=REL_TOLERANCE)
        return False
    return bool(a == b)
