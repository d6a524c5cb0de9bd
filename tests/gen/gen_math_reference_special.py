#!/usr/bin/env python3
"""Reference tables for the special functions of interp/math (erf.cpp, gamma.cpp, polygamma.cpp,
incomplete_gamma.cpp, betainc.cpp, bessel.cpp) and the shape derivatives of
gammainc and betainc, computed with mpmath at 40
significant digits from the exact double inputs.

Writes tests/data/math/<function>.bin (format in math_table.py). Points whose
reference is not a normal double (|ref| < 2.2e-308, overflow, NaN) are left
out; edge values are tested separately against SciPy in
tests/unit/test_math_special.cpp.

Run: python3 tests/gen/gen_math_reference_special.py [group ...]   (needs numpy, mpmath)
"""
import os

import mpmath as mp
import numpy as np

import math_table

mp.mp.dps = 40
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "math")
rng = np.random.default_rng(0)


def reseed(name):
    """Each table draws from its own stream, so tables can be regenerated one at a time."""
    global rng
    rng = np.random.default_rng(sum(map(ord, name)) + 20240611)


def logu(lo, hi, n, sign=1.0):
    return sign * np.exp(rng.uniform(np.log(lo), np.log(hi), n))


def uni(lo, hi, n):
    return rng.uniform(lo, hi, n)


def write(name, cols, f):
    cols = [np.asarray(c, dtype=np.float64) for c in cols]
    rows = []
    for args in zip(*cols):
        try:
            v = f(*[mp.mpf(float(a)) for a in args])
        except (ZeroDivisionError, ValueError, OverflowError, mp.libmp.NoConvergence):
            continue
        if isinstance(v, mp.mpc):
            if abs(v.imag) > abs(v.real) * mp.mpf(10) ** -30:
                continue
            v = v.real
        if not mp.isfinite(v):
            continue
        d = float(v)
        if not np.isfinite(d) or abs(d) < 2.2250738585072014e-308:
            continue
        rows.append((tuple(map(float, args)), d, float((v - mp.mpf(d)) / math_table.ulp(d))))
    os.makedirs(OUT, exist_ok=True)
    math_table.write(os.path.join(OUT, name + ".bin"), len(cols), rows)
    print(f"{name}: {len(rows)} points")


def extra(name):
    """A separate stream for regions added later (the spot check's findings,
    docs/testing.md), so the earlier points of every table stay the same."""
    return np.random.default_rng(sum(map(ord, name)) + 20261129)


def around(points, width, n, gen):
    """n points uniform in [p - width, p + width] spread over the points."""
    p = np.repeat(np.asarray(points, dtype=np.float64), -(-n // len(points)))[:n]
    return p + gen.uniform(-width, width, n)


def near(points, scales, n):
    """Points p * (1 + s) and p + s for small s of both signs."""
    out = []
    for p in points:
        for s in scales:
            out += [p + s, p - s]
    return np.array(out[:n])


def not_int(x):
    x = np.asarray(x)
    return x[np.floor(x) != x]


def erf_tables():
    reseed("erf_tables")
    x = np.concatenate([uni(-6, 6, 1500), logu(1e-300, 1, 300), logu(1e-300, 1, 200, -1.0),
                        uni(-1.05, 1.05, 300)])
    write("erf", [x], mp.erf)
    x = np.concatenate([uni(-6, 27.2, 2000), logu(1e-300, 1, 200), uni(-1.05, 1.05, 200),
                        uni(0.95, 8.2, 300), uni(25, 27.25, 100)])
    ex = extra("erfc")
    x = np.concatenate([x, ex.uniform(0.5, 1.0, 300), ex.uniform(1.0, 1.25, 100)])
    write("erfc", [x], mp.erfc)
    x = np.concatenate([uni(-26, 30, 1500), logu(1e-300, 1, 100), logu(1, 1e6, 400),
                        logu(1e6, 1e300, 100), uni(-1.05, 1.05, 200), uni(7, 30, 200)])
    def erfcx(t):
        if t > 1e8:  # mpmath's erfc overflows internally; 3 asymptotic terms are exact here
            return (1 - 1 / (2 * t * t) + 3 / (4 * t**4)) / (t * mp.sqrt(mp.pi))
        return mp.exp(t * t) * mp.erfc(t)

    ex = extra("erfcx")
    x = np.concatenate([x, ex.uniform(0.5, 1.0, 300), ex.uniform(1.0, 1.25, 100)])
    write("erfcx", [x], erfcx)
    y = np.concatenate([uni(-1, 1, 1500), logu(1e-300, 1, 200), logu(1e-300, 1, 100, -1.0),
                        1 - logu(1e-16, 1, 300), -1 + logu(1e-16, 1, 100), uni(0.7, 0.76, 100)])
    write("erfinv", [y], mp.erfinv)
    q = np.concatenate([uni(0, 2, 1500), logu(1e-300, 1, 400), 2 - logu(1e-16, 1, 200),
                        uni(0.2, 0.32, 100), uni(1.68, 1.8, 100)])
    def erfcinv(t):
        # 1 - t must stay exact: raise the precision with -log10(t).
        with mp.workdps(50 + int(max(0, -mp.log10(t)))):
            return +mp.erfinv(1 - t)

    # Subnormal and tiny q (erfcinv(5e-324) was NaN).
    ex = extra("erfcinv")
    q = np.concatenate([q, [5e-324, 1e-323, 1.5e-323, 2.2250738585072014e-308, 4.450147717014403e-308],
                        np.exp(ex.uniform(np.log(5e-324), np.log(1e-270), 200))])
    write("erfcinv", [q], erfcinv)


def gamma_tables():
    reseed("gamma_tables")
    x = np.concatenate([logu(1e-300, 171.6, 800), uni(0, 171.6, 600), not_int(uni(-170, 0, 600)),
                        near([1, 2, 3], logu(1e-15, 0.1, 60), 120), not_int(uni(-3, 0, 200))])
    write("tgamma", [x], mp.gamma)
    x = np.concatenate([logu(1e-300, 1e6, 800), uni(0, 20, 400), logu(1e6, 1e300, 100),
                        near([1, 2], logu(1e-15, 0.5, 100), 400), not_int(uni(-100, 0, 500)),
                        not_int(uni(-5, 0, 200))])
    # Next to the zeros on x < 0 (|Gamma(x)| = 1), where the error is absolute.
    ex = extra("lgamma")
    zeros = [-2.4570247382208006, -2.7476826467274126, -3.1435808883499801, -3.9552942848585979,
             -4.0393618397405369, -4.9915446405600477]
    x = np.concatenate([x, around(zeros, 0.05, 300, ex), around(zeros, 1e-6, 60, ex), [-2.5, -2.5000000000000004]])
    write("lgamma", [x], lambda t: mp.log(abs(mp.gamma(t))) if t < 60 else mp.loggamma(t).real)
    root = 1.4616321449683622
    x = np.concatenate([logu(1e-300, 1e6, 800), uni(0, 20, 400), logu(1e6, 1e300, 100),
                        near([root], logu(1e-16, 0.5, 200), 400), not_int(uni(-100, 0, 600)),
                        not_int(uni(-3, 0, 200))])
    # Next to the roots on x < 0: the first (-0.504, a Taylor series there) and the next ones.
    ex = extra("digamma")
    roots = [-1.5734984731623905, -2.6107208684441447, -3.6352933664369011, -4.6532377617431424]
    x = np.concatenate([x, around([-0.5040830082644554], 0.3, 200, ex), around([-0.5040830082644554], 1e-4, 50, ex),
                        around(roots, 0.05, 200, ex), [-0.5, -1.5707963267948966, -0.5040830082644554]])
    write("digamma", [x], mp.digamma)
    x = np.concatenate([logu(1e-150, 1e6, 800), uni(0, 20, 400), logu(1e6, 1e150, 100),
                        not_int(uni(-100, 0, 600)), not_int(uni(-3, 0, 200))])
    write("trigamma", [x], lambda t: mp.polygamma(1, t))


def polygamma_tables():
    reseed("polygamma_tables")
    orders = np.array([1, 2, 3, 4, 5, 6, 8, 11, 16, 25, 40, 70, 120, 165], dtype=np.float64)
    m = 3000
    n = orders[rng.integers(0, len(orders), m)]
    x = np.concatenate([logu(1e-8, 1e8, m // 2), uni(0, 12, m // 4), logu(1e8, 1e200, m // 4)])
    write("polygamma", [n, x], lambda k, t: mp.polygamma(int(k), t))
    # x < 0: the value is a difference of terms of size n!/dist^(n+1) (dist to
    # the nearest integer); the test measures against that.
    n = orders[rng.integers(0, 7, 2000)]
    x = np.concatenate([not_int(uni(-30, 0, 1000)), not_int(uni(-3, 0, 600)), not_int(-logu(30, 1e4, 400))])
    write("polygamma_neg", [n, x], lambda k, t: mp.polygamma(int(k), t))


def incgamma_tables():
    reseed("incgamma_tables")
    n = 3000
    a = np.concatenate([logu(1e-3, 1e4, n // 2), logu(1e-3, 10, n // 4), logu(10, 1e4, n // 4)])
    # Half the x around a (where the distribution's mass is), half log-uniform.
    k = rng.normal(0, 3, n)
    x_mid = np.abs(a * (1 + k / np.sqrt(a)))
    x_wide = logu(1e-4, 1e4, n)
    x = np.where(np.arange(n) % 2 == 0, x_mid, x_wide)
    x = np.minimum(x, 1e4)
    # Tiny results (1e-30 .. 1e-300): a in [10, 200], x far below a; and the spot check's points.
    ex = extra("gammainc")
    a2 = np.exp(ex.uniform(np.log(10), np.log(200), 300))
    x2 = a2 * np.exp(ex.uniform(np.log(1e-3), np.log(0.3), 300))
    a = np.concatenate([a, a2, [171.6243769563027, 40.0, 26.5, 40.0, 88.72283905206835]])
    x = np.concatenate([x, x2, [40.0, 1.9999, 1.0000000000000002, 0.24999999999999997, 3.386710244098947]])
    write("gammainc", [a, x], lambda s, t: mp.gammainc(s, 0, t, regularized=True))
    a3 = np.exp(ex.uniform(np.log(0.5), np.log(200), 300))
    x3 = a3 + np.exp(ex.uniform(np.log(30), np.log(700), 300))
    a = np.concatenate([a, a3, [30.0, 10.0, 0.5000000000000001, 710.475860073944]])
    x = np.concatenate([x, x3, [171.7, 171.6243769563027, 88.72283935546875, 1023.9999999999999]])
    write("gammaincc", [a, x], lambda s, t: mp.gammainc(s, t, mp.inf, regularized=True))


def betainc_tables():
    reseed("betainc_tables")
    n = 3000
    a = np.concatenate([logu(1e-2, 1e3, n // 2), logu(0.1, 20, n // 2)])
    b = np.concatenate([logu(1e-2, 1e3, n // 2), logu(0.1, 20, n // 2)])
    mean = a / (a + b)
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    x_mid = np.clip(mean + sd * rng.normal(0, 2, n), 1e-12, 1 - 1e-12)
    x = np.where(np.arange(n) % 2 == 0, x_mid, uni(0, 1, n))
    write("betainc", [a, b, x], lambda p, q, t: mp.betainc(p, q, 0, t, regularized=True))


# Numerical derivatives of the smaller of P and Q = 1 - P (of I and 1 - I): the
# larger one is 1 less a tiny amount whose derivative 40 digits would not hold.
def _d_gammainc(s, t):
    if mp.gammainc(s, 0, t, regularized=True) < 0.5:
        return mp.diff(lambda u: mp.gammainc(u, 0, t, regularized=True), s)
    return -mp.diff(lambda u: mp.gammainc(u, t, mp.inf, regularized=True), s)


def _d_betainc(p, q, t, wrt):
    if mp.betainc(p, q, 0, t, regularized=True) < 0.5:
        f, sign = (lambda u, v: mp.betainc(u, v, 0, t, regularized=True)), 1
    else:  # 1 - I_t(p, q) = I_{1-t}(q, p), 1 - t exact
        f, sign = (lambda u, v: mp.betainc(v, u, 0, 1 - t, regularized=True)), -1
    if wrt == 0:
        return sign * mp.diff(lambda u: f(u, q), p)
    return sign * mp.diff(lambda v: f(p, v), q)


def incder_tables():
    """Derivatives of gammainc and betainc in their shape parameters (PyTensor's
    algorithms, incomplete_gamma.cpp and betainc.cpp)."""
    reseed("incder_tables")
    n = 1600
    a = np.concatenate([logu(1e-2, 1e3, n // 2), logu(0.1, 30, n // 2)])
    k = rng.normal(0, 3, n)
    x = np.where(np.arange(n) % 2 == 0, np.abs(a * (1 + k / np.sqrt(a))), logu(1e-3, 2e3, n))
    write("gammainc_da", [a, x], _d_gammainc)
    n = 1200
    a = np.concatenate([logu(5e-2, 300, n // 2), logu(0.1, 20, n // 2)])
    b = np.concatenate([logu(5e-2, 300, n // 2), logu(0.1, 20, n // 2)])
    mean = a / (a + b)
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    x = np.where(np.arange(n) % 2 == 0, np.clip(mean + sd * rng.normal(0, 2, n), 1e-9, 1 - 1e-9), uni(0, 1, n))
    # A Student-t's cdf: betainc(nu / 2, 1 / 2, nu / (nu + t^2)).
    nu = logu(0.5, 100, 300)
    t = rng.normal(0, 3, 300)
    a, b, x = np.concatenate([a, nu / 2]), np.concatenate([b, np.full(300, 0.5)]), np.concatenate([x, nu / (nu + t * t)])
    write("betainc_da", [a, b, x], lambda p, q, t: _d_betainc(p, q, t, 0))
    write("betainc_db", [a, b, x], lambda p, q, t: _d_betainc(p, q, t, 1))


def bessel_tables():
    reseed("bessel_tables")
    x = np.concatenate([uni(-700, 700, 1200), uni(-10, 10, 600), logu(1e-300, 1, 200)])
    ex = extra("bessel_i")
    x = np.concatenate([x, ex.uniform(5, 10, 200), [6.0, 8.0, -8.0, 7.957579046123557]])
    write("i0", [x], lambda t: mp.besseli(0, t))
    write("i1", [x], lambda t: mp.besseli(1, t))
    x = np.concatenate([uni(-50, 50, 800), logu(1e-300, 1e6, 800), logu(1e-300, 1e6, 200, -1.0)])
    x = np.concatenate([x, ex.uniform(5, 10, 200), [5.800000000000001, -0.07981840236362192]])
    write("i0e", [x], lambda t: mp.besseli(0, t) * mp.exp(-abs(t)))
    write("i1e", [x], lambda t: mp.besseli(1, t) * mp.exp(-abs(t)))
    x = np.concatenate([uni(-30, 30, 1000), uni(0, 200, 600), logu(1e-300, 1, 100), logu(200, 1e6, 300)])
    ex = extra("bessel_j")
    z0 = [2.4048255576957728, 5.5200781102863106, 8.6537279129110122, 11.791534439014282, 14.930917708487786]
    z1 = [3.8317059702075123, 7.0155866698156188, 10.173468135062722, 13.323691936314223, 16.470630050877633]
    write("j0", [np.concatenate([x, around(z0, 0.01, 200, ex), around(z0, 1e-9, 50, ex)])], lambda t: mp.besselj(0, t))
    write("j1", [np.concatenate([x, around(z1, 0.01, 200, ex), around(z1, 1e-9, 50, ex)])], lambda t: mp.besselj(1, t))


if __name__ == "__main__":
    import sys
    groups = {"erf": erf_tables, "gamma": gamma_tables, "polygamma": polygamma_tables, "incgamma": incgamma_tables,
              "betainc": betainc_tables, "bessel": bessel_tables, "incder": incder_tables}
    for g in sys.argv[1:] or groups:
        groups[g]()
