"""`auto`: pick a protocol from the plan's window semantics and the size of its state.

The rule, in order (each choice is one that does not refuse the plan):

1. A protocol that moves no state (`unimico` for a move, `parallel-track` for a plan change) when
   the plan's windows are time-based and the hand-off horizon (seed 001 5.2, equation (4): the
   event time the old instance must keep running, `W` or `2W`) is at most `max_overlap_ms`: no
   output gap and nothing is copied.
2. Otherwise a state move, priced with seed 001 5.1: `moving-state` when it accepts the change
   (all states match: equation (3) reduces to matching and moving cursors), `state-transfer`
   otherwise (its pause grows with the state: `state_bytes / bandwidth`).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamshift_engine.migration import handoff
from streamshift_engine.migration.parallel_track import ParallelTrack
from streamshift_engine.migration.protocol import Protocol
from streamshift_engine.migration.state_moving import MovingState, StateTransfer
from streamshift_engine.migration.unimico import UniMiCo
from streamshift_engine.plan.model import Plan


@dataclass(frozen=True)
class Choice:
    protocol: type[Protocol]
    reason: str


def choose(
    plan: Plan,
    new_plan: Plan,
    state_bytes: int,
    max_overlap_ms: int = 600_000,
    bandwidth_bytes_per_s: float = 100e6,
) -> Choice:
    """The protocol `auto` runs for this migration, with the reason."""
    change = plan.name != new_plan.name
    stateless_protocol: type[Protocol] = ParallelTrack if change else UniMiCo
    refusal = stateless_protocol.refusal(plan, new_plan)
    overlap = handoff.horizon(plan)
    if refusal is None and overlap <= max_overlap_ms:
        return Choice(
            stateless_protocol,
            f"time-based windows; the old instance runs {overlap} ms of event time longer "
            f"(seed 001 eq. 4) and no state moves ({state_bytes} bytes stay)",
        )
    why_not = refusal or f"its hand-off horizon of {overlap} ms exceeds {max_overlap_ms} ms"
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
