#!/usr/bin/env bash
# Builds the codedb-engine wheel into target/wheels/: the native module `codedb._codedb`
# (maturin, one abi3 wheel for CPython >= 3.10, stripped) and the `codedb` command-line tool,
# which the wheel carries in codedb_engine-<version>.data/scripts/ so that pip installs it
# into the environment's bin/ beside `python` (the way maturin ships a binary crate).
#
#   python/tools/build_wheel.sh                 # builds the CLI with cargo, then the wheel
#   CODEDB_CLI_BIN=target/release/codedb python/tools/build_wheel.sh   # an already built CLI
#   MATURIN=path/to/maturin python/tools/build_wheel.sh                # default: `maturin`
#
# Old codedb-engine wheels in target/wheels/ are removed first, so the directory holds exactly
# the one just built. The CLI is staged in python/codedb._codedb.data/ (the data directory
# maturin picks up for the module `codedb._codedb`) only while maturin runs, so a later
# `pip install ./python` never ships a stale binary: a source build has no CLI
# (`cargo install --path cli` gives it).
set -euo pipefail
cd "$(dirname "$0")/../.."

maturin="${MATURIN:-maturin}"
cli="${CODEDB_CLI_BIN:-}"
if [[ -z "$cli" ]]; then
  echo "== cargo build --release -p codedb-cli"
  cargo build --release -p codedb-cli
  cli=target/release/codedb
fi
if [[ ! -x "$cli" ]]; then
  echo "build_wheel.sh: the CLI binary $cli is missing or not executable" >&2
  exit 1
fi

stage=python/codedb._codedb.data
rm -rf "$stage"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/scripts"
# Without its debug information (the release profile keeps line tables for profiling): the
# wheel stays small, and pip installs it in seconds.
strip --strip-debug -o "$stage/scripts/codedb" "$cli"

rm -f target/wheels/codedb_engine-*.whl
echo "== maturin build --release (python/Cargo.toml)"
"$maturin" build --release -m python/Cargo.toml --out target/wheels
ls -l target/wheels/codedb_engine-*.whl
