#!/usr/bin/env python3
"""Static throughput of the scan kernels' inner loops, by llvm-mca, for CPUs this machine is not.

Compiles the engine library to assembly as a release build does (plus one codegen unit, so every
kernel sits in one file), finds each kernel's monomorphised functions by name, takes the loop of
each that hold instructions of the kernel's kind (the block loops: `vpshufb` for the 4-bit
fast-scan — one loop per number of sub-quantisers it is specialised for — `vpshufb`/`popcnt`
for Hamming), and runs `llvm-mca -mcpu=CPU` on each loop body. Prints, per loop, the cycles per iteration llvm-mca predicts, the µops, and the most
loaded pipes — the figures BENCHMARKS.md quotes for the AVX2 kernels on Zen 3.

    apt-get install llvm            # llvm-mca (any version that knows the CPU)
    python3 tools/mca.py                                   # AVX2 fast-scan and Hamming, znver3
    python3 tools/mca.py --mcpu znver4 --kernel fastscan::x86::fixed_avx512
    python3 tools/mca.py --list                            # the kernel functions found

A loop is what LLVM laid out between a label and the backward jump to it, less the basic blocks
that call a function (the rare re-scoring or offering path); any other cold path LLVM placed
inside it is counted as if it ran every iteration, so read the printed loop (--show) before
trusting a figure. The assembly goes to target/mca (its own target directory: the release
build's artefacts are not touched).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Kernel (a substring of the mangled name, `::` as in the source path) → the instructions that
# mark its block loop.
KERNELS = {
    "fastscan::x86::scan_avx2": ("vpshufb",),
    "hamming::x86::scan_avx2": ("vpshufb", "popcnt"),
}


def build_asm(mca_target: str) -> str:
    cmd = ["cargo", "rustc", "--release", "--lib", "--target-dir", mca_target, "--",
           "--emit", "asm", "-C", "codegen-units=1"]
    print("#", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)
    files = sorted(glob.glob(os.path.join(mca_target, "release", "deps", "codedb-*.s")),
                   key=os.path.getmtime)
    if not files:
        sys.exit(f"no codedb-*.s under {mca_target}/release/deps")
    return files[-1]


def functions(asm: str) -> dict[str, list[str]]:
    """Every function of the file: mangled name → its lines (label to `.size`)."""
    out: dict[str, list[str]] = {}
    name = None
    body: list[str] = []
    with open(asm) as f:
        for line in f:
            m = re.match(r"^(_ZN[\w$.]+|_R[\w$.]+):", line)
            if m:
                name, body = m.group(1), []
                continue
            if name is None:
                continue
            if line.lstrip().startswith(".size") and name in line:
                out[name] = body
                name = None
                continue
            body.append(line.rstrip("\n"))
    return out


def path_of(mangled: str) -> str:
    """The legacy mangling's path segments joined by `::` (enough to match a kernel's name)."""
    segs, i = [], 0
    s = mangled[3:] if mangled.startswith("_ZN") else mangled
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        segs.append(s[j:j + n])
        i = j + n
    return "::".join(segs)


def loops(body: list[str]) -> list[list[str]]:
    """The instruction lines of every loop: from a label to a later jump back to it."""
    where: dict[str, int] = {}
    found = []
    for i, line in enumerate(body):
        m = re.match(r"^(\.LBB\w+):", line)
        if m:
            where[m.group(1)] = i
            continue
        m = re.match(r"^\s+j\w+\s+(\.LBB\w+)", line)
        if m and m.group(1) in where:
            found.append(hot(body[where[m.group(1)] + 1:i + 1]))
    return found


def hot(lines: list[str]) -> list[str]:
    """The instructions of a loop body without its cold blocks: a basic block (from a label or
    a jump to the next) that calls a function is the rare path (the fast-scan's re-scoring of
    a block with candidates, the Hamming scan's offer of a row under the bound) and is left
    out, as it does not run on most iterations."""
    blocks: list[list[str]] = [[]]
    for ln in lines:
        if re.match(r"^\.?\w+:", ln):
            blocks.append([])
            continue
        if not ln.startswith("\t") or ln.lstrip().startswith((".", "#")):
            continue
        blocks[-1].append(ln)
        if re.match(r"^\s+j\w+\s", ln):
            blocks.append([])
    return [ln for b in blocks if not any("call" in x for x in b) for ln in b]


def mca(lines: list[str], mcpu: str, mca_bin: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        r = subprocess.run([mca_bin, f"-mcpu={mcpu}", "-iterations=200", path],
                           capture_output=True, text=True)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        return f"llvm-mca failed: {r.stderr.strip()}"
    return r.stdout


def summary(report: str) -> str:
    it = re.search(r"Iterations:\s+(\d+)", report)
    cyc = re.search(r"Total Cycles:\s+(\d+)", report)
    uops = re.search(r"Total uOps:\s+(\d+)", report)
    ipc = re.search(r"uOps Per Cycle:\s+([\d.]+)", report)
    if not (it and cyc and uops):
        return report.strip().splitlines()[0] if report.strip() else "no report"
    n = int(it.group(1))
    # The resource pressure per iteration: header line of names, then one line of numbers.
    pressure = ""
    lines = report.splitlines()
    legend = dict(re.findall(r"^\[([\d.]+)\]\s+-\s+(\S+)", report, re.M))
    for k, line in enumerate(lines):
        if line.startswith("Resource pressure per iteration:"):
            names = [legend.get(i, i) for i in re.findall(r"\[([\d.]+)\]", lines[k + 1])]
            vals = lines[k + 2].split()
            pairs = sorted(((float(v), nm) for nm, v in zip(names, vals) if v != "-"),
                           reverse=True)[:4]
            pressure = ", ".join(f"{lab}: {v:.1f}" for v, lab in pairs)
            break
    return (f"{int(cyc.group(1)) / n:.1f} cycles per iteration, "
            f"{int(uops.group(1)) / n:.0f} µops ({ipc.group(1) if ipc else '?'} per cycle); "
            f"busiest resources per iteration: {pressure}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mcpu", default="znver3", help="the CPU llvm-mca models (default znver3)")
    ap.add_argument("--kernel", action="append",
                    help="a kernel function's path substring (repeatable; default: "
                         + ", ".join(KERNELS) + ")")
    ap.add_argument("--asm", help="an existing .s file instead of compiling")
    ap.add_argument("--list", action="store_true", help="list the scan kernels found and stop")
    ap.add_argument("--show", action="store_true", help="print each loop analysed")
    ap.add_argument("--llvm-mca", default=shutil.which("llvm-mca") or "llvm-mca",
                    help="the llvm-mca binary")
    a = ap.parse_args()
    asm = a.asm or build_asm(os.path.join(ROOT, "target", "mca"))
    funcs = {path_of(m): body for m, body in functions(asm).items()}
    if a.list:
        for p in sorted(funcs):
            if "::scan::" in p and ("x86" in p or "neon" in p):
                print(p)
        return
    for kernel in a.kernel or list(KERNELS):
        marks = KERNELS.get(kernel, ("vpshufb", "popcnt", "vpsadbw", "vfmadd"))
        hits = sorted(p for p in funcs if kernel in p)
        if not hits:
            print(f"{kernel}: not found in {asm} (try --list)")
            continue
        for p in hits:
            ls = loops(funcs[p])
            if not ls:
                continue
            # The block loops: those with at least 8 of the kernel's instructions, each once
            # (an outer loop that contains an inner one is skipped when the inner one is
            # there too), fewest instructions of the kind first.
            picked = [lp for lp in ls if sum(any(m in ln for m in marks) for ln in lp) >= 8]
            picked = [lp for lp in picked
                      if not any(o is not lp and len(o) < len(lp) and o[-1] in lp for o in picked)]
            if not picked:
                continue
            print(p)
            for lp in sorted(picked, key=lambda lp: sum(marks[0] in ln for ln in lp)):
                counts = {m: sum(m in ln for ln in lp) for m in marks}
                print(f"  loop of {len(lp)} instructions ("
                      + ", ".join(f"{c} {m}" for m, c in counts.items()) + "): "
                      + summary(mca(lp, a.mcpu, a.llvm_mca)))
                if a.show:
                    print("\n".join("    " + ln.strip() for ln in lp))


if __name__ == "__main__":
    main()
