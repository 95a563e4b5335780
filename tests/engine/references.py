"""Brute-force, pure-Python references for the operators, in the canonical result form of
`harness.canonical`: sorted (id, window_start, window_end, min_ts, max_ts, values) tuples."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine.harness import Record, merge_order

Row = tuple[Any, ...]


def _row(rid: str, start: int, end: int, low: int, high: int, values: dict[str, Any]) -> Row:
    rounded = {k: round(v, 6) if isinstance(v, float) else v for k, v in values.items()}
    return (rid, start, end, low, high, tuple(sorted(rounded.items())))


def aggregate(function: str, values: Sequence[Any]) -> Any:
    if function == "count":
        return len(values)
    if function == "sum":
        return sum(values)
    if function == "avg":
        return sum(values) / len(values)
    return min(values) if function == "min" else max(values)


def _values(
    group_by: Sequence[str],
    key: tuple[Any, ...],
    records: Sequence[Record],
    aggregates: Sequence[tuple[str, str, str]],
) -> dict[str, Any]:
    values = dict(zip(group_by, key, strict=True))
    for name, function, field in aggregates:
        values[name] = aggregate(function, [r.fields[field] for r in records])
    return values


def _key(record: Record, group_by: Sequence[str]) -> tuple[Any, ...]:
    return tuple(record.fields[g] for g in group_by)


def _key_text(key: tuple[Any, ...]) -> str:
    return ":".join(map(str, key))


def time_windows(
    query: str,
    records: Sequence[Record],
    size: int,
    slide: int,
    group_by: Sequence[str],
    aggregates: Sequence[tuple[str, str, str]],
) -> list[Row]:
    starts = {s for r in records for s in range((r.ts // slide) * slide, r.ts - size, -slide)}
    rows = []
    for start in starts:
        inside = [r for r in records if start <= r.ts < start + size]
        for key in {_key(r, group_by) for r in inside}:
            group = [r for r in inside if _key(r, group_by) == key]
            rid = f"{query}|{start}|{start + size}|{_key_text(key)}"
            low, high = min(r.ts for r in group), max(r.ts for r in group)
            rows.append(
                _row(rid, start, start + size, low, high, _values(group_by, key, group, aggregates))
            )
    return sorted(rows)


def rows_windows(
    query: str,
    records: Sequence[Record],
    inputs: Sequence[str],
    size: int,
    slide: int,
    group_by: Sequence[str],
    aggregates: Sequence[tuple[str, str, str]],
) -> list[Row]:
    seen: dict[tuple[Any, ...], list[Record]] = {}
    rows = []
    for record in merge_order(records, inputs):
        key = _key(record, group_by)
        history = seen.setdefault(key, [])
        history.append(record)
        if len(history) % slide == 0:
            window = history[-size:]
            start, end = window[0].ts, record.ts + 1
            rid = f"{query}|{start}|{end}|{_key_text((*key, record.identity))}"
            values = {**_values(group_by, key, window, aggregates), "row": record.identity}
            rows.append(_row(rid, start, end, window[0].ts, record.ts, values))
    return sorted(rows)


def sessions(
    query: str,
    records: Sequence[Record],
    inputs: Sequence[str],
    gap: int,
    group_by: Sequence[str],
    aggregates: Sequence[tuple[str, str, str]],
) -> list[Row]:
    groups: dict[tuple[Any, ...], list[list[Record]]] = {}
    for record in merge_order(records, inputs):
        runs = groups.setdefault(_key(record, group_by), [])
        if not runs or record.ts >= runs[-1][-1].ts + gap:
            runs.append([])
        runs[-1].append(record)
    rows = []
    for key, runs in groups.items():
        for run in runs:
            start, end = run[0].ts, run[-1].ts + gap
            rid = f"{query}|{start}|{end}|{_key_text(key)}"
            rows.append(
                _row(rid, start, end, start, run[-1].ts, _values(group_by, key, run, aggregates))
            )
    return sorted(rows)


def join_pair(query: str, left: Record, right: Record, start: int = -1, end: int = -1) -> Row:
    """A join result of `left` and `right` (in window `[start, end)` if given)."""
    values: dict[str, Any] = {f"{left.source}.ts": left.ts, f"{right.source}.ts": right.ts}
    values.update({f"{left.source}.{k}": v for k, v in left.fields.items()})
    values.update({f"{right.source}.{k}": v for k, v in right.fields.items()})
    pair_id = f"{left.identity}*{right.identity}"
    values["id"] = pair_id
    rid = f"{query}|{start}|{end}|{pair_id}"
    return _row(rid, start, end, min(left.ts, right.ts), max(left.ts, right.ts), values)


def join(
    query: str,
    records: Sequence[Record],
    field: str,
    match: Callable[[Record, Record], bool],
    window: int | None = None,
) -> list[Row]:
    """All (left, right) pairs with equal `field` for which `match` holds; with `window`, pairs
    carry the tumbling window they share."""
    lefts = [r for r in records if r.source == "S"]
    rights = [r for r in records if r.source == "T"]
    rows = []
    for left in lefts:
        for right in rights:
            if left.fields[field] == right.fields[field] and match(left, right):
                if window is None:
                    rows.append(join_pair(query, left, right))
                else:
                    start = (left.ts // window) * window
                    rows.append(join_pair(query, left, right, start, start + window))
    return sorted(rows)


def rows_join(query: str, records: Sequence[Record], field: str, size: int) -> list[Row]:
    """`S [Partition By field Rows size] join T [...]`: each arriving tuple joins the last
    `size` tuples of the other side with the same key."""
    last: dict[tuple[str, Any], list[Record]] = {}
    rows = []
    for record in merge_order(records, ["S", "T"]):
        other = "T" if record.source == "S" else "S"
        for stored in last.get((other, record.fields[field]), []):
            pair = (record, stored) if record.source == "S" else (stored, record)
            rows.append(join_pair(query, *pair))
        own = last.setdefault((record.source, record.fields[field]), [])
        own.append(record)
        del own[:-size]
    return sorted(rows)


def counter(query: str, records: Sequence[Record], inputs: Sequence[str], key: str) -> list[Row]:
    counts: dict[Any, int] = {}
    rows = []
    for record in merge_order(records, inputs):
        counts[record.fields[key]] = counts.get(record.fields[key], 0) + 1
        values = {
            "ts": record.ts,
            **record.fields,
            "count": counts[record.fields[key]],
            "id": record.identity,
        }
        rows.append(_row(f"{query}|-1|-1|{record.identity}", -1, -1, record.ts, record.ts, values))
    return sorted(rows)


def top_k(
    query: str, records: Sequence[Record], size: int, slide: int, by: str, k: int
) -> list[Row]:
    starts = {s for r in records for s in range((r.ts // slide) * slide, r.ts - size, -slide)}
    rows = []
    for start in starts:
        inside = [r for r in records if start <= r.ts < start + size]
        threshold = sorted((r.fields[by] for r in inside), reverse=True)[:k][-1]
        for r in inside:
            if r.fields[by] >= threshold:
                values = {"ts": r.ts, **r.fields, "id": r.identity}
                rid = f"{query}|{start}|{start + size}|{r.identity}"
                rows.append(_row(rid, start, start + size, r.ts, r.ts, values))
    return sorted(rows)
