"""`codedb.spec_from_faiss` answers every row of the book's "Coming from FAISS" table exactly as
the CLI's `codedb spec --from-faiss` does: the pipeline shown, or a refusal naming the part."""

from __future__ import annotations

import pathlib

import pytest

import codedb

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "faiss.md"


def table_rows() -> list[tuple[str, str | None, str | None]]:
    """(FAISS string, spec or None, refused part or None) per row of the factory table."""
    text = PAGE.read_text()
    start = text.index("| FAISS factory string | codedb pipeline |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip("| ") for c in line.split(" | ")]
        faiss = cells[0].strip("`")
        if cells[1].startswith("refused: "):
            rows.append((faiss, None, cells[1][len("refused: ") :].strip("`")))
        else:
            rows.append((faiss, cells[1].strip("`"), None))
    return rows


ROWS = table_rows()


def test_the_page_has_the_table() -> None:
    assert len(ROWS) >= 30


@pytest.mark.parametrize(("faiss", "spec", "part"), ROWS, ids=[r[0] for r in ROWS])
def test_every_row_of_the_faiss_page_translates_as_shown(
    faiss: str, spec: str | None, part: str | None
) -> None:
    if spec is not None:
        got, notes = codedb.spec_from_faiss(faiss)
        assert got == spec
        assert all(isinstance(n, str) for n in notes)
    else:
        with pytest.raises(codedb.InvalidArgument) as e:
            codedb.spec_from_faiss(faiss)
        assert repr(part) in str(e.value) or f'"{part}"' in str(e.value)


def test_plain_lsh_takes_its_bits_from_d() -> None:
    with pytest.raises(codedb.InvalidArgument):
        codedb.spec_from_faiss("LSH")
    spec, _ = codedb.spec_from_faiss("LSH", d=64)
    assert spec.startswith("lsh:64")
    with pytest.raises(codedb.InvalidArgument, match="d"):
        codedb.spec_from_faiss("LSH", d=-1)
