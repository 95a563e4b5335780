"""One migration at a time per query."""

from datetime import UTC, datetime, timedelta

from streamshift_operator.migration.admission_rule import Candidate, admitted
from streamshift_operator.models.migration import Phase

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_nothing_to_admit() -> None:
    assert admitted([]) is None
    assert admitted([Candidate("done", T0, Phase.SUCCEEDED)]) is None


def test_the_oldest_queued_goes_first_and_ties_break_by_name() -> None:
    queued = [
        Candidate("b", at(5), Phase.QUEUED),
        Candidate("z", at(1), Phase.QUEUED),
        Candidate("a", at(1), Phase.QUEUED),
    ]
    assert admitted(queued) == "a"


def test_a_running_migration_keeps_the_query_even_if_younger() -> None:
    candidates = [
        Candidate("old-queued", at(0), Phase.QUEUED),
        Candidate("running", at(9), Phase.DRAINING_ORIGIN),
    ]
    assert admitted(candidates) == "running"


def test_finished_migrations_free_the_query() -> None:
    candidates = [
        Candidate("failed", at(0), Phase.FAILED),
        Candidate("rolled-back", at(1), Phase.ROLLED_BACK),
        Candidate("next", at(2), Phase.QUEUED),
        Candidate("later", at(3), Phase.QUEUED),
    ]
    assert admitted(candidates) == "next"
