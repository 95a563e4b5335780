"""Each row's text as the concatenation of its parts (_rowtext.c)."""

from typing_extensions import Buffer

def join(
    count: int, parts: list[bytes | tuple[Buffer, Buffer] | tuple[Buffer]], /
) -> tuple[bytes, bytes]:
    """Per row, the parts (bytes constants; `(offsets, data)`: `count + 1` int32 offsets and the
    data of a string array; `(values,)`: `count` int64 values, in decimal) concatenated: the
    data and the `count + 1` int32 offsets of a binary array."""
