"""`make demo-compare`'s figure: output rate and latency of q5 around each protocol's migration.

The output topic is read `read_committed`, each result with its Kafka timestamp (when a worker
produced it). Latency is that time minus the wall-clock time at which the input reached the
result's window end: the feeder writes event time at wall-clock speed and never ahead of it, so
the smallest Kafka timestamp minus event time over the input's first `SAMPLE` records maps
event time onto the wall clock. One column per migration, from `MARGIN_S` before it (entering
Preparing) to `MARGIN_S` after its protocol's work (entering Finalizing, where the cost is
recorded and the output verified), that work shaded: results per second on top, the largest
latency below, both over bins of `BIN_S` (q5's window slide: it emits once per slide).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib
import orjson
from confluent_kafka import Consumer, TopicPartition

matplotlib.use("Agg")
from matplotlib import pyplot

MARGIN_S = 15.0
BIN_S = 2.0
SAMPLE = 5000
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Output:
    """Per result: when it was produced (s) and its latency (s)."""

    produced: list[float]
    latency: list[float]


def _records(bootstrap: str, topic: str) -> list[tuple[float, bytes]]:
    """(timestamp s, value) of every committed record of `topic` up to its end now."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"streamshift-compare-{time.time_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        parts = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S)[1] for p in parts
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        found: list[tuple[float, bytes]] = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                if message.error() is None:
                    found.append((message.timestamp()[1] / 1000, bytes(message.value() or b"")))
            positions = consumer.position([TopicPartition(topic, p) for p in parts])
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                break
        return found
    finally:
        consumer.close()


def _event_offset(bootstrap: str, topic: str, time_field: str) -> float:
    """Wall clock minus event time (s): the smallest over the input's first records."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"c-{time.time_ns()}"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        offsets: list[float] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(offsets) < SAMPLE and time.monotonic() < deadline:
            for message in consumer.consume(SAMPLE, 0.5):
                if message.error() is None:
                    event_ms = orjson.loads(message.value() or b"{}")[time_field]
                    offsets.append((message.timestamp()[1] - event_ms) / 1000)
        if not offsets:
            raise TimeoutError(f"no record in {topic} partition 0")
        return min(offsets)
    finally:
        consumer.close()


def read_output(bootstrap: str, output: str, source: str, time_field: str) -> Output:
    offset = _event_offset(bootstrap, source, time_field)
    produced, latency = [], []
    for at, value in sorted(_records(bootstrap, output)):
        produced.append(at)
        latency.append(at - (orjson.loads(value)["window_end"] / 1000 + offset))
    return Output(produced, latency)


def span(status: dict[str, Any]) -> tuple[float, float] | None:
    """Wall-clock seconds of entering Preparing and Finalizing (None unless both happened)."""
    entered = {
        r["phase"]: datetime.fromisoformat(r["enteredAt"]).timestamp()
        for r in reversed(status.get("phaseHistory") or [])
    }
    if "Preparing" not in entered or "Finalizing" not in entered:
        return None
    return entered["Preparing"], entered["Finalizing"]


def binned(
    output: Output, lo: float, hi: float, width: float
) -> tuple[list[float], list[float], list[float]]:
    """Bin starts (s from `lo`), results per second in each bin, and each bin's largest
    latency (NaN where no result came)."""
    count: Counter[int] = Counter()
    worst: dict[int, float] = {}
    for at, late in zip(output.produced, output.latency, strict=True):
        if lo <= at < hi:
            slot = int((at - lo) // width)
            count[slot] += 1
            worst[slot] = max(worst.get(slot, late), late)
    slots = range(int((hi - lo) // width) + 1)
    return (
        [s * width for s in slots],
        [count[s] / width for s in slots],
        [worst.get(s, float("nan")) for s in slots],
    )


def plot(output: Output, migrations: list[tuple[str, dict[str, Any]]], path: Path) -> Path:
    """One column per migration; the PNG written to `path`."""
    figure, axes = pyplot.subplots(
        2, len(migrations), figsize=(4 * len(migrations), 6), sharey="row", squeeze=False
    )
    for column, (protocol, status) in enumerate(migrations):
        rate, late = axes[0][column], axes[1][column]
        window = span(status)
        took = "" if window is None else f" ({window[1] - window[0]:.1f} s to Finalizing)"
        rate.set_title(f"{protocol}: {status.get('phase')}{took}", fontsize=10)
        if window is None or status.get("phase") != "Succeeded":
            rate.axis("off")
            late.axis("off")
            rate.text(0.5, 0.5, "no migration", ha="center", transform=rate.transAxes)
            late.text(
                0.5,
                0.5,
                str(status.get("message") or "")[:60],
                ha="center",
                wrap=True,
                fontsize=7,
                transform=late.transAxes,
            )
            continue
        began, ended = window
        starts, rates, worst = binned(output, began - MARGIN_S, ended + MARGIN_S, BIN_S)
        moved = [s - MARGIN_S for s in starts]
        rate.step(moved, rates, where="post", color="tab:blue")
        late.step(moved, worst, where="post", color="tab:red")
        for ax in (rate, late):
            ax.axvspan(0, ended - began, color="tab:orange", alpha=0.2)
            ax.grid(alpha=0.3)
        late.set_xlabel("s from entering Preparing (shaded: to Finalizing)")
    axes[0][0].set_ylabel(f"results per second ({BIN_S:.0f} s bins)")
    axes[1][0].set_ylabel("latency s (largest per bin)")
    figure.suptitle("Nexmark q5: output rate and latency around each migration")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    pyplot.close(figure)
    return path
