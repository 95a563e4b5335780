"""What each protocol can do with a plan, and `auto`'s choice: one place for every caller.

The engine's property checks, the worker (which refuses a role it cannot play exactly) and the
operator (which refuses a Migration before any pod starts) all ask this module, so a protocol is
never accepted by one and refused by another. Plans are compared by what they compute (inputs,
operators with their ids, types and parameters, output), never by name.

- `unimico` moves a plan without changing it; it needs a controlling window whose boundaries are
  event times (seed 000 (Pham et al., UniMiCo) 3.1, equation (1)) or a global `ROWS` window
  (equation (2)), and state that expires (`handoff`).
- `parallel-track` runs the new plan beside the old one until the old holds no old tuple (seed
  001 4.2); it fits the plans `marking.refusal` accepts, on both sides, and a new plan that reads
  no further back before the split than the origin's split offsets reach (`marking.readback`).
- `moving-state` shares or moves every matched state and recomputes the rest (seed 001 (Zhu et al.,
  Dynamic Plan Migration) 4.1); `plan_change.refusal` says which changes it can carry.
- `state-transfer` and `savepoint-restart` restore the origin's snapshot into the target, by
  operator id (seed 003, Bartnik et al., On-the-fly Reconfiguration; seed 004, UPM-CEP's State
  Transfer): they move a plan, they cannot change it.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamshift_engine.migration import handoff, marking, plan_change
from streamshift_engine.plan.model import Plan

PROTOCOLS = ("unimico", "parallel-track", "moving-state", "state-transfer", "savepoint-restart")
PLAN_CHANGERS = ("parallel-track", "moving-state")


def same_computation(plan: Plan, new_plan: Plan) -> bool:
    """Whether the two plans compute the same thing the same way (names aside)."""
    return (plan.inputs, plan.operators, plan.output) == (
        new_plan.inputs,
        new_plan.operators,
        new_plan.output,
    )


def _why(protocol: str, plan: Plan, new_plan: Plan) -> str | None:
    if protocol not in PROTOCOLS:
        return f"unknown protocol {protocol!r}: use one of {', '.join(PROTOCOLS)} or auto"
    if protocol not in PLAN_CHANGERS and not same_computation(plan, new_plan):
        return (
            "it moves a plan and cannot change it (the target runs the origin's plan and "
            "state): use parallel-track, moving-state or auto"
        )
    if protocol == "unimico":
        reason = (
            handoff.tuple_refusal(plan)
            if handoff.tuple_controlled(plan)
            else handoff.time_bounded_refusal(plan)
        )
        return f"{reason}: use state-transfer, moving-state or auto" if reason else None
    if protocol == "parallel-track":
        reason = marking.refusal(plan) or marking.refusal(new_plan)
        if reason is None and marking.readback(new_plan) > marking.readback(plan):
            reason = (
                f"the target plan reads {marking.readback(new_plan)} ms of input before the "
                f"split, the origin plan's split offsets only {marking.readback(plan)} ms"
            )
        return f"{reason}: use moving-state, state-transfer or auto" if reason else None
    if protocol == "moving-state" and not same_computation(plan, new_plan):
        reason = plan_change.refusal(plan, new_plan)
        return f"{reason}: use parallel-track or a plan moving-state can match" if reason else None
    return None


def refusal(protocol: str, plan: Plan, new_plan: Plan | None = None) -> str | None:
    """Why `protocol` cannot migrate `plan` (to `new_plan`, default the same) exactly, with
    what to use instead; None when it can."""
    reason = _why(protocol, plan, plan if new_plan is None else new_plan)
    return f"{protocol} refuses {plan.name}: {reason}" if reason else None


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


@dataclass(frozen=True)
class Choice:
    protocol: str
    reason: str


def choose(
    plan: Plan,
    new_plan: Plan | None = None,
    state_bytes: int = 0,
    max_overlap_ms: int = 600_000,
    bandwidth_bytes_per_s: float = 100e6,
    rows_per_s: float | None = None,
) -> Choice:
    """The protocol `auto` runs, and why; never one that `refusal` refuses.

    In order: a protocol that moves no state (`unimico` for a move, `parallel-track` for a
    plan change) when the old instance runs on for at most `max_overlap_ms` (its windows'
    extent: seed 000 3.2, seed 001 eq. 4; a `ROWS n` window spans `n / rate`); otherwise
    `moving-state` where all states match (seed 001 5.1: equation (3) reduces to moving
    cursors); otherwise `state-transfer` for a move (its pause grows with the state)."""
    new = plan if new_plan is None else new_plan
    change = not same_computation(plan, new)
    stateless = "parallel-track" if change else "unimico"
    why_not = refusal(stateless, plan, new)
    extent = overlap(plan, rows_per_s)
    if why_not is None and extent.ms <= max_overlap_ms:
        source = "seed 001 eq. 4" if change else "seed 000 3.2"
        return Choice(
            stateless,
            f"no state moves ({state_bytes} bytes stay); the old instance runs on for its "
            f"windows' extent ({source}): {extent.describe()}",
        )
    why_not = why_not or (
        f"the old instance would run on for {extent.describe()}, over {max_overlap_ms} ms"
    )
    if refusal("moving-state", plan, new) is None:
        return Choice(
            "moving-state",
            f"{why_not}; all states match, so they are shared (seed 001 eq. 3 without "
            f"recomputation) instead of copying {state_bytes} bytes",
        )
    if not change:
        pause = state_bytes / bandwidth_bytes_per_s
        return Choice(
            "state-transfer",
            f"{why_not}; the state ({state_bytes} bytes, about {pause:.3f} s to transfer) "
            "moves through a snapshot at a marker",
        )
    raise ValueError(
        f"no protocol can change {plan.name} into {new.name} exactly: {why_not}; "
        f"moving-state: {refusal('moving-state', plan, new)}"
    )
