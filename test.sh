#!/usr/bin/env bash
# Every test of the project, one command: the Rust workspace (`cargo test --release`, which is
# also the Rust-only part on its own), then the Python package — its wheel built
# (python/tools/build_wheel.sh: the native module and the `codedb` CLI), installed into a
# fresh venv the way a user installs it (`pip install codedb_engine-….whl`), and its pytest
# suite run against that install.
# `./test.sh --python` runs only the Python part. Needs the Rust toolchain (>= 1.95), gcc,
# binutils (strip), Python >= 3.10 with venv and pip, and PyPI (maturin, numpy, pytest, mypy,
# faiss-cpu, ray).
set -euo pipefail
cd "$(dirname "$0")"

if [[ "${1:-}" != "--python" ]]; then
  echo "== Rust: cargo test --release"
  cargo test --release
fi

echo "== Python: wheel (maturin build), fresh venv, pip install the wheel, pytest"
# The CLI binary the wheel carries and the Python tests compare with: built by
# `cargo test --release` (a no-op after it; the same command, so the same features and no
# rebuild).
cargo test --release --no-run
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
# maturin lives in a venv of its own, kept between runs.
tools=target/py-tools
[[ -x "$tools/bin/python" ]] || python3 -m venv "$tools"
"$tools/bin/python" -m pip install --quiet --upgrade pip "maturin>=1.9,<2"
MATURIN="$tools/bin/maturin" CODEDB_CLI_BIN=target/release/codedb python/tools/build_wheel.sh
wheels=(target/wheels/codedb_engine-*.whl)
if [[ ${#wheels[@]} -ne 1 ]]; then
  echo "expected one codedb-engine wheel in target/wheels, found: ${wheels[*]}" >&2
  exit 1
fi

# A fresh venv each run: the package comes from the wheel only (with its `test` extra: pytest,
# mypy, faiss-cpu and Ray, for codedb.distributed's actor tests, which must then run, not skip).
venv=target/py-venv
python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "${wheels[0]}[test]"
export CODEDB_REQUIRE_RAY=1
# The Python tests call the CLI the wheel installed (`codedb` on the venv's PATH).
export PATH="$PWD/$venv/bin:$PATH"
export CODEDB_BIN="$PWD/$venv/bin/codedb"
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
