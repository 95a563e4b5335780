"""The operator's Prometheus metrics: migrations' ends, and the `/metrics` endpoint serving
them (the autoscaler's step records its decisions: test_autoscaler_reconcile)."""

import socket
import urllib.request

import pytest
from streamshift_operator import metrics


def sample(name: str, **labels: str) -> float | None:
    return metrics.REGISTRY.get_sample_value(name, labels)


def test_a_migration_end_counts_by_protocol_and_phase_and_times_it() -> None:
    labels = {"namespace": "m", "protocol": "unimico", "phase": "Succeeded"}
    before = sample("streamshift_migrations_ended_total", **labels) or 0.0
    metrics.record_migration_end("m", "unimico", "Succeeded", 4.2)
    assert sample("streamshift_migrations_ended_total", **labels) == before + 1
    assert sample("streamshift_migration_duration_seconds_bucket", protocol="unimico", le="5.0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_endpoint_serves_when_a_port_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(metrics.PORT_VARIABLE, raising=False)
    assert metrics.serve() is None
    port = free_port()
    monkeypatch.setenv(metrics.PORT_VARIABLE, str(port))
    assert metrics.serve() == port
    metrics.record_migration_end("served", "moving-state", "RolledBack", None)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    assert 'streamshift_migrations_ended_total{namespace="served",phase="RolledBack"' in text
