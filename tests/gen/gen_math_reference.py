#!/usr/bin/env python3
"""Reference tables for the math library, computed with mpmath at high precision.

Writes tests/data/math/<function>.bin, one file per function (format in
math_table.py): inputs, the exact result rounded to nearest, and that
rounding's error in ulps. Non-finite or zero results must be matched exactly.
Inputs cover each function's domain plus edge regions.

Usage: python3 tests/gen/gen_math_reference.py [function ...]   (default: all)
"""
import math
import os
import sys

import mpmath
import numpy as np

import math_table
from math_table import ulp

mpmath.mp.prec = 256
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "math")
N = 1500  # points per unary function


def to_double(v) -> float:
    """mpf/mpc -> nearest double (overflow to inf, NaN for non-real)."""
    if isinstance(v, mpmath.mpc):
        if abs(v.imag) > abs(v.real) * mpmath.mpf(2) ** -200 + mpmath.mpf(2) ** -2000:
            return float("nan")
        v = v.real
    if mpmath.isnan(v):
        return float("nan")
    if mpmath.isinf(v):
        return float(v)
    if abs(v) < mpmath.mpf(2) ** -1022:  # subnormal: round once, on the 2^-1074 grid
        n = int(mpmath.nint(v * mpmath.mpf(2) ** 1074))
        return math.ldexp(float(n), -1074)
    with mpmath.workprec(53):
        r = +v  # nearest, ties to even
    return float(r) if abs(r) < mpmath.mpf(2) ** 1024 else math.copysign(math.inf, r)


def write_table(name, inputs, fn):
    """inputs: list of tuples of doubles; fn: mpf args -> exact mpf result (or a double)."""
    os.makedirs(OUT, exist_ok=True)
    arity = len(inputs[0])
    recs = []
    for args in inputs:
        exact = fn(*[mpmath.mpf(a) for a in args])
        if isinstance(exact, float):
            ref, err = exact, 0.0
        else:
            ref = to_double(exact)
            err = 0.0
            if np.isfinite(ref) and ref != 0.0 and not isinstance(exact, mpmath.mpc):
                err = float((exact - mpmath.mpf(ref)) / ulp(ref))
        recs.append((args, ref, err))
    math_table.write(os.path.join(OUT, name + ".bin"), arity, recs)
    print(f"{name}: {len(recs)} points")


SEED = 20261129
rng = np.random.default_rng(SEED)


def uni(lo, hi, n):
    return list(rng.uniform(lo, hi, n))


def logu(lo, hi, n, signed=False):
    v = 10.0 ** rng.uniform(np.log10(lo), np.log10(hi), n)
    if signed:
        v *= rng.choice([-1.0, 1.0], n)
    return list(v)


def unary(*parts):
    pts = [float(v) for p in parts for v in p]
    return [(v,) for v in pts]


def near_pio2(n, kmax):
    k = rng.integers(-kmax, kmax, n)
    return [float(mpmath.mpf(int(i)) * mpmath.pi / 2) for i in k]


MP = mpmath
TABLES = {}


def table(name):
    def deco(f):
        TABLES[name] = f
        return f
    return deco


def nan_if(cond, f):
    return float("nan") if cond else f()


@table("exp")
def _():
    return unary(uni(-745.1, 709.78, 600), uni(-1, 1, 300), logu(1e-300, 1e-3, 200, True),
                 uni(-745.1, -707, 200), uni(700, 709.78, 200)), lambda x: MP.exp(x)


@table("exp2")
def _():
    return unary(uni(-1074.9, 1023.99, 700), uni(-1, 1, 300), logu(1e-300, 1e-3, 200, True),
                 uni(-1074.9, -1020, 300)), lambda x: MP.power(2, x)


@table("expm1")
def _():
    return unary(uni(-40, 709.7, 500), uni(-1, 1, 400), logu(1e-300, 1e-3, 300, True),
                 uni(-2, 2, 300)), lambda x: MP.expm1(x)


def log_inputs():
    return unary(logu(1e-320, 1e308, 700), uni(0.5, 2, 400), uni(1 - 1e-6, 1 + 1e-6, 200),
                 logu(4.9e-324, 2.2e-308, 200))


@table("log")
def _():
    return log_inputs(), lambda x: MP.log(x)


@table("log2")
def _():
    return log_inputs(), lambda x: MP.log(x, 2)


@table("log10")
def _():
    return log_inputs(), lambda x: MP.log10(x)


@table("log1p")
def _():
    return unary([-1 + v for v in logu(1e-16, 0.7, 300)], uni(-0.5, 1, 400),
                 logu(1e-300, 1e-3, 300, True), logu(1, 1e300, 500)), lambda x: MP.log1p(x)


def trig_inputs():
    return unary(uni(-10, 10, 500), uni(-1e5, 1e5, 300), logu(1e5, 1e300, 300, True),
                 logu(1e-300, 1e-3, 100, True), near_pio2(200, 10**6), near_pio2(100, 2**40))


@table("sin")
def _():
    return trig_inputs(), lambda x: MP.sin(x)


@table("cos")
def _():
    return trig_inputs(), lambda x: MP.cos(x)


@table("tan")
def _():
    return trig_inputs(), lambda x: MP.tan(x)


@table("asin")
def _():
    return unary(uni(-1, 1, 800), [s * (1 - v) for v in logu(1e-16, 0.1, 300) for s in (1,)],
                 [-(1 - v) for v in logu(1e-16, 0.1, 200)], logu(1e-300, 1e-3, 200, True)), \
        lambda x: MP.asin(x)


@table("acos")
def _():
    return unary(uni(-1, 1, 800), [1 - v for v in logu(1e-16, 0.1, 300)],
                 [-(1 - v) for v in logu(1e-16, 0.1, 200)], logu(1e-300, 1e-3, 200, True)), \
        lambda x: MP.acos(x)


@table("atan")
def _():
    return unary(uni(-3, 3, 700), logu(1e-300, 1e300, 800, True)), lambda x: MP.atan(x)


@table("sinh")
def _():
    return unary(uni(-710.4, 710.4, 500), uni(-3, 3, 600), logu(1e-300, 1e-3, 200, True),
                 uni(700, 710.47, 200)), lambda x: MP.sinh(x)


@table("cosh")
def _():
    return unary(uni(-710.4, 710.4, 500), uni(-3, 3, 600), logu(1e-300, 1e-3, 200, True),
                 uni(700, 710.47, 200)), lambda x: MP.cosh(x)


@table("tanh")
def _():
    return unary(uni(-25, 25, 500), uni(-1.5, 1.5, 700), logu(1e-300, 1e-3, 300, True)), \
        lambda x: MP.tanh(x)


@table("asinh")
def _():
    return unary(uni(-3, 3, 600), logu(1e-300, 1e300, 900, True)), lambda x: MP.asinh(x)


@table("acosh")
def _():
    return unary([1 + v for v in logu(1e-16, 1, 500)], uni(1, 3, 400), logu(1, 1e300, 600)), \
        lambda x: MP.acosh(x)


@table("atanh")
def _():
    return unary(uni(-1, 1, 700), [1 - v for v in logu(1e-16, 0.1, 300)],
                 [-(1 - v) for v in logu(1e-16, 0.1, 200)], logu(1e-300, 1e-3, 300, True)), \
        lambda x: MP.atanh(x)


@table("sigmoid")
def _():
    return unary(uni(-745, 40, 500), uni(-40, 40, 700), uni(-2, 2, 300)), \
        lambda x: 1 / (1 + MP.exp(-x))


@table("softplus")
def _():
    return unary(uni(-745, 100, 500), uni(-40, 40, 700), uni(-2, 2, 300)), \
        lambda x: MP.log1p(MP.exp(x))


@table("log1mexp")
def _():
    return unary(uni(-745, 0, 500), [-v for v in logu(1e-300, 10, 600)],
                 uni(-0.8, -0.6, 400)), \
        lambda x: MP.log1p(-MP.exp(x)) if x < -1 else MP.log(-MP.expm1(x))  # both exact-safe


@table("xlogx")
def _():
    return unary(logu(1e-300, 1e300, 700), uni(0, 3, 500), uni(0.9, 1.1, 300)), \
        lambda x: x * MP.log(x)


def pairs(xs, ys):
    return [(float(a), float(b)) for a, b in zip(xs, ys)]


@table("atan2")
def _():
    n = 2500
    y = logu(1e-300, 1e300, n, True)
    x = logu(1e-300, 1e300, n, True)
    y2, x2 = uni(-5, 5, 1000), uni(-5, 5, 1000)
    return pairs(y + y2, x + x2), lambda y, x: MP.atan2(y, x)


@table("xlogy0")
def _():
    return pairs(uni(-10, 10, 1500) + logu(1e-300, 1e300, 500),
                 logu(1e-300, 1e300, 1500) + uni(0.5, 2, 500)), lambda x, y: x * MP.log(y)


@table("pow")
def _():
    # x over a wide range with y chosen so x**y stays within [1e-300, 1e300];
    # small bases with many exponents; negative bases with integer exponents;
    # bases near 1 with huge exponents.
    x1 = logu(1e-300, 1e300, 1200)
    y1 = [rng.uniform(-690, 690) / abs(np.log(v)) if abs(np.log(v)) > 1e-3 else rng.uniform(-50, 50)
          for v in x1]
    x2, y2 = uni(0, 4, 800), uni(-60, 60, 800)
    x3 = [-v for v in logu(0.01, 100, 400)]
    y3 = [float(np.floor(rng.uniform(-60, 60))) for _ in x3]
    x4 = [1 + float(rng.uniform(-1, 1)) * 2.0 ** -int(rng.integers(20, 52)) for _ in range(300)]
    y4 = [float(rng.uniform(-1, 1) * abs(600 / np.log(v))) if v != 1 else 3.0 for v in x4]
    x5 = logu(4.9e-324, 2.2e-308, 200)
    y5 = uni(-0.9, 0.9, 200)
    return pairs(x1 + x2 + x3 + x4 + x5, y1 + y2 + y3 + y4 + y5), \
        lambda x, y: MP.power(x, y) if x >= 0 else (-1) ** int(y) * MP.power(-x, y)


@table("pow_small_exponent")
def _():
    # Integer and half-integer exponents with |y| <= 16 (pow's double-double
    # path): signed bases for integers, positive bases for half-integers,
    # bases near 1 and at the edges of that path's range (|x^y| ~ 2^+-960).
    yi = [float(v) for v in rng.integers(-16, 17, 1200)]
    xi = logu(1e-18, 1e18, 800, signed=True) + uni(-4, 4, 400)
    yh = [float(v) + 0.5 for v in rng.integers(-16, 16, 800)]
    xh = logu(1e-18, 1e18, 600) + [1 + float(v) for v in uni(-1e-6, 1e-6, 200)]
    ye = [float(v) for v in rng.choice([-16.0, -15.5, -7.0, 9.0, 15.5, 16.0], 300)]
    xe = [float(2.0 ** (rng.uniform(-1, 1) * 960 / abs(y))) for y in ye]
    return pairs(xi + xh + xe, yi + yh + ye), \
        lambda x, y: MP.power(x, y) if x >= 0 else (-1) ** int(y) * MP.power(-x, y)


# Tables last written by a run of that table alone, from a fresh stream; the
# others come from one run of all, in order. Both are drawn, so every table
# comes out as checked in whichever tables are asked for.
ALONE = {"log1mexp", "pow_small_exponent"}


def main():
    global rng
    names = sys.argv[1:] or list(TABLES)
    unknown = set(names) - set(TABLES)
    if unknown:
        sys.exit(f"unknown tables: {sorted(unknown)}")
    for name, draw in TABLES.items():
        inputs, fn = draw()
        if name in ALONE:
            stream, rng = rng, np.random.default_rng(SEED)
            inputs, fn = draw()
            rng = stream
        if name in names:
            write_table(name, inputs, fn)


if __name__ == "__main__":
    main()
