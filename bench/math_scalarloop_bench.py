"""ScalarLoop gradients (gammainc / betainc wrt a shape parameter) on Ember
(mode="EMBER") against PyTensor's C backend (CVM), as docs/interpreter.md
describes: 20000 elements, per run the median of 7 calls of the compiled
gradient; prints the median of `runs` runs per case and backend.

Usage (from a worktree with build/jit):
  EMBER_NATIVE_DIR=build/jit/python/ember PYTHONPATH=python \\
      .venv/bin/python bench/math_scalarloop_bench.py [runs=5] [ember-only]
"""
import statistics
import sys
import time

import numpy as np
import pytensor
import pytensor.tensor as pt

import ember  # noqa: F401  (registers mode "EMBER")

N = 20000


def cases():
    rng = np.random.default_rng(0)
    k = pt.dvector("k")
    x = pt.dvector("x")
    a = pt.dvector("a")
    b = pt.dvector("b")
    u = pt.dvector("u")
    kv = rng.uniform(0.1, 20, N)
    xv = rng.uniform(0.1, 30, N)
    av = rng.uniform(0.5, 20, N)
    bv = rng.uniform(0.5, 20, N)
    uv = rng.uniform(0.01, 0.99, N)
    gi = pt.grad(pt.sum(pt.gammainc(k, x)), k)
    gb = pt.grad(pt.sum(pt.betainc(a, b, u)), a)
    return [("grad gammainc wrt k", [k, x], gi, [kv, xv]),
            ("grad betainc wrt a", [a, b, u], gb, [av, bv, uv])]


def time_fn(f, args):
    f(*args)
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        f(*args)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    modes = ["EMBER"] if "ember-only" in sys.argv else ["EMBER", "CVM"]
    for name, ins, out, vals in cases():
        fns = {m: pytensor.function(ins, out, mode=m) for m in modes}
        times = {m: [] for m in modes}
        for _ in range(runs):
            for m in modes:  # alternate backends within each run
                times[m].append(time_fn(fns[m], vals))
        line = f"{name:22s}"
        for m in modes:
            line += f"  {m}: {statistics.median(times[m]) * 1e3:8.2f} ms"
        if len(modes) == 2:
            line += f"  ratio {statistics.median(times['EMBER']) / statistics.median(times['CVM']):.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
