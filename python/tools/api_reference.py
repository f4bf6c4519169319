"""Writes docs/reference/python.md, the Python API reference, from the installed package.

Every object of ``codedb.__all__`` and the public members of its classes, each with its
signature (``inspect.signature``, which reads the native module's ``__text_signature__``) and
its docstring; numpydoc sections (Parameters, Returns, Raises, Examples, ...) become markdown.
The page is generated, never edited: ``python/tests/test_api_reference.py`` fails when the
committed page differs from what the installed package generates, or when a public name has
no docstring.

Usage (with the package installed, e.g. from the wheel in ./test.sh's venv)::

    python python/tools/api_reference.py            # rewrite docs/reference/python.md
    python python/tools/api_reference.py --check    # exit 1 if the page is out of date
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import pathlib
import re
import sys
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "reference" / "python.md"
REGENERATE = "python python/tools/api_reference.py"

# numpydoc sections whose entries are `name : type` lines with an indented description.
ENTRY_SECTIONS = {
    "Parameters",
    "Other Parameters",
    "Returns",
    "Yields",
    "Raises",
    "Warns",
    "Warnings",
    "Attributes",
    "See Also",
}
# Dunder methods that give a class a Python protocol: listed in one line, not as members.
PROTOCOLS = {
    "__len__": "`len()`",
    "__enter__": "the `with` statement",
    "__iter__": "iteration",
    "__contains__": "`in`",
}


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def _signature(obj: Any, drop_self: bool) -> str:
    """`(a, b=1)`, or "" when Python cannot tell (a native callable without a signature)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = list(sig.parameters.values())
    if drop_self and params and params[0].name in ("self", "cls", "$self"):
        params = params[1:]
    # A native default Python cannot spell (a list built in Rust) reads as `Ellipsis`.
    return str(sig.replace(parameters=params)).replace("=Ellipsis", "=...")


def _call(name: str, sig: str) -> str:
    """`name(sig)` on one line, or one parameter a line when that is longer than 88."""
    line = f"{name}{sig}"
    if len(line) <= 88 or not sig.startswith("(") or sig == "()":
        return line
    inner, _, ret = sig[1:].rpartition(")")
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    body = "".join(f"    {p},\n" for p in parts)
    return f"{name}(\n{body}){ret}"


def _doc(obj: Any) -> str | None:
    """The object's own docstring, cleaned; None when it has none (or only an inherited one)."""
    doc = obj.__doc__ if isinstance(obj, type) else inspect.getdoc(obj)
    if doc is None:
        return None
    doc = inspect.cleandoc(doc)
    return doc if doc.strip() else None


def _markdown(doc: str) -> str:
    """A numpydoc (or plain) docstring as markdown: section underlines become headings, entry
    sections become lists, doctest blocks become fenced code."""
    lines = doc.splitlines()
    out: list[str] = []
    section = None
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and re.fullmatch(r"-{3,}", nxt.strip()) and not line.startswith(" "):
            section = line.strip()
            out += ["", f"**{section}**", ""]
            i += 2
            continue
        if section in ENTRY_SECTIONS and line.strip() and not line.startswith(" "):
            head = line.strip()
            desc: list[str] = []
            i += 1
            while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
                nxt_line = lines[i + 1] if i + 1 < len(lines) else ""
                if not lines[i].strip() and not nxt_line.startswith(" "):
                    break
                desc.append(lines[i].strip())
                i += 1
            name, sep, typ = head.partition(" : ")
            if sep:
                entry = f"- `{name.strip()}` ({typ.strip()})"
            elif section in ("Returns", "Yields", "Raises", "Warns", "See Also"):
                entry = f"- `{head}`"
            else:
                entry = f"- `{head}`"
            text = " ".join(d for d in desc if d)
            out.append(f"{entry}: {text}" if text else entry)
            continue
        if line.lstrip().startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            indent = min(len(b) - len(b.lstrip()) for b in block)
            out += ["```python", *(b[indent:] for b in block), "```"]
            continue
        out.append(line)
        i += 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text


def _members(cls: type) -> list[tuple[str, str, Any]]:
    """(kind, name, object) of the class's own public members: static methods first, then
    methods (each in definition order), then properties by name (a native class's getters
    come in an order that changes from one process to the next)."""
    static, methods, props = [], [], []
    for name, raw in vars(cls).items():
        if not _is_public(name):
            continue
        if isinstance(raw, (staticmethod, classmethod)):
            static.append(("staticmethod", name, getattr(cls, name)))
        elif inspect.isdatadescriptor(raw) or isinstance(raw, property):
            props.append(("property", name, raw))
        elif callable(raw):
            methods.append(("method", name, raw))
        elif inspect.isbuiltin(getattr(cls, name, None)):
            static.append(("staticmethod", name, getattr(cls, name)))
    return static + methods + sorted(props, key=lambda m: m[1])


def _public_objects(module: Any) -> list[tuple[str, Any]]:
    return [(name, getattr(module, name)) for name in module.__all__]


def missing_docstrings(module: Any) -> list[str]:
    """The public names (objects of `__all__` and their public members) without a docstring."""
    missing = []
    for name, obj in _public_objects(module):
        if _doc(obj) is None:
            missing.append(f"{module.__name__}.{name}")
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for _, member, mobj in _members(obj):
                if _doc(mobj) is None:
                    missing.append(f"{module.__name__}.{name}.{member}")
    return missing


def _bases(cls: type) -> str:
    bases = [b for b in cls.__bases__ if b is not object]
    if not bases:
        return ""
    return "(" + ", ".join(b.__name__ for b in bases) + ")"


def render(module: Any) -> str:
    """The page for `module` (the `codedb` package): functions, classes, exceptions."""
    mod = module.__name__
    objects = _public_objects(module)
    functions = [(n, o) for n, o in objects if not isinstance(o, type)]
    classes = [(n, o) for n, o in objects if isinstance(o, type) and not issubclass(o, BaseException)]
    errors = [(n, o) for n, o in objects if isinstance(o, type) and issubclass(o, BaseException)]

    out = [
        "# Python API reference",
        "",
        f"The `{mod}` package (distribution `codedb-engine`): every name of `{mod}.__all__`,",
        "generated from the docstrings and signatures of the installed package. Do not edit;",
        f"regenerate with `{REGENERATE}`",
        "(`python/tests/test_api_reference.py` fails when this page differs from the package).",
        "",
    ]
    toc = []
    for title, group in (("Functions", functions), ("Classes", classes), ("Exceptions", errors)):
        if group:
            toc.append(f"- {title}: " + ", ".join(f"[`{n}`](#{_anchor(mod, n)})" for n, _ in group))
    out += toc + [""]

    for name, obj in functions:
        out += [f"## `{mod}.{name}`", "", "```python", _call(f"{mod}.{name}", _signature(obj, False))]
        out += ["```", ""]
        out += [_markdown(_doc(obj) or ""), ""]

    for name, cls in classes:
        out += [f"## `{mod}.{name}`", "", _markdown(_doc(cls) or ""), ""]
        protocols = [p for d, p in PROTOCOLS.items() if d in vars(cls)]
        if protocols:
            out += [f"Supports {', '.join(protocols)}.", ""]
        for kind, member, mobj in _members(cls):
            out += [f"### `{name}.{member}`", ""]
            if kind == "property":
                out += [f"*property* `{name}.{member}`", ""]
            else:
                deco = ["@staticmethod"] if kind == "staticmethod" else []
                sig = _signature(mobj, drop_self=kind == "method")
                out += ["```python", *deco, _call(f"{name}.{member}", sig), "```", ""]
            out += [_markdown(_doc(mobj) or ""), ""]

    if errors:
        out += ["## Exceptions", ""]
        for name, cls in errors:
            out += [f"### `{mod}.{name}`", "", f"`class {name}{_bases(cls)}`", ""]
            out += [_markdown(_doc(cls) or ""), ""]

    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"
    return text


def _anchor(mod: str, name: str) -> str:
    """GitHub's anchor of the heading "`mod.name`"."""
    return re.sub(r"[^a-z0-9_ -]", "", f"{mod}.{name}".lower()).replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    parser.add_argument("--out", type=pathlib.Path, default=PAGE, help="the page to write")
    args = parser.parse_args(argv)

    import codedb

    missing = missing_docstrings(codedb)
    if missing:
        print("public names without a docstring: " + ", ".join(missing), file=sys.stderr)
        return 1
    text = render(codedb)
    if args.check:
        old = args.out.read_text() if args.out.exists() else ""
        if old != text:
            diff = difflib.unified_diff(
                old.splitlines(), text.splitlines(), str(args.out), "generated", lineterm=""
            )
            print("\n".join(diff), file=sys.stderr)
            print(f"{args.out} is out of date: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
