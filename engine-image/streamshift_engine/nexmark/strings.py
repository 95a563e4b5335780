"""Deterministic string fields of Nexmark events: random text, names, padding to average sizes.

Random text is a slice of a per-seed pool of lowercase letters, at a drawn offset and of a drawn
length, so building a string costs one slice per event rather than one draw per character. The
`extra` padding follows the reference `StringsGenerator.nextExtra`: an event whose fixed fields
take `current` bytes of an average `avg` gets `avg - current` bytes, give or take 20 percent.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from streamshift_engine.nexmark import draws

I64 = npt.NDArray[np.int64]
Strings = npt.NDArray[np.object_]

POOL_CHARS = 1 << 16
_POOL_SALT = 0x5EED
_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


@lru_cache(maxsize=8)
def text_pool(seed: int) -> str:
    """`POOL_CHARS` lowercase letters, a pure function of the seed."""
    positions = np.arange(POOL_CHARS, dtype=np.int64)
    letters = _ALPHABET[draws.below(seed, _POOL_SALT, positions, len(_ALPHABET))]
    return letters.tobytes().decode("ascii")


def as_strings(values: list[str]) -> Strings:
    """A list of str as a numpy object column."""
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def random_text(seed: int, salt: int, indices: I64, lengths: I64) -> Strings:
    """One pool slice of `lengths[i]` characters per index (lengths below `POOL_CHARS`)."""
    pool = text_pool(seed)
    starts = draws.below(seed, salt, indices, POOL_CHARS - lengths)
    ends = starts + lengths
    return as_strings([pool[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)])


def random_lengths(seed: int, salt: int, indices: I64, max_length: int) -> I64:
    """Reference `nextString` lengths: uniform in `[3, max_length)`."""
    return 3 + draws.below(seed, salt, indices, max_length - 3)


def extra_lengths(seed: int, salt: int, indices: I64, current: I64, average: int) -> I64:
    """Padding lengths: `desired = average - current`; 0 if not positive, otherwise uniform in
    `[desired - delta, desired + delta)` with `delta = round(desired / 5)` (half up)."""
    desired = np.maximum(average - current, 0)
    delta = (2 * desired + 5) // 10
    spread = draws.below(seed, salt, indices, np.maximum(2 * delta, 1))
    return np.where(desired > 0, desired - delta + spread, 0)


def pick(table: tuple[str, ...], choices: I64) -> Strings:
    """Entries of a fixed word list by index."""
    return np.array(table, dtype=object)[choices]


def lengths_of(table: tuple[str, ...], choices: I64) -> I64:
    """Lengths of the picked word-list entries, without building the strings."""
    return np.array([len(word) for word in table], dtype=np.int64)[choices]
