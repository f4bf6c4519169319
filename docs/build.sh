#!/usr/bin/env bash
# Builds the book — docs/ with the Markdown it links (README.md, FORMAT.md, BENCHMARKS.md,
# python/README.md, …) — into target/book/site with MkDocs, warnings as errors: a broken link,
# anchor or nav entry fails. MkDocs comes from PyPI into its own venv (target/book-venv), which
# takes seconds. The examples themselves are run by the tests (docs/index.md, "About the
# examples"), not here.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/book-venv
if [[ ! -x "$venv/bin/mkdocs" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "mkdocs==1.6.1"
fi

# Stage every Markdown file of the repository (tracked or new, not ignored) and docs/ whole, at
# their repository paths, so relative links resolve exactly as on GitHub.
src=target/book/src
rm -rf "$src"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard -- '*.md' 'docs/**' |
  while IFS= read -r -d '' f; do
    [[ -f "$f" ]] || continue
    mkdir -p "$src/$(dirname "$f")"
    cp "$f" "$src/$f"
  done

"$venv/bin/mkdocs" build --strict --clean -f docs/mkdocs.yml
echo "book: target/book/site/index.html"
