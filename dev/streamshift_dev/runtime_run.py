"""One `runtime_cases` case on the local stack, through the operator, and how its output differs.

In its own namespace: the Secrets, a StreamQuery of the case's plan (`Running` once its pods
run and report), the input before the Migration, the Migration (`verify: true`; a chain's two,
one after the other), the chunks while it runs (`_Feeder`: the last ones and the tail held
while the protocol still needs input to arrive after its targets began, UniMiCo's first event
times, parallel-track's split; more tails while a protocol phase waits for the watermark and
nothing moves); then its terminal phase, the output topic and the dead-letter topic read
`read_committed` and compared with the reference (fed as many tails) in both directions. The
namespace, its topics and snapshots go afterwards.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streamshift_dev.runtime_cases import (
    Expected,
    RuntimeCase,
    canonical,
    plan_inline,
    records,
    reference,
)
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
NEEDS_INPUT = (*AWAITING_INPUT, "DrainingOrigin")
"""Phases that end only as the watermark moves on."""
HELD_CHUNKS = 2
STALL_S = 6.0
READY_S, FINISH_S, READ_S = 120.0, 300.0, 30.0


@dataclass
class Observed:
    """What one case did and how its output compared."""

    phase: str = ""
    message: str = ""
    cause: str = ""
    """Why the Migration rolled back or failed, if it did."""
    verified: bool | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timeline: str = ""
    results: int = 0
    """Results of the reference (each must be in the output once)."""
    dead_letters: int = 0
    """Dead letters of the reference (each must be in the dead-letter topic once)."""
    tails: int = 0
    """Tails fed (the reference gets as many)."""
    spans: dict[str, float] = field(default_factory=dict)
    """Seconds to the query Running, then to the Migration finished, then to the output read."""

    @property
    def exact(self) -> bool:
        return self.phase == "Succeeded" and not self.problems


def run_case(case: RuntimeCase, kube: Kube, stack: Stack, ns: str) -> Observed:
    """Run `case` in namespace `ns`, which the caller made with `kube.namespace` before the
    operator watching it started (`clean_up` removes it): kopf serves only the namespaces it has
    seen, and one created while it starts can go unseen until it next changes."""
    began = time.monotonic()
    observed = Observed()
    try:
        try:
            _drive(case, kube, stack, ns, observed)
        finally:
            expected = reference(case, max(observed.tails, 1))
            observed.results = sum(expected.results.values())
            observed.dead_letters = sum(expected.dead_letters.values())
        if observed.phase in TERMINAL:
            _compare(case, expected, stack, ns, observed)
            observed.spans["read"] = time.monotonic()
    except (TimedOut, ValueError) as error:
        observed.problems.append(str(error))
    observed.seconds = time.monotonic() - began
    marks = [began, *observed.spans.values()]
    observed.spans = {k: b - a for k, a, b in zip(observed.spans, marks, marks[1:], strict=False)}
    return observed


def clean_up(kube: Kube, stack: Stack, ns: str, keep_data: bool = False) -> None:
    """Remove the case's namespace (its pods end), then its topics and snapshots (also when
    the namespace is slow to go) unless `keep_data` (a failure's input, output, dead letters
    and snapshots, to look into)."""
    try:
        kube.delete_namespace(ns)
    finally:
        if not keep_data:
            delete_topics(stack, f"{ns}-")
            delete_snapshots(stack, f"{ns}/")


class _Feeder:
    """Produces the case's input as the Migrations go: the chunks the case allows while the
    targets start, then one per tick; the last `HELD_CHUNKS` only once the protocol no longer
    needs input after its targets began, or once nothing moved for `STALL_S`; then the tail;
    then, while a protocol phase waits for input and nothing moves for `STALL_S`, the next.
    In a chain the first Migration leaves `reserve` chunks to the second (taking from them
    only when it stalls waiting for input): tails come last, after every chunk."""

    def __init__(self, case: RuntimeCase, stack: Stack, ns: str) -> None:
        self.case, self.stack, self.ns = case, stack, ns
        self.chunks = list(case.feed.chunks)
        self.tails = 0
        self.reserve = 0
        self.early = 0
        self.phase = ""
        self.moved = time.monotonic()  # the last phase change or record produced

    def next_migration(self, reserve: int) -> None:
        """A Migration begins: `reserve` chunks are kept for the ones after it."""
        self.reserve, self.early, self.phase = reserve, self.case.while_preparing, ""

    def _produce(self, part: dict[str, Any]) -> None:
        produce(self.stack, records(part, self.ns))
        self.moved = time.monotonic()

    def tick(self, phase: str) -> None:
        if phase != self.phase:
            self.phase, self.moved = phase, time.monotonic()
        stalled = time.monotonic() - self.moved > STALL_S
        available = len(self.chunks) - self.reserve
        if available > 0 or (self.chunks and stalled and phase in NEEDS_INPUT):
            if phase in STARTING and self.early <= 0:
                return
            if available <= HELD_CHUNKS and phase in AWAITING_INPUT and not stalled:
                return
            self.early -= phase in STARTING
            self._produce(self.chunks.pop(0))
        elif not self.chunks and self.tails < len(self.case.feed.tails):
            first = self.tails == 0 and phase not in AWAITING_INPUT
            if first or (stalled and phase in NEEDS_INPUT):
                self._produce(self.case.feed.tails[self.tails])
                self.tails += 1

    def finish(self) -> None:
        """The rest of the input (a migration that ended early: the query runs on)."""
        while self.chunks:
            self._produce(self.chunks.pop(0))
        if self.tails == 0:
            self._produce(self.case.feed.tails[0])
            self.tails = 1


def _drive(case: RuntimeCase, kube: Kube, stack: Stack, ns: str, observed: Observed) -> None:
    names = list(case.feed.before)
    body = stream_query(
        "q", plan_inline(case.plan), names, ns, case.partitions, case.parallelism, stack
    )
    kube.create(SQ, ns, body)
    wait_for("the StreamQuery Running", lambda: kube.running(ns, "q"), READY_S)
    observed.spans["ready"] = time.monotonic()
    produce(stack, records(case.feed.before, ns))
    stages = [("m", case.protocol, case.target)]
    if case.then is not None:
        stages.append(("m2", *case.then))
    feeder = _Feeder(case, stack, ns)
    share = len(feeder.chunks) // len(stages)
    timelines, verdicts = [], []
    try:
        for index, (name, protocol, target) in enumerate(stages):
            feeder.next_migration(share * (len(stages) - 1 - index))
            kube.create(MIG, ns, migration(name, "q", protocol, target))
            status = _follow(kube, ns, name, feeder)
            observed.phase = str(status.get("phase", ""))
            observed.message = str(status.get("message") or "")
            verdicts.append((status.get("verification") or {}).get("exact"))
            observed.cause = _rollback_cause(status)
            prefix = f"{name}: " if len(stages) > 1 else ""
            timelines.append(prefix + _timeline(status))
            if observed.phase != "Succeeded":
                break
    finally:
        feeder.finish()
        observed.tails = feeder.tails
        observed.timeline = " | ".join(timelines)
    observed.spans["migrated"] = time.monotonic()
    observed.verified = None if None in verdicts else all(verdicts)
    if observed.phase not in TERMINAL:
        workers = "; ".join(kube.worker_states(ns))
        raise TimedOut(
            f"the Migration did not finish in {FINISH_S:.0f} s (phases {observed.timeline}, "
            f"{observed.tails} tails fed; the workers: {workers})"
        )
    if observed.phase != "Succeeded":
        cause = f" ({observed.cause})" if observed.cause else ""
        observed.problems.append(f"Migration {observed.phase}: {observed.message}{cause}")


def _follow(kube: Kube, ns: str, name: str, feeder: _Feeder) -> dict[str, Any]:
    """Feed while Migration `name` runs; its status once terminal (or at the deadline)."""
    deadline = time.monotonic() + FINISH_S
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = kube.status(MIG, ns, name)
        if status.get("phase") in TERMINAL:
            break
        feeder.tick(str(status.get("phase", "")))
        time.sleep(CHUNK_EVERY_S)
    return status


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


def _rollback_cause(status: dict[str, Any]) -> str:
    """Why a Migration rolled back or failed: the message of the phase record that began it."""
    for record in status.get("phaseHistory") or []:
        if record.get("phase") in ("RollingBack", "Failed") and record.get("message"):
            return str(record["message"])
    return ""


def _timeline(status: dict[str, Any]) -> str:
    """Each phase the Migration went through, with its seconds."""
    history = status.get("phaseHistory") or []
    stamps = [datetime.fromisoformat(r["enteredAt"]) for r in history]
    spans = [
        f"{r['phase']}={(b - a).total_seconds():.1f}"
        for r, a, b in zip(history, stamps, stamps[1:], strict=False)
    ]
    return " ".join([*spans, str(history[-1]["phase"])] if history else spans)
