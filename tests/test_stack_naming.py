"""The stack tests' naming scheme: a module that marks all its tests `stack` is named
`test_*_stack.py` (and the suite's conftest marks every test of such a module), so the name says
what a test needs before it is opened."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).parent


def test_modules_marked_stack_as_a_whole_are_named_for_it() -> None:
    misnamed = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("test_*.py"))
        if "pytestmark" in (text := path.read_text())
        and "mark.stack" in text.split("pytestmark", 1)[1].split("\n", 1)[0]
        and not path.name.endswith("_stack.py")
    ]
    assert misnamed == []
