"""A failed stack test's evidence: its call-phase report (kept on its item by the hook in
`tests/conftest.py`), so a fixture's teardown can tell a failed test, where the evidence goes,
and a topic's committed records with their headers, before the fixture deletes what it made."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from streamshift_dev.workers import cache_dir

CALL = pytest.StashKey[pytest.TestReport]()


def failure(request: pytest.FixtureRequest) -> str | None:
    """The failure of the test `request` serves, or None when its call passed or did not run."""
    report = request.node.stash.get(CALL, None)
    return report.longreprtext if report is not None and report.failed else None


def evidence_folder() -> Path:
    """Where failed stack tests leave their evidence (CI keeps the log folder)."""
    folder = cache_dir() / "log" / "test-failures"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def read_topic(kafka: str, topic: str, timeout: float = 20) -> list[dict[str, Any]]:
    """Every committed record of `topic` with its partition, offset and headers, read until
    3 s pass with nothing new (at most `timeout`)."""
    consumer = Consumer(
        {
            "bootstrap.servers": kafka,
            "group.id": f"evidence-{time.time_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    quiet = time.monotonic() + 3
    while time.monotonic() < min(deadline, quiet):
        for message in consumer.consume(1000, 0.5):
            if message.error() is not None:
                continue
            pairs = message.headers() or []
            headers = {
                k: _text(v) for k, v in (pairs.items() if isinstance(pairs, dict) else pairs)
            }
            value = (message.value() or b"").decode(errors="replace")
            records.append(
                {"p": message.partition(), "o": message.offset(), "h": headers, "v": value}
            )
            quiet = time.monotonic() + 3
    consumer.close()
    return records


def input_order(kafka: str, topic: str) -> dict[int, dict[str, int]]:
    """Per partition of a JSON input topic: its records and how many of them have a
    `date_time` below an earlier record's (a producer's retry reordering the input would make
    a worker's exact output differ from the reference of the input as it was meant)."""
    summary: dict[int, dict[str, int]] = {}
    highest: dict[int, int] = {}
    for record in read_topic(kafka, topic):
        counts = summary.setdefault(record["p"], {"records": 0, "out_of_order": 0})
        counts["records"] += 1
        try:
            ts = int(json.loads(record["v"])["date_time"])
        except (ValueError, KeyError, TypeError):
            continue
        counts["out_of_order"] += ts < highest.get(record["p"], ts)
        highest[record["p"]] = max(ts, highest.get(record["p"], ts))
    return summary


def _text(value: str | bytes | None) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
