#!/usr/bin/env python3
"""Compares PyTensor's test files run in mode NUMBA and in mode EMBER.

Usage: compare-pytensor-tests.py RESULTS_DIR [file ...]
RESULTS_DIR holds one folder per mode (NUMBA/, EMBER/) of JUnit XML files, as
scripts/run-pytensor-tests.sh writes them. Prints, per file, the tests that pass
in each mode and how many of NUMBA's passes also pass in EMBER (the coverage
goal), then every NUMBA pass that EMBER does not pass, grouped by cause."""

import collections
import importlib.util
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

_spec = importlib.util.spec_from_file_location(
    "classify", pathlib.Path(__file__).with_name("classify-pytest-failures.py"))
classify = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(classify)


def outcomes(xml_path):
    """{test id: (outcome, message)}; outcome in passed/failed/error/skipped.
    None when the file did not finish (timeout or crash)."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    out = {}
    for case in root.iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        state, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                state = {"failure": "failed"}.get(child.tag, child.tag)
                text = (child.get("message") or "") + "\n" + (child.text or "")
        out[tid] = (state, text)
    return out


def partial_count(log_path):
    """Passes pytest printed before a file was stopped."""
    try:
        log = pathlib.Path(log_path).read_text(errors="replace")
    except OSError:
        return None  # not run
    prog = "".join(m.group(1) for m in re.finditer(r"^([.FEsxX]+)(?:\s*\[\s*\d+%\])?\s*$", log, re.M))
    return prog.count(".")


def main(results, files):
    results = pathlib.Path(results)
    if not files:
        files = sorted({p.stem for p in results.glob("*/*.xml")})
    print("| file | NUMBA passed | EMBER passed | both | EMBER / NUMBA |")
    print("|---|---:|---:|---:|---:|")
    tot = collections.Counter()
    missing = collections.defaultdict(list)
    for f in files:
        name = f.rstrip("/").replace("/", "_")
        runs = {m: outcomes(results / m / f"{name}.xml") for m in ("NUMBA", "EMBER")}
        cells = []
        for m in ("NUMBA", "EMBER"):
            r = runs[m]
            if r is None:
                n = partial_count(results / m / f"{name}.log")
                cells.append("not run" if n is None else f"{n} (stopped)")
            else:
                cells.append(str(sum(s == "passed" for s, _ in r.values())))
        if runs["NUMBA"] is None or runs["EMBER"] is None:
            print(f"| {f} | {cells[0]} | {cells[1]} | — | — |")
            continue
        npass = {t for t, (s, _) in runs["NUMBA"].items() if s == "passed"}
        both = {t for t in npass if runs["EMBER"].get(t, ("absent",))[0] == "passed"}
        for t in sorted(npass - both):
            state, text = runs["EMBER"].get(t, ("absent", ""))
            why = classify.cause(text) if state in ("failed", "error") else state
            missing[why].append(f"{f}: {t}")
        tot.update(numba=len(npass), ember=int(cells[1]), both=len(both))
        share = f"{100 * len(both) / len(npass):.2f} %" if npass else "—"
        print(f"| {f} | {len(npass)} | {cells[1]} | {len(both)} | {share} |")
    if tot["numba"]:
        print(f"| **total** | **{tot['numba']}** | **{tot['ember']}** | **{tot['both']}** | "
              f"**{100 * tot['both'] / tot['numba']:.2f} %** |")
    print("\nPassing in NUMBA, not in EMBER, by cause:")
    for why, tests in sorted(missing.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(tests):5d}  {why}")
        for t in tests[:4]:
            print(f"           {t}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
