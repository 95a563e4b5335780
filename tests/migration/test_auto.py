"""`auto`'s choice and reason for the seed and Nexmark plans: a window's extent is event time for
time windows and range joins, and tuples (priced at the observed arrival rate) for `ROWS`."""

from __future__ import annotations

import pytest
from streamshift_engine.migration.capability import choose, overlap
from streamshift_engine.migration.cases import make_case

KEPT = "no state moves (1000 bytes stay); the old instance runs on for its windows' extent"


@pytest.mark.parametrize(
    ("family", "protocol", "reason"),
    [
        ("q1", "unimico", f"{KEPT} (seed 000 3.2): join range 10000 ms = 10000 ms"),
        (
            "q2",
            "unimico",
            f"{KEPT} (seed 000 3.2): sum ROWS 5 (no arrival rate observed) = 0 ms and 5 tuples",
        ),
        (
            "q3",
            "unimico",
            f"{KEPT} (seed 000 3.2): join range 10000 ms + sum ROWS 5 (no arrival rate "
            "observed) = 10000 ms and 5 tuples",
        ),
        (
            "smq",
            "moving-state",
            "unimico refuses smq: its state is unbounded (a per-key counter): no window boundary "
            "ends the old state: use state-transfer, moving-state or auto; all states match, so "
            "they are shared (seed 001 eq. 3 without recomputation) instead of copying 1000 bytes",
        ),
        ("nexmark-q5", "unimico", f"{KEPT} (seed 000 3.2): counts time 500 ms = 500 ms"),
        ("nexmark-q7", "unimico", f"{KEPT} (seed 000 3.2): highest time 500 ms = 500 ms"),
        (
            "nexmark-q8",
            "unimico",
            f"{KEPT} (seed 000 3.2): sellers time 500 ms + new_users time 500 ms = 1000 ms",
        ),
    ],
)
def test_the_reason_states_each_window_in_its_unit(family: str, protocol: str, reason: str) -> None:
    plan = make_case(family, 0).plan
    choice = choose(plan, plan, state_bytes=1_000)
    assert (choice.protocol, choice.reason) == (protocol, reason)


def test_a_rows_window_is_priced_at_the_observed_arrival_rate() -> None:
    plan = make_case("q3", 0).plan
    extent = overlap(plan, rows_per_s=20.0)
    assert extent.ms == 10_250
    assert extent.describe() == (
        "join range 10000 ms + sum ROWS 5 (5 tuples at 20/s ~ 250 ms) = 10250 ms"
    )
    assert choose(plan, plan, 1_000, max_overlap_ms=10_200, rows_per_s=20.0).protocol == (
        "moving-state"
    )
    assert choose(plan, plan, 1_000, max_overlap_ms=10_300, rows_per_s=20.0).protocol == ("unimico")
