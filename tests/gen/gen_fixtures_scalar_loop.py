"""Writes tests/data/scalar_loop/grads.json: Ember graphs of PyTensor's
ScalarLoop gradients (gammainc/gammaincc wrt the shape k, betainc wrt a and
b), exported after PyTensor's FAST_RUN rewrites, with inputs covering every
branch, and two references per output:

  "mpmath":   the derivative by mpmath at 30 digits (numerical
              differentiation of the regularized function), independent of
              PyTensor's series; "rtol_mpmath" is the series' own accuracy;
  "pytensor": PyTensor's default (C) backend, which runs the same series
              ("rtol_pytensor": its C psi is only ~1e-9 accurate).

Read by tests/unit/test_scalar_loop.cpp. Run with PyTensor 2.38 and mpmath (the
exporter reads the tables a build generates in <build>/python/ember):
  EMBER_NATIVE_DIR=build/jit/python/ember PYTHONPATH=python .venv/bin/python tests/gen/gen_fixtures_scalar_loop.py
"""
import json
import os

import mpmath
import numpy as np
import pytensor
import pytensor.tensor as pt

from ember.export import export_graph

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "scalar_loop")
mpmath.mp.dps = 30

# (k, x): both gammainc_grad series, its gammaincc branches (x >= k and
# x >= 8: the fixed 9-step loop; else the while loop), x = 0, large k.
GAMMA_KX = [(0.5, 0.1), (1.0, 1.0), (2.5, 2.0), (5.0, 7.0), (10.0, 3.0), (0.3, 20.0), (3.0, 40.0),
            (20.0, 25.0), (50.0, 45.0), (7.5, 9.0), (1.5, 0.0), (100.0, 90.0), (0.05, 0.5), (4.0, 16.0),
            (11.0, 31.0), (30.0, 12.0)]
# gammaincc_grad's series (log-precision 1e-6) is far off where x and k are
# both large or x == 0 (e.g. k=50, x=45 gives 3e20): those points are left out.
GAMMAINCC_KX = [(0.5, 0.1), (1.0, 1.0), (2.5, 2.0), (10.0, 3.0), (0.3, 20.0), (3.0, 40.0), (7.5, 9.0),
                (0.05, 0.5), (4.0, 16.0), (11.0, 31.0)]
# (a, b, x), including x > a/(a+b) (the flipped branch).
BETA_ABX = [(1.0, 1.0, 0.5), (2.0, 3.0, 0.2), (2.0, 3.0, 0.8), (0.5, 0.5, 0.3), (10.0, 2.0, 0.9),
            (5.0, 20.0, 0.1), (1.5, 7.0, 0.6), (30.0, 30.0, 0.45), (0.2, 4.0, 0.05), (3.0, 0.7, 0.95)]


def enc(a):
    a = np.asarray(a)
    def num(v):
        if a.dtype.kind == "f":
            v = float(v)
            return "nan" if np.isnan(v) else ("inf" if v == np.inf else ("-inf" if v == -np.inf else v))
        return int(v)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": [num(v) for v in a.ravel()]}


def d_gammainc(k, x, upper):
    f = (lambda kk: mpmath.gammainc(kk, x, mpmath.inf, regularized=True)) if upper else \
        (lambda kk: mpmath.gammainc(kk, 0, x, regularized=True))
    return float(mpmath.diff(f, mpmath.mpf(k)))


def d_betainc(a, b, x, wrt):
    if wrt == 0:
        f = lambda t: mpmath.betainc(t, b, 0, x, regularized=True)
        return float(mpmath.diff(f, mpmath.mpf(a)))
    f = lambda t: mpmath.betainc(a, t, 0, x, regularized=True)
    return float(mpmath.diff(f, mpmath.mpf(b)))


def case(name, inputs, out, values, reference, rtol_mpmath, rtol_pytensor):
    f = pytensor.function(inputs, out, mode="FAST_RUN")
    loops = [n for n in f.maker.fgraph.toposort()
             if type(getattr(n.op, "scalar_op", None)).__name__ in ("ScalarLoop", "Grad2F1Loop")]
    assert loops, name
    doc, payload = export_graph(f, name=name)
    assert not payload
    got = f(*values)
    ref = np.asarray(reference, dtype=got.dtype)
    g64, r64 = got.astype(np.float64), ref.astype(np.float64)
    err = np.max(np.abs(g64 - r64) / np.maximum(np.abs(r64), 1e-30))
    print(f"{name}: {len(loops)} ScalarLoop nodes; PyTensor vs mpmath max rel err {err:.2e}")
    assert err <= rtol_mpmath, name
    return {"name": name, "graph": doc, "inputs": [enc(v) for v in values], "mpmath": enc(ref),
            "pytensor": enc(got), "rtol_mpmath": rtol_mpmath, "rtol_pytensor": rtol_pytensor}


def main():
    cases = []
    for dtype in ("float64", "float32"):
        k = pt.vector("k", dtype=dtype)
        x = pt.vector("x", dtype=dtype)
        for upper, fn, pts in ((False, pt.gammainc, GAMMA_KX), (True, pt.gammaincc, GAMMAINCC_KX)):
            if dtype == "float32":  # gamma(100) overflows float32: the gradient is -inf there
                pts = [p for p in pts if p[0] < 100]
            ks = np.array([p[0] for p in pts], dtype=dtype)
            xs = np.array([p[1] for p in pts], dtype=dtype)
            ref = [d_gammainc(float(a), float(b), upper) for a, b in zip(ks, xs)]
            name = f"{'gammaincc' if upper else 'gammainc'}_dk_{dtype}"
            rtol = 2e-3 if dtype == "float32" else (1e-4 if upper else 1e-6)
            cases.append(case(name, [k, x], pt.grad(fn(k, x).sum(), k), [ks, xs], ref, rtol,
                              1e-7 if dtype == "float64" else 1e-4))
    a, b, x = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    av, bv, xv = (np.array([p[i] for p in BETA_ABX]) for i in range(3))
    for wrt, var in ((0, a), (1, b)):
        ref = [d_betainc(p, q, z, wrt) for p, q, z in zip(av, bv, xv)]
        cases.append(case(f"betainc_d{'ab'[wrt]}_float64", [a, b, x], pt.grad(pt.betainc(a, b, x).sum(), var),
                          [av, bv, xv], ref, 1e-6, 1e-7))
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "grads.json"), "w") as fh:
        json.dump({"cases": cases}, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
