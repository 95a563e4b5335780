"""UniMiCo's migration-timestamp arithmetic (seed 000 (Pham et al.), section 3), as pure functions.

- `time_migration_timestamp`: equation (1), time-based controlling window; for several inputs
  `ts_start` is the maximum of the per-input `ts_start_i` (section 3.1.1, "Multiple-input window").
- `tuple_delta` and `tuple_migration_timestamp`: equation (2), tuple-based controlling window;
  for several inputs `N = max(N_i)`.
- `activation_timestamp`: section 3.2.2, a time-based target starts at `ts_mi + s`; a tuple-based
  target's controlling window discards its first `s - delta` tuples (`tuple_discard`;
  `counted_tuple_discard` for the engine's windows, from the origin's count of tuples).
- `origin_keeps_join_result`: section 3.2.1, the origin suppresses a join result whose two input
  tuples both lie at or after the target's activation (the target produces it too), when the join
  is the controlling (last) window operator.
"""

from __future__ import annotations

from collections.abc import Sequence


def slide_delta(distance: int, slide: int) -> int:
    """The delta of equations (1) and (2): `distance % s`, or `s` when that is zero."""
    if slide <= 0:
        raise ValueError("a window slide must be positive")
    remainder = distance % slide
    return slide if remainder == 0 else remainder


def time_migration_timestamp(ts_start: int | Sequence[int], ts_last_w: int, slide: int) -> int:
    """Equation (1): the start of the last window the origin processes (time-based window).

    `ts_start` is the first event time the target read (or one per input: their maximum is used),
    `ts_last_w` the start of the most recent window the origin processed, `slide` the window slide.
    """
    start = max(ts_start) if isinstance(ts_start, Sequence) else ts_start
    if start <= ts_last_w:
        return ts_last_w
    return start - slide_delta(start - ts_last_w, slide)


def tuple_delta(tuples_between: int | Sequence[int], slide: int) -> int:
    """Equation (2)'s delta from N, the number of tuples between `ts_last_w` and `ts_start`
    (one count per input: `N = max(N_i)`)."""
    count = max(tuples_between) if isinstance(tuples_between, Sequence) else tuples_between
    return slide_delta(count + 1, slide)


def tuple_migration_timestamp(preceding: Sequence[int], tuples_between: int, slide: int) -> int:
    """Equation (2): the timestamp of the delta-th tuple preceding t.

    `preceding` lists the timestamps of the tuples before t, oldest first (t excluded).
    """
    delta = tuple_delta(tuples_between, slide)
    if delta > len(preceding):
        raise ValueError(f"need {delta} tuples before t, have {len(preceding)}")
    return preceding[-delta]


def tuple_discard(slide: int, delta: int) -> int:
    """Section 3.2.2: how many first tuples the target's tuple-based controlling window drops."""
    return slide - delta


def counted_tuple_discard(counted_before: int, slide: int) -> int:
    """`s - delta` for the engine's `ROWS` windows, which fire after every `s`-th tuple counted
    since the stream began: with `counted_before` tuples counted before the boundary, the
    paper's `N + 1` (the tuples since the last window boundary, t included) is
    `counted_before % s`, so the target discards `(-counted_before) % s` tuples and resumes its
    count in step with the origin's."""
    return tuple_discard(slide, slide_delta(counted_before, slide))


def activation_timestamp(migration_timestamp: int, slide: int) -> int:
    """Section 3.2.2: a time-based target processes tuples with timestamps from here on."""
    return migration_timestamp + slide


def origin_keeps_join_result(min_ts: int, activation: int) -> bool:
    """Section 3.2.1: the origin emits a join result only if one of its tuples precedes the
    activation; results whose tuples are all in the overlap come from the target."""
    return min_ts < activation


def last_fired_window_start(watermark: int, size: int, slide: int) -> int:
    """Start of the latest window `[k*slide, k*slide + size)` whose end is `<= watermark`:
    `ts_last_w` of equation (1) for an instance whose time-based window fired up to `watermark`."""
    return ((watermark - size) // slide) * slide
