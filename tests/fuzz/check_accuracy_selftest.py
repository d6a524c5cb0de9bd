#!/usr/bin/env python3
"""check_accuracy.py must fail when it would check nothing or something is wrong.

Takes a real dump of Exp samples from `ember fuzz --dump-samples`, checks that
it passes, then plants faults in copies of it, each of which must fail: an
empty dump, Exp's results all NaN, Exp's sign flipped, Exp one ulp off
everywhere, Exp's rows dropped, an op the checker does not know.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_check(path, ops="Exp"):
    r = subprocess.run([sys.executable, os.path.join(HERE, "check_accuracy.py"), "--dump", path, "--ops", ops],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def write(path, rows):
    with open(path, "w") as f:
        for op, vals in rows:
            f.write("\t".join([op] + [repr(v) for v in vals]) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    dump = os.path.join(tmp, "all.tsv")
    subprocess.run([args.ember, "fuzz", "--seed", "3", "--dump-samples", dump, "--samples", "200"], check=True)
    rows = []
    for line in open(dump):
        cells = line.rstrip("\n").split("\t")
        if cells[0] == "Exp":
            rows.append((cells[0], [float(c) for c in cells[1:]]))
    finite = [r for r in rows if all(math.isfinite(v) for v in r[1]) and r[1][-1] != 0]
    assert len(finite) >= 20, "too few finite Exp samples to plant faults in"

    def mutate(f):
        return [(op, v[:-1] + [f(v)]) if all(math.isfinite(x) for x in v) and v[-1] != 0 else (op, v)
                for op, v in rows]

    # name: (rows, ops to check, what the output must say; None: must pass)
    cases = {
        "the real dump": (rows, "Exp", None),
        "an empty dump": ([], "Exp", "no samples"),
        "Exp all NaN": ([(op, v[:-1] + [math.nan]) for op, v in rows], "Exp", "NaN, expected"),
        "Exp's sign flipped": (mutate(lambda v: -v[-1]), "Exp", "ulp, expected"),
        "Exp one ulp high": (mutate(lambda v: math.nextafter(v[-1], math.inf)), "Exp", "ulp, expected"),
        "Exp's rows dropped": ([("Log", [1.0, 0.0])], "Exp,Log", "Exp        FAIL not in the dump"),
        "an unknown op": (rows + [("NoSuchOp", [1.0, 2.0])], "Exp,NoSuchOp", "does not know"),
    }
    failed = 0
    for name, (data, ops, says) in cases.items():
        path = os.path.join(tmp, "case.tsv")
        write(path, data)
        rc, out = run_check(path, ops)
        ok = rc == 0 if says is None else rc != 0 and says in out
        failed += not ok
        print("%-20s exit %d, want %s: %s" % (name, rc, "0" if says is None else "a failure: " + says,
                                              "ok" if ok else "WRONG"))
        if not ok:
            print(out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
