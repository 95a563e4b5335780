"""Counter-based random draws: pure functions of (seed, event index, field salt).

The generator never keeps a stateful RNG. Every random field of event `i` is
`mix64(stream_key(seed, salt) + i * GAMMA)` (mod 2**64), the output function of Java's
`SplittableRandom` (Steele, Lea, Flood: "Fast splittable pseudorandom number generators"), where
`stream_key(seed, salt) = mix64(mix64(seed) + salt)`. Any index range can therefore be generated on
its own, by numpy here or by Spark later, and gives the same values on any machine: only integer
operations and correctly rounded IEEE float operations (+, *, floor) are used.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

GAMMA = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix64_int(value: int) -> int:
    """The splitmix64 finaliser on one Python integer (mod 2**64)."""
    z = value & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def mix64(values: U64) -> U64:
    """The splitmix64 finaliser over a uint64 array (wrapping arithmetic)."""
    z = values ^ (values >> np.uint64(30))
    z *= _M1
    z ^= z >> np.uint64(27)
    z *= _M2
    z ^= z >> np.uint64(31)
    return z


def stream_key(seed: int, salt: int) -> int:
    """The key of one field's stream: distinct salts give independent streams."""
    return mix64_int(mix64_int(seed) + salt)


def bits(seed: int, salt: int, indices: I64) -> U64:
    """64 random bits per event index for the field named by `salt`."""
    counters = indices.astype(np.uint64) * np.uint64(GAMMA) + np.uint64(stream_key(seed, salt))
    return mix64(counters)


def below(seed: int, salt: int, indices: I64, bound: I64 | int) -> I64:
    """A uniform integer in `[0, bound)` per index (`bound` >= 1 and < 2**32): the high 32 bits
    scaled by `bound` (Lemire's multiply-shift, no division)."""
    high = bits(seed, salt, indices) >> np.uint64(32)
    scaled = (high * np.asarray(bound, dtype=np.uint64)) >> np.uint64(32)
    return scaled.astype(np.int64)


def unit_interval(seed: int, salt: int, indices: I64) -> npt.NDArray[np.float64]:
    """A uniform double in `[0, 1)` per index: the high 53 bits times 2**-53 (exact)."""
    high = (bits(seed, salt, indices) >> np.uint64(11)).astype(np.float64)
    return high * (1.0 / (1 << 53))


_LN10 = 2.302585092994045684017991454684364208
_TAYLOR_TERMS = 30


def pow10(exponents: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """`10 ** x` for `x` in `[0, 6]`, bit-identical on every IEEE machine.

    libm's `pow` is not correctly rounded and differs between platforms, so the fraction is
    evaluated as a fixed Horner scheme of the exponential's Taylor series (only `+` and `*`),
    and the integer part from exact powers of ten.
    """
    whole = np.floor(exponents)
    argument = (exponents - whole) * _LN10
    result = np.ones_like(argument)
    for term in range(_TAYLOR_TERMS, 0, -1):
        result = 1.0 + result * argument / float(term)
    exact_powers = np.array([10.0**k for k in range(8)], dtype=np.float64)
    scaled: npt.NDArray[np.float64] = result * exact_powers[whole.astype(np.int64)]
    return scaled
