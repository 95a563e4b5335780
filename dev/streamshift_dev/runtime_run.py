"""One `runtime_cases` case on the local stack, through the operator, and how its output differs.

In its own namespace: the Secrets, a StreamQuery of the case's plan (`Running` once its pods
run and report), the input before the Migration, the Migration (`verify: true`), the chunks
while it runs (the ones allowed while the targets start, then one per `CHUNK_EVERY_S` once they
run), then the tail, held while the protocol still needs input to arrive after its targets
began (UniMiCo's first event times, parallel-track's split); then its terminal phase, the output
topic and the dead-letter topic read `read_committed` and compared with the reference in both
directions. The namespace, its topics and snapshots go afterwards.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streamshift_dev.runtime_cases import Expected, RuntimeCase, canonical, plan_inline, records
from streamshift_dev.stack_driver import (
    MIG,
    SQ,
    TERMINAL,
    Kube,
    Stack,
    TimedOut,
    delete_snapshots,
    delete_topics,
    migration,
    produce,
    read_committed,
    stream_query,
    wait_for,
)

CHUNK_EVERY_S = 0.4
STARTING = ("", "Queued", "Preparing")
AWAITING_INPUT = (*STARTING, "AwaitingStartTimestamp", "TrackingInParallel")
"""Phases in which a protocol still needs input to arrive after its targets began."""
TAIL_HELD_S = 30.0
"""The longest the tail waits for such a phase to end (then it goes anyway)."""
READY_S, FINISH_S, READ_S = 120.0, 300.0, 30.0


@dataclass
class Observed:
    """What one case did and how its output compared."""

    phase: str = ""
    message: str = ""
    verified: bool | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timeline: str = ""
    results: int = 0
    """Results of the reference (each must be in the output once)."""
    dead_letters: int = 0
    """Dead letters of the reference (each must be in the dead-letter topic once)."""
    spans: dict[str, float] = field(default_factory=dict)
    """Seconds to the query Running, then to the Migration finished, then to the output read."""

    @property
    def exact(self) -> bool:
        return self.phase == "Succeeded" and not self.problems


def run_case(case: RuntimeCase, expected: Expected, kube: Kube, stack: Stack, ns: str) -> Observed:
    """Run `case` in namespace `ns` (created here; `clean_up` removes it)."""
    began = time.monotonic()
    observed = Observed()
    observed.results = sum(expected.results.values())
    observed.dead_letters = sum(expected.dead_letters.values())
    kube.namespace(ns)
    try:
        _drive(case, kube, stack, ns, observed)
        if observed.phase in TERMINAL:
            _compare(case, expected, stack, ns, observed)
            observed.spans["read"] = time.monotonic()
    except TimedOut as error:
        observed.problems.append(str(error))
    observed.seconds = time.monotonic() - began
    marks = [began, *observed.spans.values()]
    observed.spans = {k: b - a for k, a, b in zip(observed.spans, marks, marks[1:], strict=False)}
    return observed


def clean_up(kube: Kube, stack: Stack, ns: str) -> None:
    """Remove the case's namespace (its pods end), then its topics and snapshots."""
    kube.delete_namespace(ns)
    delete_topics(stack, f"{ns}-")
    delete_snapshots(stack, f"{ns}/")


def _drive(case: RuntimeCase, kube: Kube, stack: Stack, ns: str, observed: Observed) -> None:
    names = list(case.feed.before)
    body = stream_query(
        "q", plan_inline(case.plan), names, ns, case.partitions, case.parallelism, stack
    )
    kube.create(SQ, ns, body)
    wait_for("the StreamQuery Running", lambda: kube.running(ns, "q"), READY_S)
    observed.spans["ready"] = time.monotonic()
    produce(stack, records(case.feed.before, ns))
    kube.create(MIG, ns, migration("m", "q", case.protocol, case.target))
    chunks = list(case.feed.chunks)
    early = case.while_preparing
    tail_fed = False
    held_since: float | None = None
    deadline = time.monotonic() + FINISH_S
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = kube.status(MIG, ns, "m")
        phase = str(status.get("phase", ""))
        if phase in TERMINAL:
            break
        if chunks and (phase not in STARTING or early > 0):
            early -= phase in STARTING
            produce(stack, records(chunks.pop(0), ns))
        elif not chunks and not tail_fed:
            held_since = held_since or time.monotonic()
            if phase not in AWAITING_INPUT or time.monotonic() - held_since > TAIL_HELD_S:
                produce(stack, records(case.feed.tail, ns))
                tail_fed = True
        time.sleep(CHUNK_EVERY_S)
    for chunk in chunks:  # a migration that ended early: the query runs on with the input
        produce(stack, records(chunk, ns))
    if not tail_fed:
        produce(stack, records(case.feed.tail, ns))
    observed.spans["migrated"] = time.monotonic()
    observed.phase = str(status.get("phase", ""))
    observed.message = str(status.get("message") or "")
    observed.verified = (status.get("verification") or {}).get("exact")
    observed.timeline = _timeline(status)
    if observed.phase not in TERMINAL:
        raise TimedOut(f"the Migration did not finish in {FINISH_S:.0f} s (phase {observed.phase})")
    if observed.phase != "Succeeded":
        observed.problems.append(f"Migration {observed.phase}: {observed.message}")


def _compare(
    case: RuntimeCase, expected: Expected, stack: Stack, ns: str, observed: Observed
) -> None:
    total = sum(expected.results.values())
    output = read_committed(stack, f"{ns}-out", total, READ_S)
    got = Counter(canonical(json.loads(value)) for value, _ in output)
    observed.problems += result_problems(expected.results, got)
    dead = sum(expected.dead_letters.values())
    letters = read_committed(stack, f"{ns}-out.dead", dead, READ_S if dead else 3.0, quiet=1.0)
    found = Counter(
        (h.get("source", ""), int(h.get("partition", -1)), int(h.get("offset", -1)),
         h.get("reason", ""), value)
        for value, h in letters
    )  # fmt: skip
    observed.problems += dead_letter_problems(expected.dead_letters, found)
    if observed.verified is False:
        observed.problems.append("the operator's verification said not exact")


def result_problems(expected: Counter[str], got: Counter[str]) -> list[str]:
    """Missing, extra, differing (same id, other values) and duplicated results."""
    missing, extra = expected - got, got - expected
    by_id = {json.loads(r).get("id"): r for r in missing}
    differing = [r for r in extra if json.loads(r).get("id") in by_id and got[r] == 1]
    changed = {json.loads(r).get("id") for r in differing}
    duplicate = {r: n - 1 for r, n in got.items() if n > 1 and r in expected}
    problems = []
    lost = [r for r in missing if json.loads(r).get("id") not in changed]
    if lost:
        problems.append(f"{len(lost)} results missing, e.g. {lost[0]}")
    new = [r for r in extra if r not in differing and r not in duplicate]
    if new:
        problems.append(f"{len(new)} extra results, e.g. {new[0]}")
    if differing:
        ident = json.loads(differing[0]).get("id")
        problems.append(f"{len(differing)} results differ, e.g. {differing[0]} for {by_id[ident]}")
    if duplicate:
        problems.append(
            f"{sum(duplicate.values())} duplicate results, e.g. {next(iter(duplicate))}"
        )
    return problems


def dead_letter_problems(
    expected: Counter[tuple[str, int, int, str, bytes]],
    got: Counter[tuple[str, int, int, str, bytes]],
) -> list[str]:
    """Dead letters missing and extra (by input, partition, offset, reason and record)."""
    problems = []
    for what, diff in (("missing", expected - got), ("extra", got - expected)):
        if diff:
            first = next(iter(diff))
            problems.append(
                f"{sum(diff.values())} dead letters {what}, e.g. {first[3]} "
                f"{first[0]}:{first[1]}@{first[2]} {first[4][:80]!r}"
            )
    return problems


def _timeline(status: dict[str, Any]) -> str:
    """Each phase the Migration went through, with its seconds."""
    history = status.get("phaseHistory") or []
    stamps = [datetime.fromisoformat(r["enteredAt"]) for r in history]
    spans = [
        f"{r['phase']}={(b - a).total_seconds():.1f}"
        for r, a, b in zip(history, stamps, stamps[1:], strict=False)
    ]
    return " ".join([*spans, str(history[-1]["phase"])] if history else spans)
