"""Window assigners: which windows a timestamp (or a pane) belongs to.

Time windows are aligned to the epoch: window `k` covers `[k*slide, k*slide + size)`. Sliding
windows are computed from panes of `gcd(size, slide)` ms (each window is a union of whole
panes), so each record is aggregated once, into its pane, and panes are combined at firing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


class WindowAssigner:
    """Base of the window kinds: `size` and `slide` in the window's unit (ms or tuples)."""

    size: int
    slide: int


@dataclass(frozen=True)
class TimeWindows(WindowAssigner):
    """Tumbling (`slide == size`) or sliding time windows, in ms."""

    size: int
    slide: int

    @property
    def pane(self) -> int:
        return math.gcd(self.size, self.slide)

    def pane_of(self, ts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return (ts // self.pane) * self.pane

    def starts_of(self, ts: int) -> list[int]:
        """Start of every window containing time `ts` (or the pane starting at `ts`), ascending."""
        last = (ts // self.slide) * self.slide
        first = -((self.size - self.pane - ts) // self.slide) * self.slide
        return list(range(first, last + 1, self.slide))

    def last_end(self, pane: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """End of the last window that contains each pane: after it fires the pane is spent."""
        return (pane // self.slide) * self.slide + self.size

    def first_end(self, pane: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """End of the first window that contains each pane."""
        first = -((self.size - self.pane - pane) // self.slide) * self.slide
        return first + self.size


@dataclass(frozen=True)
class RowsWindows(WindowAssigner):
    """Tuple-based windows (`ROWS size`, sliding by `slide` tuples)."""

    size: int
    slide: int


@dataclass(frozen=True)
class SessionWindows(WindowAssigner):
    """Sessions per key: a session ends once no record came for `gap` ms."""

    gap: int
    size: int = 0
    slide: int = 0
