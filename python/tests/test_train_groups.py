"""codedb.train(groups=..., cca_rho=...) gives the CLI's answers: `codedb train --groups G
--cca-rho RHO` on the same rows writes a model whose projection of every row is the Python
model's, bit for bit (a model file also carries its own random file id), with the same
validation report, and a bad ρ is refused by both with the engine's message."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import codedb


def _sets():
    """Three classes of 12 items in 3 views each (items differ by their own offset, views by
    small noise), the first 18 items' views without a group: rows, labels, groups."""
    rng = np.random.default_rng(11)
    centres = rng.normal(size=(3, 16)) * 2
    x, y, g = [], [], []
    for item in range(36):
        c = item % 3
        own = centres[c] + rng.normal(size=16)
        for _ in range(3):
            x.append(own + 0.1 * rng.normal(size=16))
            y.append(c)
            g.append(-1 if item < 18 else item)
    return np.array(x, np.float32), np.array(y, np.int64), np.array(g, np.int64)


def _cli(codedb_bin, tmp_path, spec, extra):
    x, y, g = _sets()
    for name, a in (("x", x), ("y", y), ("g", g)):
        np.save(tmp_path / f"{name}.npy", a)
    out = tmp_path / "cli.model"
    cmd = [str(codedb_bin), "train", "--data", str(tmp_path / "x.npy"), "--labels",
           str(tmp_path / "y.npy"), "--pipeline", spec, "--out", str(out), "--force",
           "--json", "--seed", "5", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, out


@pytest.mark.parametrize("spec, groups, rho, cli_rho", [
    ("cca:2,float", True, None, []),
    ("cca:2,float", True, "0.01,1", ["--cca-rho", "0.01,1"]),
    ("cca:2,float", True, [0.01, 1.0], ["--cca-rho", "0.01,1"]),
    ("cca:2,float", False, "auto", ["--cca-rho", "auto"]),
    ("cca:2,float", False, 0.5, ["--cca-rho", "0.5"]),
    ("jscl:4,float", True, None, []),
    ("metric:4,float", True, None, []),
])
def test_train_with_groups_equals_cli(tmp_path, codedb_bin, spec, groups, rho, cli_rho):
    x, y, g = _sets()
    m = codedb.train(x, spec, labels=y, groups=g if groups else None, cca_rho=rho, seed=5)
    extra = (["--groups", str(tmp_path / "g.npy")] if groups else []) + cli_rho
    r, out = _cli(codedb_bin, tmp_path, spec, extra)
    assert r.returncode == 0, r.stderr
    cli = codedb.Model.load(out)
    assert cli.code_kind == m.code_kind and cli.d == m.d
    assert cli.encode(x).tobytes() == m.encode(x).tobytes()
    report = json.loads(r.stdout)
    train = m.report["train"]
    assert train["cca_rho_choice"] == report["cca_rho_choice"]
    assert train["sgd_choice"] == report["sgd_choice"]
    if groups:
        step = spec.split(":")[0]
        choice = train["cca_rho_choice"] if step == "cca" else train["sgd_choice"]
        assert choice["validation"] == "instances"
        assert choice["validation_groups"] == 18


def test_bad_cca_rho_and_groups_are_refused_like_the_cli(tmp_path, codedb_bin):
    x, y, g = _sets()
    for bad, needle in (("1,x", "'x': not a number"), ("-1", "'-1': must be a finite number")):
        with pytest.raises(codedb.InvalidArgument, match="cca_rho") as e:
            codedb.train(x, "cca:2,float", labels=y, cca_rho=bad)
        assert needle in str(e.value)
        r, out = _cli(codedb_bin, tmp_path, "cca:2,float", [f"--cca-rho={bad}"])
        assert r.returncode == 2 and needle in r.stderr, r.stderr
        assert not out.exists()
    for bad in (float("nan"), [], [0.1, -2.0], True, {"a": 1}):
        with pytest.raises(codedb.InvalidArgument, match="cca_rho"):
            codedb.train(x, "cca:2,float", labels=y, cca_rho=bad)
    with pytest.raises(codedb.InvalidArgument, match="groups") as e:
        codedb.train(x, "cca:2,float", labels=y, groups=g[1:])
    assert f"{len(g) - 1} group ids" in str(e.value)
    # Groups a fixed ρ leaves unused: a warning, as the CLI's note.
    with pytest.warns(UserWarning, match="groups were not used"):
        codedb.train(x, "cca:2,float", labels=y, groups=g, cca_rho=0.5)
