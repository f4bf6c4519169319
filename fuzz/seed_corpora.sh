#!/usr/bin/env bash
# Seeds every fuzz target's corpus with the golden files (format/golden/v1.*). Every target gets
# every file of at most 4 KiB (the parsers' -max_len): a file of another kind still exercises
# the header and kind checks, and mutating its kind field (the targets also retry with fixed
# checksums) reaches the section readers with foreign sections. `block_checks` also gets the
# v1.4 segments (up to 32 KiB, run it with -max_len=32768): their columns span several 4 KiB
# blocks. Corpora kept in git (see README.md) get the seeds beside their minimised inputs;
# commit only what a `-merge=1` minimisation keeps. Run from anywhere.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
golden="$here/../format/golden"
targets=(segment model class_table deletion_bitmap manifest append_log block_checks)
n=0
for f in "$golden"/v1.*/*; do
    size=$(wc -c < "$f")
    for target in "${targets[@]}"; do
        if [ "$size" -le 4096 ] || [ "$target" = block_checks ]; then
            mkdir -p "$here/corpus/$target"
            # Versions share file names (the v1.0 and v1.1 model): prefix the folder.
            cp "$f" "$here/corpus/$target/$(basename "$(dirname "$f")")-$(basename "$f")"
        fi
    done
    n=$((n + 1))
done
echo "seeded $n golden files into $here/corpus/{$(IFS=,; echo "${targets[*]}")}"
