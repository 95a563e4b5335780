"""Reuse of freed pymalloc arenas up to a byte limit (_arenas.c)."""

def keep(limit: int) -> None:
    """Keep up to `limit` bytes of the arenas pymalloc frees and reuse them for new ones
    (installs the cache on first call; a lower limit gives the excess back, 0 keeps none)."""

def kept() -> int:
    """Bytes of freed arenas kept now."""
