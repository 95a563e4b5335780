"""The StreamQuery status behind the printer columns: Instances ready/desired and Watermark Lag."""

from datetime import UTC, datetime

from operator_specs import q5_spec
from streamshift_operator.clients.control_api import WorkerReport
from streamshift_operator.streamquery.decide import initial_status
from streamshift_operator.streamquery.observe import PodView, QueryView
from streamshift_operator.streamquery.status import observed

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SPEC = q5_spec(sources=[{"name": "bid", "topic": "bids", "partitions": 4}])


def _pod(name: str, ready: bool) -> PodView:
    return PodView(name, 0, int(name[-1]), "Running", ready, "127.0.1.1", 0, False)


def _report(watermark: int) -> WorkerReport:
    return WorkerReport(
        phase="running",
        partitions=(0,),
        offsets={},
        watermark=watermark,
        throughput=1.0,
        lag=0,
        state_bytes=10,
        counts={},
        last_snapshot=None,
        roles={},
    )


def test_instances_column_counts_the_ready_of_the_placed() -> None:
    placed = initial_status(SPEC)
    view = QueryView(
        {"q-e0-0": _pod("q-e0-0", True), "q-e0-1": _pod("q-e0-1", False)},
        {"q-e0-0": _report(0)},  # the other's worker does not answer yet
    )
    patch = observed(placed, view, "q", NOW, [])
    assert patch["readyInstances"] == "1/2" and patch["replicas"] == 1
    assert patch["watermarkLagSeconds"] is None  # not every instance has a watermark


def test_watermark_lag_is_the_wall_clock_minus_the_query_watermark() -> None:
    placed = initial_status(SPEC)
    now_ms = int(NOW.timestamp() * 1000)
    view = QueryView(
        {"q-e0-0": _pod("q-e0-0", True), "q-e0-1": _pod("q-e0-1", True)},
        {"q-e0-0": _report(now_ms - 2500), "q-e0-1": _report(now_ms - 9000)},
    )
    patch = observed(placed, view, "q", NOW, [])
    assert patch["readyInstances"] == "2/2"
    assert patch["watermarkLagSeconds"] == 9  # the slowest instance's, whole seconds
