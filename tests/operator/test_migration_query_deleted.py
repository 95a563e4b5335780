"""A Migration whose query is deleted, the machine's decision: from any phase past Queued it ends
Failed at once with the reason (its pods go with the query: no rollback, which started origin
pods again and held up the deletion for two minutes); a Queued one refused by admission fails
with admission's message."""

from datetime import UTC, datetime, timedelta

import pytest
from streamshift_operator.migration.phase_machine import MachineState, Observation, transition
from streamshift_operator.models.migration import TERMINAL, Phase, Protocol, Timeouts

T0 = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)
GONE = "StreamQuery 'q' is being deleted"
LIVE = [p for p in Phase if p not in TERMINAL and p is not Phase.QUEUED]


@pytest.mark.parametrize("phase", LIVE)
def test_a_migration_whose_query_is_deleted_fails_at_once_from_any_phase(phase: Phase) -> None:
    state = MachineState(phase, T0, Protocol.STATE_TRANSFER, verify=True)
    seen = Observation(T0 + timedelta(seconds=1), abandoned=GONE, failure="also this")
    decision = transition(state, seen, Timeouts())
    assert (decision.phase, decision.actions) == (Phase.FAILED, ())
    assert decision.message == f"{phase}: {GONE}"


def test_a_queued_migration_refused_for_its_deleting_query_fails_with_the_reason() -> None:
    state = MachineState(Phase.QUEUED, T0, None, verify=False)
    decision = transition(state, Observation(T0, failure=GONE), Timeouts())
    assert (decision.phase, decision.message) == (Phase.FAILED, GONE)


@pytest.mark.parametrize("phase", sorted(TERMINAL))
def test_a_finished_migration_stays_as_it_ended(phase: Phase) -> None:
    state = MachineState(phase, T0, Protocol.UNIMICO, verify=False)
    assert transition(state, Observation(T0, abandoned=GONE), Timeouts()).phase is phase
