"""Every public function and method of the native module has a numpydoc docstring that lists
each parameter (with its default) and its errors, and the docstrings' examples run as doctests.

The examples share these names (what `help()` readers should picture): ``np``, ``codedb``,
``x`` and ``y`` (600 descriptors of 32 dimensions in three classes of 200, and their labels),
``model`` (``codedb.train(x, "pca-itq:16", seed=3)``) and ``path`` (a fresh directory path)."""

from __future__ import annotations

import doctest
import inspect
import re

import numpy as np
import pytest

import codedb

OBJECTS = {
    "train": codedb.train,
    "classify_sums": codedb.classify_sums,
    "ivf_probe_decision": codedb.ivf_probe_decision,
    "ivf_filter_scans_passing": codedb.ivf_filter_scans_passing,
    "Model": codedb.Model,
    "Index": codedb.Index,
    "Snapshot": codedb.Snapshot,
}


def _public():
    """(qualified name, object, is a routine) of every public name."""
    out = []
    for name, obj in OBJECTS.items():
        out.append((name, obj, not inspect.isclass(obj)))
        if inspect.isclass(obj):
            for attr, raw in vars(obj).items():
                if attr.startswith("_"):
                    continue
                member = getattr(obj, attr)
                out.append((f"{name}.{attr}", member, callable(member) and not inspect.isdatadescriptor(raw)))
    return out


PUBLIC = _public()


def _section(doc: str, title: str) -> str | None:
    m = re.search(rf"^{title}\n-{{{len(title)}}}\n(.*?)(?=^\w[\w ]*\n-{{3,}}\n|\Z)", doc, re.M | re.S)
    return m.group(1) if m else None


@pytest.mark.parametrize("name,obj,routine", PUBLIC, ids=[p[0] for p in PUBLIC])
def test_public_name_is_documented(name, obj, routine):
    doc = inspect.getdoc(obj)
    assert doc and doc.strip(), f"{name} has no docstring"
    if not routine:
        return
    params = [p for p in inspect.signature(obj).parameters.values() if p.name not in ("self", "cls")]
    documented = {}
    body = _section(doc, "Parameters")
    if params:
        assert body is not None, f"{name}: no Parameters section"
        for line in body.splitlines():
            m = re.match(r"^(\w+) : (.*)$", line)
            if m:
                documented[m.group(1)] = m.group(2)
        for p in params:
            assert p.name in documented, f"{name}: parameter {p.name!r} is not documented"
            if p.default is not inspect.Parameter.empty:
                assert "default" in documented[p.name], f"{name}: {p.name}'s default is not documented"
                assert p.default is Ellipsis or repr(p.default).strip("'") in documented[p.name].replace('"', ""), (
                    f"{name}: {p.name} documents {documented[p.name]!r}, the default is {p.default!r}"
                )
        assert set(documented) <= {p.name for p in params}, f"{name}: documents {set(documented)}"
        assert _section(doc, "Raises") is not None, f"{name}: no Raises section"
    assert _section(doc, "Examples") is not None, f"{name}: no Examples section"


def test_train_docstring_names_only_accepted_specs(data):
    x, y = data
    doc = codedb.train.__doc__
    spec_doc = doc[doc.index("spec : str") : doc.index("labels :")]
    specs = re.findall(r'``"([a-z0-9:,x-]+)"``', spec_doc)
    assert len(specs) >= 5 and "opq-pq:16x8" not in specs
    for spec in specs:  # each trains (the 32-D test data takes 16 PCA dimensions, not 64)
        codedb.train(x, spec.replace("pca-itq:64", "pca-itq:16"), labels=y, seed=1)


def test_docstring_examples_run(tmp_path, data, model):
    x, y = data
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    for i, (name, obj, _) in enumerate(PUBLIC):
        globs = {"np": np, "codedb": codedb, "x": x, "y": y, "model": model, "path": str(tmp_path / f"ex{i}")}
        for test in finder.find(obj, name, module=False, globs=globs):
            if test.examples:
                runner.run(test)
                ran += 1
    result = runner.summarize(verbose=False)
    assert ran >= 40, f"only {ran} docstrings had examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed"
