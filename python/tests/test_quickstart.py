"""The README quick starts (python/README.md and the root README's Python section) run as
doctests, so the documented session is the one that works."""

from __future__ import annotations

import doctest

from conftest import REPO


def _run(path):
    result = doctest.testfile(
        str(path), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 10, f"{path}: only {result.attempted} examples found"
    assert result.failed == 0, f"{path}: {result.failed} of {result.attempted} examples failed"


def test_python_readme_quick_start():
    _run(REPO / "python" / "README.md")


def test_root_readme_python_section():
    _run(REPO / "README.md")
