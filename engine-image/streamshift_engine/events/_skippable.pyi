"""Whether msgspec may skip the unread values of JSON records unchecked (_skippable.c)."""

from collections.abc import Iterable

from typing_extensions import Buffer

def skippable(records: Iterable[Buffer], /) -> bool:
    """True when every record is all ASCII, has no digit followed by `e` or `E` and holds
    fewer than 300 digits: then no value in it is invalid UTF-8 or a number beyond a double."""
