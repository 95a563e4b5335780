"""One migration at a time per query: which Migration may run, the others wait as Queued.

The active one (past Queued, not finished) keeps running; when none is active, the oldest
Queued migration (by creation time, then name, so the choice is the same on every replica and
after a restart) is admitted.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from streamshift_operator.models.migration import TERMINAL, Phase


@dataclass(frozen=True)
class Candidate:
    """A Migration naming the query, as the operator listed it."""

    name: str
    created: datetime
    phase: Phase


def admitted(candidates: Iterable[Candidate]) -> str | None:
    """The name of the one Migration that may run now for a query, or None."""
    live = [c for c in candidates if c.phase not in TERMINAL]
    active = [c for c in live if c.phase is not Phase.QUEUED]
    pool = active or live
    if not pool:
        return None
    return min(pool, key=lambda c: (c.created, c.name)).name
