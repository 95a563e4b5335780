"""Prometheus metrics of one worker (a registry of its own) and structured JSON logs.

Every sample carries the worker's identity (`namespace`, `query`, `instance`, `pod`) as labels,
so a dashboard or alert can sum or split by query without relabelling rules in the scraper."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

import orjson
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample


class Labelled(Collector):
    """The metrics of `inner` with `labels` added to every sample."""

    def __init__(self, inner: CollectorRegistry, labels: Mapping[str, str]) -> None:
        self.inner = inner
        self.labels = dict(labels)

    def collect(self) -> Iterable[Metric]:
        for metric in self.inner.collect():
            metric.samples = [
                Sample(s.name, {**self.labels, **s.labels}, s.value, s.timestamp, s.exemplar)
                for s in metric.samples
            ]
            yield metric


class Metrics:
    """Events in and out, latency, busy time, lag, state and snapshot sizes, migration phase,
    and the load the autoscaler reads (`load`); `identity` labels every sample."""

    def __init__(self, identity: Mapping[str, str] | None = None) -> None:
        r = CollectorRegistry(auto_describe=True)
        self.registry = CollectorRegistry()
        self.registry.register(Labelled(r, identity or {}))
        self.events_in = Counter("streamshift_events_in", "Input events consumed", registry=r)
        self.results_out = Counter("streamshift_results_out", "Results committed", registry=r)
        self.dead_letters = Counter("streamshift_dead_letters", "Dead letters sent", registry=r)
        self.latency = Histogram(
            "streamshift_latency_seconds",
            "Event time of a result's newest input to the wall clock when produced",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.busy = Counter(
            "streamshift_busy_seconds", "Time spent decoding and processing input", registry=r
        )
        self.processed = Counter(
            "streamshift_records_processed", "Kafka records decoded and processed", registry=r
        )
        self.busy_ratio = Gauge(
            "streamshift_busy_ratio", "Fraction of the load window spent busy", registry=r
        )
        self.true_rate = Gauge(
            "streamshift_true_rate_records",
            "Records processed per busy second over the load window (DS2's true rate)",
            registry=r,
        )
        self.input_rate = Gauge(
            "streamshift_input_rate_records",
            "Records per second appended to an input partition over the load window",
            ["partition"],
            registry=r,
        )
        self.partition_lag = Gauge(
            "streamshift_partition_lag_records",
            "Records behind a partition's end",
            ["partition"],
            registry=r,
        )
        self.partition_lag_seconds = Gauge(
            "streamshift_partition_lag_seconds",
            "Seconds of a partition's input rate behind its end",
            ["partition"],
            registry=r,
        )
        self.lag = Gauge("streamshift_lag_records", "Records behind the partition ends", registry=r)
        self.state_bytes = Gauge("streamshift_state_bytes", "Operator state size", registry=r)
        self.watermark = Gauge("streamshift_watermark_ms", "Instance watermark", registry=r)
        self.snapshot_seconds = Histogram(
            "streamshift_snapshot_seconds", "Snapshot upload duration", registry=r
        )
        self.snapshot_bytes = Gauge("streamshift_snapshot_bytes", "Last snapshot size", registry=r)
        self.snapshot_failures = Counter(
            "streamshift_snapshot_failures", "Snapshots abandoned after retries", registry=r
        )
        self.phase = Gauge(
            "streamshift_migration_phase", "1 for the current phase", ["phase"], registry=r
        )

    def set_phase(self, phase: str) -> None:
        self.phase.clear()
        self.phase.labels(phase=phase).set(1)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any `extra` fields."""

    SKIP = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data.update({k: v for k, v in record.__dict__.items() if k not in self.SKIP})
        if record.exc_info:
            data["error"] = self.formatException(record.exc_info)
        return orjson.dumps(data, default=str).decode()


def setup_logging() -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.Formatter.converter = time.gmtime
