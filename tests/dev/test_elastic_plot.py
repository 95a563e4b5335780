"""The elastic run's figure (`streamshift_dev.elastic_plot`): processing rates from the samples,
and a PNG with the rescales marked."""

from __future__ import annotations

from pathlib import Path

from streamshift_dev.elastic_plot import plot, processed_rates
from streamshift_dev.elastic_timeline import Rescale, Sample


def test_processed_rates_are_the_growth_between_samples() -> None:
    samples = [
        Sample(0.0, 0, 0, 0, 0.0, 1),
        Sample(1.0, 0, 500, 0, 0.0, 1),
        Sample(3.0, 0, 1500, 0, 0.0, 1),
        Sample(3.0, 0, 1600, 0, 0.0, 1),
    ]
    assert processed_rates(samples) == [0.0, 500.0, 500.0, 0.0]
    assert processed_rates(samples, over=3) == [0.0, 500.0, 500.0, 1600 / 3]


def test_the_figure_is_a_png(tmp_path: Path) -> None:
    samples = [Sample(float(t), 1000.0, 900 * t, 100, 0.1, 1 if t < 20 else 3) for t in range(40)]
    up = Rescale("q-autoscale-e1-p3", 12.0, 20.0, 1, 3, "unimico", "Succeeded", 10.2, 10.0, True)
    path = plot(samples, [up], (10.0, 30.0), "test", tmp_path / "sub" / "run.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000
