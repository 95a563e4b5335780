"""`make demo-compare`'s table (e2e/compare.py): one row per protocol from its Migration's
status, "-" where the status records nothing, a refused protocol shown as not supported."""

from e2e.compare import cells, passed, table

SUCCEEDED = {
    "phase": "Succeeded",
    "cost": {
        "durationSeconds": 6.9,
        "outputGapSeconds": 3.4,
        "outputGapBeforeSeconds": 2.1,
        "stateBytesMoved": 76232,
    },
    "verification": {"missing": 0, "duplicate": 0, "exact": True},
}
REFUSED = {"phase": "Failed", "message": "protocol moving-state needs ... does not offer yet"}


def test_rows_show_what_status_records_and_refusals_as_not_supported() -> None:
    rows = [cells("state-transfer", SUCCEEDED), cells("moving-state", REFUSED)]
    assert rows[0] == (
        "state-transfer",
        "Succeeded",
        "6.9",
        "3.4",
        "2.1",
        "76232",
        "-",
        "exact (missing 0, duplicate 0)",
    )
    assert rows[1] == ("moving-state", "not supported", "-", "-", "-", "-", "-", "-")
    lines = table(rows).splitlines()
    assert lines[0].startswith("protocol        phase ") and len(lines) == 4
    assert (
        lines[3]
        == "moving-state    not supported  -           -      -             -            -"
        + "             -"
    )


def test_only_exact_successes_and_refusals_pass() -> None:
    assert passed(SUCCEEDED) and passed(REFUSED)
    assert not passed({**SUCCEEDED, "verification": {"missing": 1, "duplicate": 0, "exact": False}})
    assert not passed({"phase": "RolledBack", "message": "origin lost"})
