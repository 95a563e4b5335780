"""The arena cache (`streamshift_engine.runtime._arenas`): freed pymalloc arenas are kept up to the
limit, handed back for new objects, and given back to the system when the limit drops. Each case
runs in a fresh interpreter: the cache is process-wide."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

MIB = 1 << 20


def run(code: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr


def test_freed_arenas_are_kept_up_to_the_limit_then_reused_then_given_back() -> None:
    run(
        f"""
        from streamshift_engine.runtime import _arenas

        _arenas.keep({8 * MIB})
        assert _arenas.kept() == 0
        small = [bytes(100) + i.to_bytes(4, "little") for i in range(400_000)]  # ~55 MB
        del small
        kept = _arenas.kept()
        assert {7 * MIB} < kept <= {8 * MIB}, kept  # the rest went back to the system
        again = [bytes(100) + i.to_bytes(4, "little") for i in range(20_000)]  # ~3 MB
        assert _arenas.kept() < kept, (_arenas.kept(), kept)  # new objects took kept arenas
        assert all(len(value) == 104 for value in again)
        del again
        _arenas.keep({2 * MIB})
        assert 0 < _arenas.kept() <= {2 * MIB}, _arenas.kept()
        _arenas.keep(0)
        assert _arenas.kept() == 0
        """
    )


def test_a_negative_limit_is_refused() -> None:
    from streamshift_engine.runtime import _arenas

    with pytest.raises(ValueError, match="must not be negative"):
        _arenas.keep(-1)


def test_without_the_cache_nothing_is_kept() -> None:
    run(
        """
        from streamshift_engine.runtime import _arenas

        small = [bytes(100) + i.to_bytes(4, "little") for i in range(400_000)]
        del small
        assert _arenas.kept() == 0
        """
    )
