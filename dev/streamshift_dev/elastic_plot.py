"""The figure of an elastic run: input and processing rates, lag and parallelism over time,
each rescale of the autoscaler marked (shaded while its Migration ran) with its protocol and
output gap against the rhythm before it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib import pyplot

from streamshift_dev.elastic_timeline import Rescale, Sample


def processed_rates(samples: Sequence[Sample], over: int = 1) -> list[float]:
    """Records per second processed over the `over` samples up to each (0 for the first): the
    lag the instances report moves in steps, so the figure averages over a few."""
    rates = [0.0]
    for i in range(1, len(samples)):
        before, after = samples[max(0, i - over)], samples[i]
        span = after.t - before.t
        rates.append(max(0.0, (after.processed - before.processed) / span) if span > 0 else 0.0)
    return rates


def plot(
    samples: Sequence[Sample],
    rescales: Sequence[Rescale],
    steps: tuple[float, float],
    title: str,
    path: Path,
) -> Path:
    """Write the figure to `path` (PNG) and return it."""
    t = [s.t for s in samples]
    figure, (rates, lag, parallelism) = pyplot.subplots(
        3, 1, sharex=True, figsize=(11, 8), height_ratios=(3, 2, 1.3)
    )
    rates.plot(t, [s.rate_in for s in samples], label="input records/s", color="tab:blue")
    processed = processed_rates(samples, over=5)
    rates.plot(t, processed, label="processed records/s (5 s mean)", color="tab:green")
    rates.set_ylabel("records/s")
    lag.plot(t, [s.lag_seconds for s in samples], color="tab:red")
    lag.set_ylabel("lag (s of input)")
    parallelism.step(t, [s.parallelism for s in samples], where="post", color="black")
    parallelism.set_ylabel("parallelism")
    parallelism.set_xlabel("seconds since the load began")
    top = max((s.parallelism for s in samples), default=1)
    parallelism.set_ylim(0, top + 1)
    for axes in (rates, lag, parallelism):
        for step in steps:
            axes.axvline(step, color="grey", linestyle=":")
        for rescale in rescales:
            end = rescale.ended if rescale.ended is not None else t[-1]
            axes.axvspan(rescale.started, end, color="tab:orange", alpha=0.2)
    for rescale in rescales:
        ratio = rescale.gap_ratio
        gap = "gap n/a" if rescale.gap_s is None else f"gap {rescale.gap_s:.1f}s"
        if ratio is not None:
            gap += f" ({ratio:.2f}x rhythm)"
        outcome = "" if rescale.phase == "Succeeded" else f" {rescale.phase}"
        moved = f"{rescale.from_parallelism}->{rescale.to_parallelism}"
        label = f"{moved} {rescale.protocol}{outcome}\n{gap}"
        rates.annotate(
            label,
            (rescale.started, 1.0),
            xycoords=("data", "axes fraction"),
            va="top",
            fontsize=8,
            color="tab:orange",
        )
    rates.legend(loc="upper right")
    rates.set_title(title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path
