"""The book's Python examples (docs/*.md: ```python blocks of >>> sessions) run as doctests, so
every session the book shows is one that works. The page on Ray runs with the shared cluster."""

from __future__ import annotations

import doctest

import pytest

from conftest import REPO

PAGES = sorted(p for p in (REPO / "docs").glob("*.md") if "```python" in p.read_text())
RAY_PAGES = [p for p in PAGES if "import ray" in p.read_text()]
PLAIN_PAGES = [p for p in PAGES if p not in RAY_PAGES]


def _run(path):
    result = doctest.testfile(
        str(path), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0, f"{path}: no examples found"
    assert result.failed == 0, f"{path}: {result.failed} of {result.attempted} examples failed"


def test_the_book_has_python_pages():
    names = {p.name for p in PAGES}
    assert {"python.md", "distributed.md"} <= names, names
    assert {p.name for p in RAY_PAGES} == {"distributed.md"}


@pytest.mark.parametrize("page", PLAIN_PAGES, ids=lambda p: p.name)
def test_book_page(page):
    _run(page)


def test_book_ray_page(ray_cluster):
    for page in RAY_PAGES:
        _run(page)
