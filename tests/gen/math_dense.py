#!/usr/bin/env python3
"""The "dense" column of docs/math.md: the elementary functions' worst ulp
over a run FACTOR times denser than the checked-in tables.

Draws each table's points (tests/gen/gen_math_reference.py, the same
distributions) FACTOR times from another seed, computes the exact results
with mpmath at 256 bits, runs Ember's op over them with `ember run` (an
Elemwise graph; every tier gives the same bits), and prints the worst error
in ulps as tests/unit/test_math_elementary.cpp measures it. Special results
(non-finite or zero) must match exactly. Not run by CI: mpmath needs about
a minute per function at the default factor.

Usage: python tests/gen/math_dense.py --ember build/jit/ember [--factor 25] [--seed 7] [name ...]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import mpmath
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_math_reference as gen  # noqa: E402

OPS = {
    "exp": "Exp", "exp2": "Exp2", "expm1": "Expm1", "log": "Log", "log2": "Log2", "log10": "Log10",
    "log1p": "Log1p", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "ArcSin", "acos": "ArcCos",
    "atan": "ArcTan", "atan2": "ArcTan2", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "ArcSinh",
    "acosh": "ArcCosh", "atanh": "ArcTanh", "sigmoid": "Sigmoid", "softplus": "Softplus",
    "log1mexp": "Log1mexp", "pow": "Pow", "xlogx": "XlogX", "xlogy0": "XlogY0",
}


def reference(inputs, fn):
    """(ref, err) per point, as gen_math_reference.write_table stores them."""
    refs, errs = [], []
    for args in inputs:
        exact = fn(*[mpmath.mpf(a) for a in args])
        if isinstance(exact, float):
            refs.append(exact)
            errs.append(0.0)
            continue
        ref = gen.to_double(exact)
        err = 0.0
        if np.isfinite(ref) and ref != 0.0 and not isinstance(exact, mpmath.mpc):
            err = float((exact - mpmath.mpf(ref)) / gen.ulp(ref))
        refs.append(ref)
        errs.append(err)
    return np.array(refs), np.array(errs)


def run_ember(ember, op, cols, tmp):
    names = ["x", "y"][:len(cols)]
    variables = [{"name": n, "dtype": "float64", "shape": [None]} for n in names]
    variables.append({"name": "out", "dtype": "float64", "shape": [None]})
    graph = {"format": "ember-graph", "version": 1, "variables": variables,
             "inputs": list(range(len(names))), "outputs": [len(names)],
             "nodes": [{"op": "Elemwise", "inputs": list(range(len(names))), "outputs": [len(names)],
                        "attrs": {"scalar_op": {"op": op}}}]}
    path = os.path.join(tmp, "g.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    cmd = [ember, "run", path, "--jit", "off", "--output-dir", tmp]
    for n, c in zip(names, cols, strict=True):
        np.save(os.path.join(tmp, n + ".npy"), np.asarray(c, dtype=np.float64))
        cmd += ["--input", "%s=%s" % (n, os.path.join(tmp, n + ".npy"))]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return np.load(os.path.join(tmp, "out.npy"))


def worst_ulp(got, ref, err):
    """Worst error and its index; a special result that differs counts as inf."""
    worst, at = 0.0, -1
    for i, (g, r, e) in enumerate(zip(got, ref, err, strict=True)):
        if math.isnan(r):
            d = 0.0 if math.isnan(g) else math.inf
        elif not math.isfinite(r) or r == 0:
            d = 0.0 if g == r else math.inf
        elif not math.isfinite(g):
            d = math.inf
        else:
            d = abs((g - r) / float(gen.ulp(r)) - e)
        if d > worst:
            worst, at = d, i
    return worst, at


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--factor", type=int, default=25, help="draws of each table's distributions")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("names", nargs="*", help="functions (default: all of docs/math.md's table)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    for name in args.names or list(OPS):
        gen.rng = np.random.default_rng([args.seed, list(OPS).index(name)])
        inputs, fn = [], None
        for _ in range(args.factor):
            pts, fn = gen.TABLES[name]()
            inputs += pts
        ref, err = reference(inputs, fn)
        got = run_ember(args.ember, OPS[name], list(zip(*inputs, strict=True)), tmp)
        worst, at = worst_ulp(got, ref, err)
        print("%-9s worst %.3f ulp over %d points (at %s)" % (name, worst, len(inputs),
                                                            ", ".join(repr(v) for v in inputs[at])), flush=True)


if __name__ == "__main__":
    main()
