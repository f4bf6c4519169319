#!/usr/bin/env bash
# Seeds every fuzz target's corpus with the golden files (format/golden/v1.0). Every target gets
# every file: a file of another kind still exercises the header and kind checks, and mutating
# its kind field (the targets also retry with fixed checksums) reaches the section readers with
# foreign sections. Corpus directories are git-ignored. Run from anywhere.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
golden="$here/../format/golden/v1.0"
for target in segment model class_table deletion_bitmap manifest; do
    mkdir -p "$here/corpus/$target"
    cp "$golden"/* "$here/corpus/$target/"
done
echo "seeded $(ls "$golden" | wc -l) golden files into $here/corpus/{segment,model,class_table,deletion_bitmap,manifest}"
