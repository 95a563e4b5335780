"""Which protocol a Migration runs: feasibility of an explicit one, and the choice for `auto`.

Pure functions of the plan's traits (from the engine's `Plan`), the kind of target and the
state size. The CRD already refuses `unimico` with a plan change; what needs the plan (a
window to hand over at, state that expires) is checked here and reported in status. A plan
change runs only by parallel-track or moving-state, whose targets run a plan of their own;
what the two plans together allow is `planchange`'s check. `auto` changes a windowed plan by
parallel-track (the plan-change stack test runs it verified-exact) and falls back to
moving-state where parallel-track cannot split the two plans (`target`).
"""

from dataclasses import dataclass
from enum import StrEnum

from streamshift_operator.models.migration import Protocol

# Above this window size a window-boundary hand-off waits longer than moving small state.
LONG_WINDOW_MS = 300_000
SMALL_STATE_BYTES = 256 * 1024 * 1024


# The protocols whose target runs a plan of its own (seed 001, 4.1 and 4.2).
PLAN_CHANGERS = frozenset({Protocol.PARALLEL_TRACK, Protocol.MOVING_STATE})


class TargetKind(StrEnum):
    RESCALE = "rescale"
    MOVE = "move"
    PLAN = "plan"


@dataclass(frozen=True)
class PlanTraits:
    """What the protocols need to know of a plan."""

    windowed: bool  # a controlling window with fixed boundaries (time, rows or a join range)
    window_ms: int | None  # its size in event time; None for tuple-based windows
    unbounded_state: bool


@dataclass(frozen=True)
class Choice:
    protocol: Protocol
    reason: str


def refusal(protocol: Protocol, traits: PlanTraits, target: TargetKind) -> str | None:
    """Why `protocol` cannot run this migration (a message that says what to do), or None."""
    boundary = protocol in (Protocol.UNIMICO, Protocol.PARALLEL_TRACK)
    if boundary and (not traits.windowed or traits.unbounded_state):
        return (
            f"protocol {protocol} needs a windowed plan whose state expires, and this plan has "
            "no controlling window or keeps unbounded state: use state-transfer, "
            "savepoint-restart or auto"
        )
    if target is TargetKind.PLAN and protocol not in PLAN_CHANGERS:
        return (
            f"protocol {protocol} cannot change the plan (its target runs the origin's plan): "
            "use parallel-track, moving-state or auto"
        )
    return None


def choose(traits: PlanTraits, target: TargetKind, state_bytes: int) -> Choice:
    """The protocol `auto` runs, and why (recorded in status.protocolReason)."""
    if not traits.windowed or traits.unbounded_state:
        if target is TargetKind.PLAN:
            return Choice(
                Protocol.MOVING_STATE,
                "plan change on a plan without a window: matched state moves, the rest is "
                "recomputed",
            )
        return Choice(
            Protocol.STATE_TRANSFER,
            "no window to hand over at: the state moves through the object store while "
            "Kafka buffers the input",
        )
    window = traits.window_ms
    long_window = window is not None and window > LONG_WINDOW_MS and state_bytes < SMALL_STATE_BYTES
    if long_window and target is TargetKind.PLAN:
        return Choice(
            Protocol.MOVING_STATE,
            f"plan change with a long window ({window} ms) and small state ({state_bytes} "
            "bytes): moving the matched state is quicker than running both plans for a window",
        )
    if long_window:
        return Choice(
            Protocol.STATE_TRANSFER,
            f"window of {window} ms is long and the state is small "
            f"({state_bytes} bytes): moving it is quicker than waiting for a window boundary",
        )
    if target is TargetKind.PLAN:
        return Choice(
            Protocol.PARALLEL_TRACK,
            "plan change on a windowed plan: old and new plans run side by side for about one "
            "window, no state moved",
        )
    return Choice(
        Protocol.UNIMICO,
        "windowed plan: hand-off at a window boundary, no state moved, no output gap",
    )
