"""The demo fails on a verification that is not exact, though the migration Succeeded."""

from typing import Any

from e2e.demo import failure


def _status(exact: bool, verified: str) -> dict[str, Any]:
    return {
        "phase": "Succeeded",
        "verification": {"exact": exact, "missing": 0 if exact else 112, "message": "m"},
        "conditions": [{"type": "Verified", "status": verified, "reason": "r"}],
    }


def test_only_an_exact_verified_success_passes() -> None:
    assert failure(_status(True, "True")) is None
    assert "not exact: m" in (failure(_status(False, "False")) or "")
    assert failure(_status(True, "Unknown")) is not None
    assert "no verification" in (failure({"phase": "Succeeded"}) or "")
    rolled = {"phase": "RolledBack", "message": "DrainingOrigin: timed out"}
    assert "RolledBack: DrainingOrigin" in (failure(rolled) or "")
