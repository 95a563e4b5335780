"""A worker's metrics name the query, instance and pod they measure on every sample, beside the
metric's own labels, as the worker's configuration gives them."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from streamshift_engine.runtime.metrics import Metrics

IDENTITY = {"namespace": "team-a", "query": "q5", "instance": "1", "pod": "q5-e0-1"}


def test_every_sample_carries_the_workers_identity() -> None:
    metrics = Metrics(IDENTITY)
    metrics.events_in.inc(7)
    metrics.input_rate.labels(partition="3").set(250)
    metrics.latency.observe(0.2)
    metrics.set_phase("draining")
    families = list(text_string_to_metric_families(generate_latest(metrics.registry).decode()))
    samples = [s for family in families for s in family.samples]
    assert samples and all(s.labels.items() >= IDENTITY.items() for s in samples)
    values = {(s.name, s.labels.get("partition"), s.labels.get("phase")): s.value for s in samples}
    assert values[("streamshift_events_in_total", None, None)] == 7
    assert values[("streamshift_input_rate_records", "3", None)] == 250
    assert values[("streamshift_migration_phase", None, "draining")] == 1
