"""The hand-written stubs match the built module (mypy's stubtest)."""

from __future__ import annotations

import subprocess
import sys


def test_stubtest_native_module():
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "codedb._codedb"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_type_checks():
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "-p", "codedb"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
