"""The operator's Prometheus metrics: what the autoscaler decided and on what, and how
migrations ended, labelled by namespace and query (or protocol) like the workers' metrics.

The workers' `/metrics` say how a query runs; these say what the operator did about it, so an
alert can fire on an autoscaler that keeps rescaling or on migrations that fail or roll back.
Served by `serve` on `STREAMSHIFT_OPERATOR_METRICS_PORT` when set (the Helm chart sets it).
"""

import contextlib
import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

PORT_VARIABLE = "STREAMSHIFT_OPERATOR_METRICS_PORT"
QUERY = ["namespace", "query"]

REGISTRY = CollectorRegistry()
recommended_parallelism = Gauge(
    "streamshift_autoscaler_recommended_parallelism",
    "The parallelism the autoscaler's last decision recommended",
    QUERY,
    registry=REGISTRY,
)
input_rate = Gauge(
    "streamshift_autoscaler_input_rate_records",
    "Records per second appended to the query's input over the metric window",
    QUERY,
    registry=REGISTRY,
)
true_rate = Gauge(
    "streamshift_autoscaler_true_rate_records",
    "Records one instance processes per busy second, as the last decision used it",
    QUERY,
    registry=REGISTRY,
)
lag_seconds = Gauge(
    "streamshift_autoscaler_lag_seconds",
    "Seconds of input the query reads behind the log end, at the last decision",
    QUERY,
    registry=REGISTRY,
)
decisions = Counter(
    "streamshift_autoscaler_decisions",
    "Autoscaler decisions, by action (hold, scale-up, scale-down) and whether they acted",
    [*QUERY, "action", "acted"],
    registry=REGISTRY,
)
migrations_ended = Counter(
    "streamshift_migrations_ended",
    "Migrations that reached a terminal phase, by protocol and phase",
    ["namespace", "protocol", "phase"],
    registry=REGISTRY,
)
migration_seconds = Histogram(
    "streamshift_migration_duration_seconds",
    "Seconds from a Migration's start to its terminal phase, by protocol",
    ["protocol"],
    buckets=(1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)


def record_decision(
    namespace: str,
    query: str,
    action: str,
    acted: bool,
    parallelism: int,
    rates: tuple[float, float | None, float],
) -> None:
    """One autoscaler decision: its action and recommendation, and the input rate, true rate
    and lag seconds it saw (an unknown true rate leaves the gauge as it was)."""
    labels = {"namespace": namespace, "query": query}
    recommended_parallelism.labels(**labels).set(parallelism)
    observed_input, observed_true, observed_lag = rates
    input_rate.labels(**labels).set(observed_input)
    if observed_true is not None:
        true_rate.labels(**labels).set(observed_true)
    lag_seconds.labels(**labels).set(observed_lag)
    decisions.labels(**labels, action=action, acted=str(acted).lower()).inc()


def record_migration_end(namespace: str, protocol: str, phase: str, seconds: float | None) -> None:
    """A Migration reached its terminal `phase` after `seconds` (None: unknown)."""
    migrations_ended.labels(namespace=namespace, protocol=protocol, phase=phase).inc()
    if seconds is not None:
        migration_seconds.labels(protocol=protocol).observe(seconds)


def forget_query(namespace: str, query: str) -> None:
    """Drop a deleted query's gauges (a scrape would otherwise report it forever)."""
    for gauge in (recommended_parallelism, input_rate, true_rate, lag_seconds):
        with contextlib.suppress(KeyError):
            gauge.remove(namespace, query)


def serve() -> int | None:
    """Serve `/metrics` on the port in `STREAMSHIFT_OPERATOR_METRICS_PORT`, if set; the port."""
    value = os.environ.get(PORT_VARIABLE)
    if not value:
        return None
    port = int(value)
    start_http_server(port, registry=REGISTRY)
    return port
