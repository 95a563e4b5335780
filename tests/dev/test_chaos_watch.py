"""When a Migration's status first named a fault (pure): the server's time of the phase record
naming it, not a record from before the fault, else the poll's time if only the message names
it."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from streamshift_dev.chaos.watch import _mentioned


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def test_the_record_naming_the_pod_after_the_fault_gives_the_time() -> None:
    status = {
        "phaseHistory": [
            {"phase": "Preparing", "enteredAt": stamp(100.0), "message": "target pod q-e1-0"},
            {"phase": "DrainingOrigin", "enteredAt": stamp(110.0)},
            {
                "phase": "RollingBack",
                "enteredAt": stamp(123.25),
                "message": "DrainingOrigin: target pod q-e1-0 is gone",
            },
        ]
    }
    assert _mentioned(status, "q-e1-0", 121.0) == 123.25
    assert _mentioned(status, "q-e0-0", 121.0) is None


def test_only_the_message_naming_it_counts_from_now() -> None:
    before = time.time()
    found = _mentioned({"message": "origin pod q-e0-0 is gone"}, "q-e0-0", before)
    assert found is not None and before <= found <= time.time()
    assert _mentioned({"message": "waiting"}, "q-e0-0", before) is None
