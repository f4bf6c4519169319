"""Runs the calling tool inside its own virtualenv with the packages it needs.

Each tool calls `ensure(["faiss-cpu", "numpy"])` first: when the packages are missing from the
current interpreter, a venv is created at $CODEDB_TOOLS_VENV (default /tmp/codedb-tools-venv),
the packages are installed from PyPI with pip, and the tool is re-executed inside it.
"""
import importlib.util
import os
import subprocess
import sys

IMPORT_NAMES = {"faiss-cpu": "faiss", "scikit-learn": "sklearn", "scikit-image": "skimage", "pillow": "PIL"}


def ensure(packages):
    missing = [p for p in packages if importlib.util.find_spec(IMPORT_NAMES.get(p, p)) is None]
    if not missing:
        return
    if os.environ.get("CODEDB_TOOLS_IN_VENV") == "1":
        sys.exit(f"packages still missing inside the venv: {missing}")
    venv = os.environ.get("CODEDB_TOOLS_VENV", "/tmp/codedb-tools-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print(f"creating venv {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", *packages], check=True)
    env = dict(os.environ, CODEDB_TOOLS_IN_VENV="1")
    os.execve(py, [py, *sys.argv], env)
