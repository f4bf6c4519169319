"""The installed distribution is `codedb-engine` (the name `codedb` on PyPI is another project's),
and its metadata, `codedb.__version__`, the CLI it installs (`codedb --version`) and the Cargo
packages all carry one version."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

import codedb
from conftest import REPO


def cargo_version(manifest: pathlib.Path) -> str:
    """`version` of the `[package]` table of a Cargo.toml."""
    text = manifest.read_text()
    package = text.split("[package]", 1)[1].split("\n[", 1)[0]
    m = re.search(r'^version\s*=\s*"([^"]+)"', package, re.M)
    assert m, f"{manifest}: no package version"
    return m.group(1)


def installed_cli() -> pathlib.Path:
    """The `codedb` script the distribution installed (the wheel's .data/scripts)."""
    files = importlib.metadata.files("codedb-engine") or []
    scripts = [f for f in files if f.name == "codedb" and "bin" in f.parts]
    assert scripts, "the codedb-engine distribution installed no `codedb` command"
    return pathlib.Path(os.path.normpath(scripts[0].locate()))


def test_distribution_and_module_and_cargo_share_one_version():
    dist = importlib.metadata.version("codedb-engine")
    cargo = {m: cargo_version(REPO / m) for m in ("Cargo.toml", "cli/Cargo.toml", "python/Cargo.toml")}
    assert set(cargo.values()) == {dist}, (dist, cargo)
    assert codedb.__version__ == dist
    assert codedb._codedb.__version__ == dist


def test_distribution_name_and_import_name():
    dist = importlib.metadata.distribution("codedb-engine")
    assert dist.metadata["Name"] == "codedb-engine"
    top = (dist.read_text("top_level.txt") or "codedb").split()
    assert "codedb" in top
    assert pathlib.Path(codedb.__file__).parent.name == "codedb"


def test_installed_cli_prints_the_package_version():
    cli = installed_cli()
    # Installed beside this interpreter, so `codedb` is on the venv's PATH.
    assert cli.parent == pathlib.Path(os.path.normpath(sys.executable)).parent, cli
    assert os.access(cli, os.X_OK), cli
    out = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"codedb {codedb.__version__}"


def test_installed_cli_runs_a_command():
    cli = installed_cli()
    out = subprocess.run([str(cli), "inspect", "/nonexistent/codedb-index"], capture_output=True, text=True)
    assert out.returncode == 1, out
    assert "/nonexistent/codedb-index" in out.stderr
