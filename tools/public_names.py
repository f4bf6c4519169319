#!/usr/bin/env python3
"""Counts the engine's public names: what a user of the `codedb` crate can name.

Usage: python3 tools/public_names.py [--list] [REPO]

A public name is one item a path from the crate root reaches: each name of a `pub use` list
(its alias when renamed), each item a `pub use MODULE::*` glob brings in (the module's own
`pub use` names and `pub` items, followed recursively), and, for a public module below a
facade (`format::section_kind`, a `#[doc(hidden)] pub mod`), the module itself and its `pub`
items. Counted per place: the crate root (`src/lib.rs`) and each facade (`admin`, `format`,
`kernels`, `model`, `research`; the total is theirs), and apart the hidden `internals`, which
is not an API. The facades themselves and doctest-only items are not counted. Plain text
over the sources (no rustc): a `pub` item means one that starts a line, outside `#[cfg(test)]`
modules.
"""

import re
import sys
from pathlib import Path

ITEM = re.compile(
    r"^pub (?:unsafe )?(?:fn|struct|enum|const|type|trait|static|mod|union)\s+([A-Za-z_][A-Za-z0-9_]*)"
)


def code_of(text):
    """The code of a file: `//` comments dropped, `#[cfg(test)]` modules cut off."""
    text = text.split("#[cfg(test)]")[0]
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def module_file(base_dir, name):
    """The file of module `name` declared in a file whose modules live in `base_dir`."""
    for cand in (base_dir / f"{name}.rs", base_dir / name / "mod.rs"):
        if cand.exists():
            return cand
    return None


def children_dir(path):
    """Where the submodules of the module in `path` live."""
    if path.name in ("mod.rs", "lib.rs"):
        return path.parent
    return path.parent / path.stem


def use_lists(code):
    """The `pub use` statements of a file, each as (path prefix, [names])."""
    out = []
    for m in re.finditer(r"^pub use ([^;]*);", code, re.M | re.S):
        body = " ".join(m.group(1).split())
        if "{" in body:
            prefix, _, inner = body.partition("{")
            inner = inner.rsplit("}", 1)[0]
            names = [n.strip() for n in inner.split(",") if n.strip()]
        else:
            prefix, _, last = body.rpartition("::")
            names = [last.strip()]
            prefix += "::"
        out.append((prefix.strip(), names))
    return out


def names_of_module(path, seen):
    """Every name a `pub use PATH::*` of the module in `path` brings in."""
    if path in seen or path is None:
        return []
    seen.add(path)
    code = code_of(path.read_text())
    names = []
    for line in code.splitlines():
        m = ITEM.match(line)
        if m and not line.startswith("pub mod"):
            names.append(m.group(1))
    names += names_in_uses(path, code, seen)
    return names


def names_in_uses(path, code, seen):
    names = []
    for prefix, items in use_lists(code):
        for item in items:
            if item == "*":
                mod = prefix.rstrip(":").split("::")[-1]
                names += names_of_module(module_file(children_dir(path), mod), seen)
            elif item != "self":
                names.append(item.split(" as ")[-1].strip())
    return names


def count(path, facade):
    """(names, listing) of one facade file (`facade`: False for the crate root)."""
    code = code_of(path.read_text())
    names = names_in_uses(path, code, set())
    for line in code.splitlines():
        m = ITEM.match(line)
        if not m:
            continue
        name = m.group(1)
        if line.startswith("pub mod"):
            if not facade:
                continue  # a facade of the crate root, counted on its own
            names.append(name)
            sub = module_file(children_dir(path), name)
            if sub is not None:
                names += names_of_module(sub, set())
        elif name not in ("ReadmeDoctests",):
            names.append(name)
    return names


def main():
    args = [a for a in sys.argv[1:] if a != "--list"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    src = root / "src"
    places = [
        ("crate root", src / "lib.rs", False),
        ("admin", src / "admin.rs", True),
        ("format", src / "format" / "mod.rs", True),
        ("kernels", src / "kernels.rs", True),
        ("model", src / "model" / "mod.rs", True),
        ("research", src / "research.rs", True),
    ]
    hidden = [("internals", src / "internals.rs", True)]
    total = 0
    for label, path, facade in places + hidden:
        if not path.exists():
            continue
        names = count(path, facade)
        if (label, path, facade) in places:
            total += len(names)
        else:
            print(f"{'total':10} {total:4}")
        print(f"{label:10} {len(names):4}" + ("  (hidden: not counted)" if label == "internals" else ""))
        if "--list" in sys.argv:
            for n in sorted(names):
                print(f"    {n}")
    if not hidden[0][1].exists():
        print(f"{'total':10} {total:4}")


if __name__ == "__main__":
    main()
