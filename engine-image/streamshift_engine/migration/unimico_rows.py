"""UniMiCo's tuple-based hand-off (seed 000, 3.1.1 equation (2) and 3.2.2) on a `ROWS` window.

The origin fixes a boundary event time `C` (no earlier than `ts_start` and after every tuple it
has counted) and counts the tuples reaching its controlling window before `C` (`watch`); once
that count is final it sends `C`, the target's `s - delta` discard and whether the origin had
counted nothing (`boundary_message`); the target's controlling window drops the tuples before
`C` and the first `s - delta` from it (`open_target`). The counting and discarding are the
`TupleGate` wrapped around the engine's window.
"""

from __future__ import annotations

from streamshift_engine.migration import handoff, timestamps
from streamshift_engine.migration.group import Group
from streamshift_engine.migration.tuple_gate import TupleGate
from streamshift_engine.plan.model import Plan


def watch(plan: Plan, origin: Group, start: int) -> tuple[TupleGate, int]:
    """Equation (2), first half: the origin's gate and the boundary it counts up to."""
    gate = TupleGate.install(origin.instance.pipeline, handoff.controlling_node(plan))
    watermark = origin.instance.watermark()
    boundary = start if watermark is None else max(start, watermark)
    gate.watch(boundary)
    return gate, boundary


def boundary_message(plan: Plan, gate: TupleGate, boundary: int) -> dict[str, object]:
    """Equation (2), second half (the count before the boundary is final): what the target
    needs to resume the origin's count."""
    window = plan.controlling_window
    assert window is not None
    counted = gate.counted_before
    return {
        "boundary": boundary,
        "discard": timestamps.counted_tuple_discard(counted, window.slide),
        "history_complete": counted == 0,
    }


def open_target(plan: Plan, target: Group, body: dict[str, object]) -> int:
    """Section 3.2.2: the target's window discards `s - delta` tuples from the boundary on;
    returns the boundary."""
    boundary = int(str(body["boundary"]))
    gate = TupleGate.install(target.instance.pipeline, handoff.controlling_node(plan))
    gate.open(boundary, int(str(body["discard"])), bool(body["history_complete"]))
    return boundary
