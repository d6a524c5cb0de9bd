"""The derivative column of the scalar op table (interp/scalar_grad.def)
against mpmath's numerical derivatives of mpmath's own functions.

Every row with at least one expression entry is a test case: a one-node graph
(an Elemwise of the op over 0-d float64 inputs, each its own graph input)
carries a "gradient" directive with respect to every float input whose rule is
an expression or "zero"; Ember's loader differentiates it and the program's
gradient is compared with mpmath.diff at points inside the op's domain, tail
points included (1e-12 relative on the core points, 1e-9 on the tails).
Rows whose entries are all "zero"/"undefined" are checked to give 0 / to
refuse with "cannot differentiate".
"""

import math
import os
import re

import numpy as np
import pytest

from native_helpers import ROOT, require_native

mpmath = pytest.importorskip("mpmath")
mp = mpmath.mp

native = require_native()

GRAD_DEF = os.path.join(ROOT, "interp", "scalar_grad.def")
OPS_DEF = os.path.join(ROOT, "interp", "scalar_ops.def")

CORE_RTOL = 1e-12
TAIL_RTOL = 1e-9
DPS = 60
DIFF_DPS = 450  # differences of values near 1 (erf(-26) = -1 + 3e-296) keep 100+ digits
STEP_DIGITS = 30  # the step is 1e-30 x |x|: truncation error about 1e-120 relative


def _strip_comments(text):
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def _grad_rows():
    """Enum -> (entry 0, entry 1, entry 2), C string literals joined."""
    with open(GRAD_DEF) as f:
        text = _strip_comments(f.read())
    lit = r'((?:\s*"[^"]*")+)'
    rows = {}
    for m in re.finditer(r"\bG\(\s*(\w+)\s*," + lit + r"\s*," + lit + r"\s*," + lit + r"\s*\)", text):
        rows[m.group(1)] = tuple("".join(re.findall(r'"([^"]*)"', m.group(k))) for k in (2, 3, 4))
    return rows


def _op_rows():
    """Enum -> (PyTensor class name, arity, kind)."""
    with open(OPS_DEF) as f:
        text = _strip_comments(f.read())
    rows = {}
    for m in re.finditer(r'\bX\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(-?\d+)\s*,\s*(\w+)\s*,', text):
        rows[m.group(1)] = (m.group(2), int(m.group(3)), m.group(4))
    return rows


GRAD = _grad_rows()
OPS = _op_rows()
SPECIAL = ("", "zero", "undefined")


def _is_expr(entry):
    return entry not in SPECIAL


EXPR_OPS = [op for op, entries in GRAD.items() if any(_is_expr(e) for e in entries)]


def test_the_tables_parse_and_agree():
    # One G row per X row, in the same order (scalar_rules.cpp checks it at build time too).
    assert list(GRAD) == list(OPS), "scalar_grad.def and scalar_ops.def rows differ"
    with open(GRAD_DEF) as f:
        n_rows = sum(1 for line in f if line.startswith("G("))
    assert len(GRAD) == n_rows and len(GRAD) > 70, (len(GRAD), n_rows)
    assert "Exp" in EXPR_OPS and "BetaInc" in EXPR_OPS


# ---- mpmath references -------------------------------------------------------------------------

def _sigmoid(x):
    return 1 / (1 + mp.exp(-x))


def _erfcinv(y):
    # mpmath has no erfcinv; 1 - y is exact at DIFF_DPS digits for the points used here.
    return mp.erfinv(1 - y)


def _gammaln(x):
    return mp.loggamma(x) if x > 0 else mp.log(abs(mp.gamma(x)))


def _clip(x, lo, hi):
    return min(max(x, lo), hi)


REF = {
    "Identity": lambda x: x,
    "Neg": lambda x: -x,
    "Abs": lambda x: abs(x),
    "Add": lambda *a: mp.fsum(a),
    "Mul": lambda *a: mp.fprod(a),
    "Sub": lambda x, y: x - y,
    "TrueDiv": lambda x, y: x / y,
    "Pow": lambda x, y: mp.power(x, y),
    "Sqr": lambda x: x * x,
    "Sqrt": lambda x: mp.sqrt(x),
    "Reciprocal": lambda x: 1 / x,
    "Exp": lambda x: mp.exp(x),
    "Exp2": lambda x: mp.power(2, x),
    "Expm1": lambda x: mp.expm1(x),
    "Log": lambda x: mp.log(x),
    "Log2": lambda x: mp.log(x, 2),
    "Log10": lambda x: mp.log10(x),
    "Log1p": lambda x: mp.log1p(x),
    "Sin": lambda x: mp.sin(x),
    "Cos": lambda x: mp.cos(x),
    "Tan": lambda x: mp.tan(x),
    "ArcSin": lambda x: mp.asin(x),
    "ArcCos": lambda x: mp.acos(x),
    "ArcTan": lambda x: mp.atan(x),
    "ArcTan2": lambda y, x: mp.atan2(y, x),
    "Sinh": lambda x: mp.sinh(x),
    "Cosh": lambda x: mp.cosh(x),
    "Tanh": lambda x: mp.tanh(x),
    "ArcSinh": lambda x: mp.asinh(x),
    "ArcCosh": lambda x: mp.acosh(x),
    "ArcTanh": lambda x: mp.atanh(x),
    "Sigmoid": _sigmoid,
    "Softplus": lambda x: mp.log1p(mp.exp(x)),
    "Log1mexp": lambda x: mp.log(-mp.expm1(x)),
    "Erf": lambda x: mp.erf(x),
    "Erfc": lambda x: mp.erfc(x),
    "Erfcx": lambda x: mp.exp(x * x) * mp.erfc(x),
    "Erfinv": lambda x: mp.erfinv(x),
    "Erfcinv": _erfcinv,
    "Gamma": lambda x: mp.gamma(x),
    "GammaLn": _gammaln,
    "Psi": lambda x: mp.digamma(x),
    "TriGamma": lambda x: mp.polygamma(1, x),
    "PolyGamma": lambda n, x: mp.polygamma(int(n), x),
    "GammaInc": lambda k, x: mp.gammainc(k, 0, x, regularized=True),
    "GammaIncC": lambda k, x: mp.gammainc(k, x, mp.inf, regularized=True),
    "I0": lambda x: mp.besseli(0, x),
    "I1": lambda x: mp.besseli(1, x),
    "I0e": lambda x: mp.exp(-abs(x)) * mp.besseli(0, x),
    "I1e": lambda x: mp.exp(-abs(x)) * mp.besseli(1, x),
    "J0": lambda x: mp.besselj(0, x),
    "J1": lambda x: mp.besselj(1, x),
    "BetaInc": lambda a, b, x: mp.betainc(a, b, 0, x, regularized=True),
    "XlogX": lambda x: x * mp.log(x),
    "XlogY0": lambda x, y: x * mp.log(y),
    "Maximum": lambda x, y: max(x, y),
    "Minimum": lambda x, y: min(x, y),
    "Clip": _clip,
    "Switch": lambda c, a, b: a if c else b,
    "Second": lambda x, y: y,
    "Cast": lambda x: x,
}

# Points inside each op's domain, away from kinks, ties, bounds and zeros of the
# derivative: (core points, tail points). Variadic ops get three inputs.
POINTS = {
    "Identity": ([(-1.5,), (0.3,), (2.0,)], [(1e300,)]),
    "Neg": ([(-1.5,), (0.3,)], [(-1e300,)]),
    "Abs": ([(-1.5,), (0.7,)], [(-700.0,), (1e-300,)]),
    "Add": ([(0.5, -1.25, 3.0), (1e3, 2.0, -7.0)], []),
    "Mul": ([(0.5, -1.25, 3.0), (2.0, 3.0, 5.0)], [(1e100, 1e-100, 3.0)]),
    "Sub": ([(0.5, -1.25), (3.0, 7.0)], []),
    "TrueDiv": ([(1.0, 3.0), (-2.5, 0.7)], [(1e10, 3e-5), (1.0, 1e-150)]),
    "Pow": ([(2.0, 3.5), (0.7, -1.3), (5.0, 0.5), (3.0, 2.0)], [(1.5, 300.0), (2.0, -700.0), (1e-300, 0.5)]),
    "Sqr": ([(-1.5,), (3.0,)], [(1e100,)]),
    "Sqrt": ([(2.0,), (0.01,)], [(1e300,), (1e-300,)]),
    "Reciprocal": ([(3.0,), (-0.7,)], [(1e150,), (-1e-150,)]),
    "Exp": ([(0.5,), (-2.0,)], [(30.0,), (-30.0,), (700.0,), (-700.0,)]),
    "Exp2": ([(0.5,), (-3.3,)], [(30.0,), (-30.0,), (1000.0,), (-1000.0,)]),
    "Expm1": ([(0.5,), (-2.0,), (1e-10,)], [(30.0,), (-30.0,), (700.0,)]),
    "Log": ([(0.5,), (3.0,)], [(1e-300,), (1e300,)]),
    "Log2": ([(0.5,), (3.0,)], [(1e-300,), (1e300,)]),
    "Log10": ([(0.5,), (3.0,)], [(1e-300,), (1e300,)]),
    "Log1p": ([(0.5,), (-0.9,), (1e-10,)], [(1e300,), (-0.9999999999,)]),
    "Sin": ([(0.5,), (2.0,)], [(100.0,)]),
    "Cos": ([(0.5,), (2.0,)], [(100.0,)]),
    "Tan": ([(0.5,), (-1.2,), (3.0,)], []),
    "ArcSin": ([(0.3,), (-0.8,)], [(0.999999,)]),
    "ArcCos": ([(0.3,), (-0.8,)], [(0.999999,)]),
    "ArcTan": ([(0.3,), (-5.0,)], [(1e10,), (1e150,)]),
    "ArcTan2": ([(0.3, 2.0), (-1.0, -0.5), (5.0, 0.1)], []),
    "Sinh": ([(0.5,), (-2.0,)], [(30.0,), (-30.0,), (700.0,)]),
    "Cosh": ([(0.5,), (-2.0,)], [(30.0,), (-30.0,), (700.0,)]),
    "Tanh": ([(0.5,), (-2.0,)], [(5.0,), (-5.0,), (20.0,), (-20.0,)]),
    "ArcSinh": ([(0.5,), (-3.0,)], [(1e150,)]),
    "ArcCosh": ([(1.5,), (10.0,)], [(1e150,), (1.001,)]),
    "ArcTanh": ([(0.3,), (-0.9,)], [(0.999999,)]),
    "Sigmoid": ([(0.5,), (-3.0,)], [(-30.0,), (-700.0,), (10.0,), (30.0,)]),
    "Softplus": ([(0.5,), (-3.0,)], [(30.0,), (-30.0,), (700.0,), (-700.0,)]),
    "Log1mexp": ([(-0.5,), (-3.0,), (-1e-10,)], [(-30.0,), (-700.0,)]),
    "Erf": ([(0.3,), (-1.5,)], [(5.0,), (-26.0,)]),
    "Erfc": ([(0.3,), (-1.5,)], [(5.0,), (26.0,)]),
    "Erfcx": ([(0.3,), (-1.5,), (2.0,)], [(30.0,), (300.0,), (-5.0,), (-26.0,)]),
    "Erfinv": ([(0.3,), (-0.7,)], [(0.999999,), (-0.9999999999,)]),
    "Erfcinv": ([(0.3,), (1.7,)], [(1e-10,), (1e-300,)]),
    "Gamma": ([(0.5,), (3.7,), (-1.5,)], [(170.0,), (1e-10,)]),
    "GammaLn": ([(0.5,), (3.7,), (-1.5,)], [(700.0,), (1e300,), (1e-300,)]),
    "Psi": ([(0.5,), (3.7,), (-1.5,)], [(700.0,), (1e10,)]),
    "TriGamma": ([(0.5,), (3.7,), (-1.5,)], [(700.0,)]),
    "PolyGamma": ([(2.0, 0.5), (3.0, 3.7), (1.0, -1.5)], [(1.0, 700.0)]),
    "GammaInc": ([(2.0, 3.0), (0.5, 0.1), (10.0, 12.0)], [(5.0, 700.0), (0.5, 1e-300)]),
    "GammaIncC": ([(2.0, 3.0), (0.5, 0.1), (10.0, 12.0)], [(5.0, 700.0), (0.5, 1e-300)]),
    "I0": ([(0.5,), (-2.0,)], [(700.0,)]),
    "I1": ([(0.5,), (-2.0,)], [(700.0,)]),
    "I0e": ([(0.5,), (-2.0,)], [(700.0,), (-700.0,), (1e4,)]),
    "I1e": ([(0.5,), (-2.0,)], [(700.0,), (-700.0,), (1e4,)]),
    "J0": ([(0.5,), (3.0,)], [(100.0,)]),
    "J1": ([(0.5,), (3.0,)], [(100.0,)]),
    "BetaInc": ([(2.0, 3.0, 0.3), (0.5, 0.5, 0.9), (7.0, 2.5, 0.6)], [(2.0, 3.0, 1e-300), (3.0, 2.0, 0.999999)]),
    "XlogX": ([(0.5,), (3.0,)], [(1e-300,), (1e300,)]),
    "XlogY0": ([(0.5, 2.0), (-3.0, 0.1)], [(2.0, 1e-300), (1e300, 1e300)]),
    "Maximum": ([(0.5, -1.0), (-2.0, 3.0)], []),
    "Minimum": ([(0.5, -1.0), (-2.0, 3.0)], []),
    "Clip": ([(0.5, -1.0, 2.0), (-3.0, -1.0, 2.0), (5.0, -1.0, 2.0)], []),
    "Switch": ([(True, 1.5, -2.0), (False, 1.5, -2.0)], []),
    "Second": ([(1.5, -2.0)], []),
    "Cast": ([(1.5,), (-2.0,)], []),
}

# Inputs that are not float64 (not differentiated; passed after the point).
INPUT_DTYPES = {"Switch": ("bool", "float64", "float64")}



def _arity(op):
    n = OPS[op][1]
    return 3 if n == -1 else n


def _dtypes(op):
    return INPUT_DTYPES.get(op, ("float64",) * _arity(op))


def _rule(op, k):
    entries = GRAD[op]
    return entries[0] if OPS[op][1] == -1 else entries[k]


def _wrt(op):
    """The inputs differentiated: float inputs whose rule is not "undefined"."""
    return [k for k, dt in enumerate(_dtypes(op)) if dt.startswith("float") and _rule(op, k) != "undefined"]


def _document(op, wrt):
    dts = _dtypes(op)
    n = len(dts)
    return {
        "format": "ember-graph", "version": 1, "name": f"d_{op}",
        "variables": [{"name": f"x{k}", "dtype": dt, "shape": []} for k, dt in enumerate(dts)]
        + [{"dtype": "float64", "shape": []}],
        "inputs": [{"var": k} for k in range(n)],
        "outputs": [n],
        "constants": [],
        "nodes": [{"op": "Elemwise", "inputs": list(range(n)), "outputs": [n],
                   "attrs": {"scalar_op": {"op": OPS[op][0]}}}],
        "gradient": {"wrt": [{"input": k, "shape": []} for k in wrt],
                     "point": "_unconstrained_point", "check_bounds": True},
    }


_PROGRAMS = {}


def _program(op):
    if op not in _PROGRAMS:
        wrt = _wrt(op)
        _PROGRAMS[op] = (native.Program.from_document(_document(op, wrt), source=f"<d {op}>", jit="off"), wrt)
    return _PROGRAMS[op]


def _ember(op, point):
    """(value, gradient wrt _wrt(op)) from Ember."""
    prog, wrt = _program(op)
    dts = _dtypes(op)
    flat = np.array([point[k] for k in wrt], dtype="float64")
    rest = [np.asarray(point[k], dtype=dts[k]) for k in range(len(dts)) if k not in wrt]
    value, grad = prog(flat, *rest)
    return float(value), np.asarray(grad, dtype="float64")


def _mp_partial(op, point, k):
    """d f / d x_k at point: a fourth-order central difference at DIFF_DPS digits with a
    step relative to x_k (so values saturating at +-1, as erf's tails, keep their slope)."""
    f = REF[op]
    with mp.workdps(DIFF_DPS):
        args = [a if isinstance(a, bool) else mp.mpf(a) for a in point]
        x = args[k]
        h = (abs(x) if x != 0 else mp.mpf(1)) * mp.mpf(10) ** -STEP_DIGITS

        def g(t):
            a = list(args)
            a[k] = t
            return f(*a)

        d = (8 * (g(x + h) - g(x - h)) - (g(x + 2 * h) - g(x - 2 * h))) / (12 * h)
        return +d


def _check(op, point, rtol):
    """Failure messages (empty when the derivatives agree)."""
    value, grad = _ember(op, point)
    wrt = _wrt(op)
    bad = []
    with mp.workdps(DIFF_DPS):
        want_value = float(REF[op](*[a if isinstance(a, bool) else mp.mpf(a) for a in point]))
        if not math.isclose(value, want_value, rel_tol=rtol, abs_tol=0.0) and not value == want_value:
            # A forward error would make the rule's inputs wrong: say so, but judge the derivative.
            bad.append(f"{op}: value at {point} is {value!r}, mpmath {want_value!r} (forward, not the rule)")
        for j, k in enumerate(wrt):
            d = _mp_partial(op, point, k)
            assert abs(mp.im(d)) <= abs(mp.re(d)) * mp.mpf(10) ** -30, (op, point, k, d)
            want = float(mp.re(d))
            got = float(grad[j])
            ok = got == want or (math.isfinite(got) and abs(got - want) <= rtol * abs(want))
            if not ok:
                rel = abs(got - want) / abs(want) if want != 0 else math.inf
                bad.append(f"{op}: d/dx{k} at {point}: Ember {got!r}, mpmath {want!r} "
                           f"(relative error {rel:.3g}, tolerance {rtol:g}; rule {_rule(op, k)!r})")
    return bad


# Rules that keep PyTensor's form at a known cost in the tail. Sigmoid's
# z * (1 - z): 1 - z carries z's rounding (an ulp of 1, 1.1e-16), so its
# relative error grows as 1e-16 * e^x; at x = 30, 1.7e-4. sigmoid(-x) in its
# place would be exact but costs an exp per element (docs/passes.md).
POINT_RTOL = {("Sigmoid", (30.0,)): 1e-3}


def _cases(op):
    core, tail = POINTS[op]
    return [(p, CORE_RTOL) for p in core] + [(p, POINT_RTOL.get((op, p), TAIL_RTOL)) for p in tail]


UNMAPPED = sorted(op for op in EXPR_OPS if op not in REF or op not in POINTS)


@pytest.mark.parametrize("op", EXPR_OPS)
def test_derivative_rule_matches_mpmath(op):
    if op in UNMAPPED:
        pytest.skip(f"no mpmath reference for {op} (unmapped ops: {', '.join(UNMAPPED)})")
    bad = []
    for point, rtol in _cases(op):
        bad += _check(op, point, rtol)
    assert not bad, "\n".join(bad)


def test_every_expression_row_has_a_reference():
    # A new row of the table needs its mpmath reference and points here.
    assert not UNMAPPED, f"ops without an mpmath reference: {UNMAPPED}"


# ---- rows without expressions ------------------------------------------------------------------

FLOAT_ZERO_OPS = [op for op, e in GRAD.items()
                  if e[0] == "zero" and OPS[op][2] == "Same" and _arity(op) == 1]


@pytest.mark.parametrize("op", FLOAT_ZERO_OPS)
def test_zero_rule_gives_a_zero_gradient(op):
    prog = native.Program.from_document(_document(op, [0]), source=f"<d {op}>", jit="off")
    for x in (-2.5, 0.3, 7.0):
        _, grad = prog(np.array([x]))
        assert np.asarray(grad).tolist() == [0.0], (op, x, grad)


UNDEFINED_OPS = [op for op, e in GRAD.items() if e[0] == "undefined"]


@pytest.mark.parametrize("op", UNDEFINED_OPS)
def test_undefined_rule_refuses_to_differentiate(op):
    doc = _document(op, [0])
    with pytest.raises(native.LoadError, match="cannot differentiate"):
        native.Program.from_document(doc, source=f"<d {op}>", jit="off")


def test_pow_singular_point_guard():
    # d(x**y)/dy is 0 where x == 0 (PyTensor's guard), and d/dx 0**2.5 = 0.
    _, grad = _ember("Pow", (0.0, 2.5))
    assert grad.tolist() == [0.0, 0.0]
