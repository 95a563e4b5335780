"""`auto`: pick a protocol from the plan's window semantics and the size of its state.

The rule, in order (each choice is one that does not refuse the plan):

1. A protocol that moves no state (`unimico` for a move, `parallel-track` for a plan change) when
   the time the old instance keeps running (`overlap`) is at most `max_overlap_ms`: no output gap
   and nothing is copied. That time is the extent of the plan's windows: a time window or range
   join spans its size in ms (seed 000 3.2: the origin finishes the window that starts at the
   migration timestamp; seed 001 eq. 4: `W`, or `2W` for stacked joins); a `ROWS n` window
   spans `n` tuples, which take `n / rate` at the arrival rate observed at that window (without
   an observed rate it is stated in tuples and not counted in ms).
2. Otherwise a state move, priced with seed 001 5.1: `moving-state` when it accepts the change
   (all states match: equation (3) reduces to matching and moving cursors), `state-transfer`
   otherwise (its pause grows with the state: `state_bytes / bandwidth`).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamshift_engine.migration import marking
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.state_moving import MovingState, StateTransfer
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.model import Plan


@dataclass(frozen=True)
class Choice:
    protocol: type[Protocol]
    reason: str


@dataclass(frozen=True)
class Overlap:
    """How long the old instance keeps running: `ms` of event time, and how that was reckoned."""

    ms: float
    terms: list[str]
    tuples: int = 0

    def describe(self) -> str:
        uncounted = f" and {self.tuples} tuples" if self.tuples else ""
        return f"{' + '.join(self.terms) or 'no window'} = {self.ms:.0f} ms{uncounted}"


def overlap(plan: Plan, rows_per_s: float | None) -> Overlap:
    """The extent of the plan's windows in event time (`rows_per_s`: tuples per second of event
    time observed at its `ROWS` windows)."""
    ms = 0.0
    terms = []
    tuples = 0
    for op, window in marking.own_windows(plan):
        if window.kind != "rows":
            ms += window.size
            terms.append(f"{op.id} {window.kind} {window.size} ms")
        elif rows_per_s:
            spent = window.size / rows_per_s * 1_000
            ms += spent
            terms.append(
                f"{op.id} ROWS {window.size} ({window.size} tuples at {rows_per_s:g}/s "
                f"~ {spent:.0f} ms)"
            )
        else:
            tuples += window.size
            terms.append(f"{op.id} ROWS {window.size} (no arrival rate observed)")
    return Overlap(ms, terms, tuples)


def choose(
    plan: Plan,
    new_plan: Plan,
    state_bytes: int,
    max_overlap_ms: int = 600_000,
    bandwidth_bytes_per_s: float = 100e6,
    rows_per_s: float | None = None,
) -> Choice:
    """The protocol `auto` runs for this migration, with the reason."""
    change = plan.name != new_plan.name
    stateless_protocol: type[Protocol] = ParallelTrack if change else UniMiCo
    refusal = stateless_protocol.refusal(plan, new_plan)
    extent = overlap(plan, rows_per_s)
    if refusal is None and extent.ms <= max_overlap_ms:
        source = "seed 001 eq. 4" if change else "seed 000 3.2"
        return Choice(
            stateless_protocol,
            f"no state moves ({state_bytes} bytes stay); the old instance runs on for its "
            f"windows' extent ({source}): {extent.describe()}",
        )
    why_not = refusal or (
        f"the old instance would run on for {extent.describe()}, over {max_overlap_ms} ms"
    )
    pause = state_bytes / bandwidth_bytes_per_s
    if MovingState.refusal(plan, new_plan) is None:
        return Choice(
            MovingState,
            f"{why_not}; all states match, so they are shared (seed 001 eq. 3 without "
            f"recomputation) instead of copying {state_bytes} bytes",
        )
    return Choice(
        StateTransfer,
        f"{why_not}; the state ({state_bytes} bytes, about {pause:.3f} s to transfer) moves "
        "through a snapshot at a marker",
    )
