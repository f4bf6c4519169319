#!/usr/bin/env bash
# Every test of the project, one command: the Rust workspace (`cargo test --release`, which is
# also the Rust-only part on its own), then the Python package — built into a venv with pip the
# way a user installs it (`pip install ./python`) — and its pytest suite.
# `./test.sh --python` runs only the Python part. Needs the Rust toolchain, gcc, Python >= 3.10
# with venv and pip, and PyPI (maturin, numpy, pytest, mypy, faiss-cpu, ray).
set -euo pipefail
cd "$(dirname "$0")"

if [[ "${1:-}" != "--python" ]]; then
  echo "== Rust: cargo test --release"
  cargo test --release
fi

echo "== Python: venv, pip install ./python, pytest"
# The CLI binary the Python tests compare with: built by `cargo test --release` (a no-op after
# it; the same command, so the same features and no rebuild).
cargo test --release --no-run
venv=target/py-venv
python3 -m venv "$venv"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet maturin numpy pytest mypy faiss-cpu
# Ray for codedb.distributed's actor tests (python/tests/test_distributed_ray.py), which must
# then run, not skip.
"$venv/bin/python" -m pip install --quiet "ray>=2.9"
export CODEDB_REQUIRE_RAY=1
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps ./python
# From the repository root, so `import codedb` is the installed package (`python -m` puts the
# working directory first on sys.path, and python/codedb has no native module in a checkout).
set +e
"$venv/bin/python" -m pytest -q python/tests
status=$?
set -e
# pytest's exit 5 means no test was collected: a broken suite, not a pass.
if [[ $status -eq 5 ]]; then
  echo "pytest collected no tests (exit 5): failing" >&2
  exit 1
fi
exit $status
