"""docs/reference/python.md is what python/tools/api_reference.py generates from the installed
package, and every public name has a docstring (the page cannot drift from the code)."""

from __future__ import annotations

import importlib.util
import types

import pytest

import codedb
from conftest import REPO

TOOL = REPO / "python" / "tools" / "api_reference.py"


@pytest.fixture(scope="module")
def tool() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("api_reference", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_docstring(tool):
    assert tool.missing_docstrings(codedb) == []


def test_committed_python_reference_is_what_the_package_generates(tool):
    page = REPO / "docs" / "reference" / "python.md"
    assert page.is_file(), f"{page} missing: run `{tool.REGENERATE}`"
    committed = page.read_text()
    generated = tool.render(codedb)
    if committed != generated:
        import difflib

        diff = "\n".join(
            difflib.unified_diff(
                committed.splitlines(), generated.splitlines(), "committed", "generated", lineterm=""
            )
        )
        pytest.fail(f"{page} is out of date; regenerate with `{tool.REGENERATE}`:\n{diff}")


def test_reference_lists_every_public_name_and_member(tool):
    page = tool.render(codedb)
    for name in codedb.__all__:
        assert f"## `codedb.{name}`" in page or f"### `codedb.{name}`" in page, name
    for cls in (codedb.Index, codedb.Snapshot, codedb.Model):
        for kind, member, _ in tool._members(cls):
            assert f"### `{cls.__name__}.{member}`" in page, (cls, member, kind)
    assert "### `Index.search`" in page and "### `Model.code_bits`" in page


def test_undocumented_member_is_reported(tool):
    class Documented:
        """A class."""

        def run(self) -> None:
            """Runs."""

        def bare(self) -> None:
            pass

    fake = types.ModuleType("fake")
    fake.__all__ = ["Documented", "helper"]
    fake.Documented = Documented

    def helper() -> None:
        pass

    fake.helper = helper
    assert tool.missing_docstrings(fake) == ["fake.Documented.bare", "fake.helper"]


def test_numpydoc_sections_become_markdown(tool):
    doc = """Searches the index.

    Parameters
    ----------
    q : array_like, shape (n, d)
        The queries,
        one per row.
    k : int, default 10
        Results per query.

    Returns
    -------
    D, I : numpy.ndarray
        Distances and ids.

    Examples
    --------
    >>> 1 + 1
    2
    """
    md = tool._markdown(__import__("inspect").cleandoc(doc))
    assert "**Parameters**" in md and "----" not in md
    assert "- `q` (array_like, shape (n, d)): The queries, one per row." in md
    assert "- `k` (int, default 10): Results per query." in md
    assert "- `D, I` (numpy.ndarray): Distances and ids." in md
    assert "```python\n>>> 1 + 1\n2\n```" in md
