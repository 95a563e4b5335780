"""What one chaos scenario ended as, its printed line, and the suite's final line (pure).

A scenario passes when its output and dead letters equal the reference (`exact`) or when the
operator refused it with a status that says why (`refused`); `missed` when its phase passed
between two polls of the watch, so nothing was injected (it does not pass: the fault was not
tried); anything else is `FAILED` with the reason. Detection is the seconds from the fault to
the status saying so, recovery the seconds from the fault (or the dependency's return) to the
query running again; either is None when the scenario has no such moment (an operator killed
detects nothing; a refusal recovers from nothing) or when it never came.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    EXACT = "exact"
    REFUSED = "refused"
    MISSED = "missed"
    FAILED = "FAILED"


@dataclass(frozen=True)
class Outcome:
    """One scenario's verdict, its measured seconds and why."""

    name: str
    verdict: Verdict
    detection_s: float | None
    recovery_s: float | None
    reason: str
    seconds: float = 0.0
    """How long the scenario took to run, cleanup excluded."""

    @property
    def passed(self) -> bool:
        return self.verdict in (Verdict.EXACT, Verdict.REFUSED)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def line(outcome: Outcome) -> str:
    """`name verdict detection-s=S recovery-s=S (run T s): reason`."""
    return (
        f"{outcome.name} {outcome.verdict.value} detection-s={_seconds(outcome.detection_s)} "
        f"recovery-s={_seconds(outcome.recovery_s)} (run {outcome.seconds:.0f} s): "
        f"{outcome.reason}"
    )


def summary(outcomes: Sequence[Outcome]) -> str:
    """`chaos scenarios=N/M exact detection-max-s=S recovery-max-s=S`: N of M scenarios exact or
    refused with a clear status; the largest detection and recovery seconds measured (`-` when
    none was)."""
    passed = sum(o.passed for o in outcomes)
    detections = [o.detection_s for o in outcomes if o.detection_s is not None]
    recoveries = [o.recovery_s for o in outcomes if o.recovery_s is not None]
    return (
        f"chaos scenarios={passed}/{len(outcomes)} exact "
        f"detection-max-s={_seconds(max(detections, default=None))} "
        f"recovery-max-s={_seconds(max(recoveries, default=None))}"
    )
