"""`make demo-compare`'s figure (e2e/compare_plot.py): per-second rate and worst latency around
a migration, its span from the phase history, and the PNG written with matplotlib."""

import math
from datetime import UTC, datetime
from pathlib import Path

from e2e.compare_plot import Output, binned, plot, span

T0 = 1_800_000_000.0


def stamp(offset: float) -> str:
    return datetime.fromtimestamp(T0 + offset, UTC).isoformat()


STATUS = {
    "phase": "Succeeded",
    "phaseHistory": [
        {"phase": "Queued", "enteredAt": stamp(-0.5)},
        {"phase": "Preparing", "enteredAt": stamp(0.0)},
        {"phase": "Finalizing", "enteredAt": stamp(12.0)},
        {"phase": "Succeeded", "enteredAt": stamp(40.0)},
    ],
}
# Four results every 2 s (2 per second), none from 4 s to 10 s (the pause), then later ones.
TIMES = [T0 + t for t in range(-20, 30, 2) if not 4 <= t < 10 for _ in range(4)]
OUTPUT = Output(TIMES, [1.0 if t < T0 + 10 else 5.0 for t in TIMES])


def test_span_runs_from_preparing_to_finalizing() -> None:
    assert span(STATUS) == (T0, T0 + 12.0)
    assert (
        span({"phase": "Failed", "phaseHistory": [{"phase": "Queued", "enteredAt": stamp(0)}]})
        is None
    )


def test_rate_and_worst_latency_per_bin() -> None:
    starts, rates, worst = binned(OUTPUT, T0, T0 + 12.0, 2.0)
    assert starts == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    assert rates == [2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 0.0]  # the 12 s result is past the end
    assert worst[:2] == [1.0, 1.0] and worst[5] == 5.0 and math.isnan(worst[3])


def test_the_figure_is_a_png_with_a_column_per_migration(tmp_path: Path) -> None:
    refused = {"phase": "Failed", "message": "moving-state: the runtime does not offer yet"}
    path = plot(OUTPUT, [("unimico", STATUS), ("moving-state", refused)], tmp_path / "f.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(data[16:20], "big")
    assert width == 2 * 4 * 90  # two columns of 4 inches at 90 dpi
