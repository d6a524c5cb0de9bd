#!/usr/bin/env python3
"""Checks Ember's math-library ops against mpmath.

Runs `ember fuzz --dump-samples` (inputs biased toward special values:
NaN, +-inf, +-0, subnormals, poles, branch thresholds), evaluates each op
at 120 bits with mpmath, and compares in units in the last place (ulp).
Bounds are the table BOUND below (docs/math.md lists them with the reasons).

Exit status 0 only when every op of BOUND (or of --ops) is in the dump, has
points in its domain, and is within its bound there. An empty dump, an op
missing from it, an op not in BOUND and an in-domain NaN all fail:
check_accuracy_selftest.py plants each.
"""
import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile

import mpmath as mp

mp.mp.prec = 120

# Max error in ulps (docs/math.md, "The mpmath spot check"). Elementary
# functions are measured against the correctly rounded result. Special
# functions too, except where the value is a difference of O(1) terms next
# to a zero of the function (scale() below): there the error is absolute, in
# ulps of the scale, as in tests/unit/test_math_special.cpp.
BOUND = {
    "Exp": 1, "Exp2": 1, "Expm1": 1, "Log": 1, "Log2": 2, "Log10": 2, "Log1p": 1,
    "Sin": 1, "Cos": 1, "Tan": 1, "ArcSin": 1, "ArcCos": 1, "ArcTan": 1, "ArcTan2": 2,
    "Sinh": 2, "Cosh": 2, "Tanh": 2, "ArcSinh": 2, "ArcCosh": 2, "ArcTanh": 2,
    "Sigmoid": 2, "Softplus": 2, "Log1mexp": 2, "XlogX": 2, "XlogY0": 2, "Pow": 1,
    "Erf": 3, "Erfc": 6, "Erfcx": 6, "Erfinv": 4, "Erfcinv": 4,
    "Gamma": 16, "GammaLn": 8, "Psi": 8, "TriGamma": 8, "PolyGamma": 8,
    "GammaInc": 64, "GammaIncC": 64, "BetaInc": 256,
    # Shape derivatives: PyTensor's algorithms; betainc's stop at 1e-12 relative.
    "GammaIncDa": 1024, "BetaIncDa": 100000, "BetaIncDb": 100000,
    "I0": 6, "I1": 16, "I0e": 6, "I1e": 16, "J0": 8, "J1": 8,
}


def scale(op, a, want):
    """The magnitude the error is measured in ulps of (|want| unless noted)."""
    x = abs(a[0])
    if op in ("J0", "J1"):  # oscillating: against the envelope sqrt(2/(pi x))
        return max(abs(want), math.sqrt(2 / (math.pi * x)) if x > 1 else 1.0)
    if op == "PolyGamma" and a[1] < 0:
        # Past the fold into positive arguments (interp/math/polygamma.cpp) the
        # value is a difference of terms of the size of n!/frac(x)^(n+1).
        f = min(a[1] - math.floor(a[1]), math.ceil(a[1]) - a[1])
        return max(abs(want), float(mp.factorial(int(a[0])) / mp.mpf(f) ** (int(a[0]) + 1)))
    if op in ("GammaLn", "Psi") and a[0] < 0:
        # Past the reflection the value is a difference of terms of the size of
        # f(1 - x) (lgamma(1 - x), or psi(1 - x) ~ log(1 - x)): absolute error.
        terms = math.lgamma(1 - a[0]) if op == "GammaLn" else math.log1p(x)
        return max(abs(want), 1.0, abs(terms))
    return abs(want)


def exp_bound(op, want):
    """gammainc/gammaincc/betainc are exp(E) times a ratio: rounding E (|E| up
    to ~700) costs ~|E| ulp of the result (docs/math.md)."""
    if op in ("GammaInc", "GammaIncC", "BetaInc", "GammaIncDa", "BetaIncDa", "BetaIncDb") and 0 < abs(want) < 1:
        return 4 * float(abs(mp.log(abs(want))))
    return 0.0


POLE = "pole"  # a pole where libraries differ: +-inf or NaN are both accepted
TINY = "tiny"  # below the normal range, where PyTensor's gammainc_grad flushes to 0: any |got| < DBL_MIN


def gamma_pole(x):
    return x <= 0 and x == math.floor(x)


def ref(op, a):
    """The exact value (mpf), or None when the true result is not real."""
    x = mp.mpf(a[0])
    y = mp.mpf(a[1]) if len(a) > 1 else None
    if op == "Exp": return mp.exp(x)
    if op == "Exp2": return mp.power(2, x)
    if op == "Expm1": return mp.expm1(x)
    if op in ("Log", "Log2", "Log10"):
        if x < 0: return None
        if x == 0: return -mp.inf
        b = {"Log": mp.e, "Log2": 2, "Log10": 10}[op]
        return mp.log(x, b)
    if op == "Log1p":
        if x < -1: return None
        return -mp.inf if x == -1 else mp.log1p(x)
    if op == "Sin": return mp.sin(x)
    if op == "Cos": return mp.cos(x)
    if op == "Tan": return mp.tan(x)
    if op == "ArcSin": return None if abs(x) > 1 else mp.asin(x)
    if op == "ArcCos": return None if abs(x) > 1 else mp.acos(x)
    if op == "ArcTan": return mp.atan(x)
    if op == "ArcTan2":
        if a[0] == 0 or a[1] == 0: return mp.mpf(math.atan2(a[0], a[1]))  # signed zeros: C99 Annex F
        return mp.atan2(x, y)
    if op == "Sinh": return mp.sinh(x)
    if op == "Cosh": return mp.cosh(x)
    if op == "Tanh": return mp.tanh(x)
    if op == "ArcSinh": return mp.asinh(x)
    if op == "ArcCosh": return None if x < 1 else mp.acosh(x)
    if op == "ArcTanh":
        if abs(x) > 1: return None
        return mp.inf * mp.sign(x) if abs(x) == 1 else mp.atanh(x)
    if op == "Sigmoid": return 1 / (1 + mp.exp(-x))
    if op == "Softplus": return mp.log1p(mp.exp(x))
    if op == "Log1mexp":
        if x > 0: return None
        if x == 0: return -mp.inf
        return mp.log1p(-mp.exp(x)) if x < -1 else mp.log(-mp.expm1(x))
    if op == "XlogX":
        if x < 0: return None
        return mp.mpf(0) if x == 0 else x * mp.log(x)
    if op == "XlogY0":
        if x == 0: return mp.mpf(0)
        if y < 0: return None
        return -mp.inf * mp.sign(x) if y == 0 else x * mp.log(y)
    if op == "Pow":
        fx, fy = a[0], a[1]
        odd = math.isfinite(fy) and fy == math.floor(fy) and abs(fy) < 2**53 and int(fy) % 2 == 1
        if math.isinf(fy):  # C99 Annex F pow(x, +-inf)
            if fx in (1.0, -1.0): return mp.mpf(1)
            big = abs(fx) > 1
            return mp.inf if big == (fy > 0) else mp.mpf(0)
        if math.isinf(fx):  # pow(+-inf, y)
            if fy == 0: return mp.mpf(1)
            mag = mp.inf if fy > 0 else mp.mpf(0)
            return -mag if fx < 0 and odd else mag
        if x < 0 and y != mp.floor(y): return None
        if x == 0 and y < 0:
            odd = y == mp.floor(y) and int(y) % 2 == 1
            return -mp.inf if odd and math.copysign(1, a[0]) < 0 else mp.inf
        return mp.power(x, y)
    if op == "Erf": return mp.erf(x)
    if op == "Erfc": return mp.erfc(x)
    if op == "Erfcx": return mp.mpf(0) if x == mp.inf else mp.exp(x * x) * mp.erfc(x)
    if op == "Erfinv":
        if abs(x) > 1: return None
        return mp.inf * mp.sign(x) if abs(x) == 1 else mp.erfinv(x)
    if op == "Erfcinv":
        if x < 0 or x > 2: return None
        if x == 0: return mp.inf
        if x == 2: return -mp.inf
        # 1 - x must not round to 1 for tiny x: work with enough digits.
        with mp.workdps(max(mp.mp.dps, int(-mp.log10(x)) + 40)):
            return +mp.erfinv(1 - x)
    if op == "Gamma":
        if a[0] == 0: return mp.inf * (1 if math.copysign(1, a[0]) > 0 else -1)  # C's tgamma(+-0)
        return None if gamma_pole(x) else mp.gamma(x)
    if op == "GammaLn": return mp.inf if gamma_pole(x) else mp.log(abs(mp.gamma(x)))
    if op in ("Psi", "TriGamma") and gamma_pole(x): return POLE
    if op == "Psi": return mp.digamma(x)
    if op == "TriGamma": return mp.polygamma(1, x)
    if op == "PolyGamma":  # n a non-negative integer (PyTensor's n is discrete)
        if x < 0 or x != math.floor(x): return None
        if gamma_pole(y): return POLE
        return mp.polygamma(int(x), y)
    if op in ("GammaInc", "GammaIncC"):
        if x < 0 or y < 0 or (x == 0 and y == 0): return None
        if x == 0:  # SciPy: gammainc(0, x > 0) = 1, gammaincc(0, x > 0) = 0
            return mp.mpf(1 if op == "GammaInc" else 0)
        if op == "GammaInc":
            return mp.gammainc(x, 0, y, regularized=True)
        return mp.gammainc(x, y, mp.inf, regularized=True)
    if op == "I0": return mp.besseli(0, x)
    if op == "I1": return mp.besseli(1, x)
    if op == "I0e": return mp.exp(-abs(x)) * mp.besseli(0, x)
    if op == "I1e": return mp.exp(-abs(x)) * mp.besseli(1, x)
    if op == "J0": return mp.besselj(0, x)
    if op == "J1": return mp.besselj(1, x)
    if op == "BetaInc":
        b, z = y, mp.mpf(a[2])
        if x < 0 or b < 0 or z < 0 or z > 1 or (x == 0 and b == 0): return None
        # SciPy: betainc(0, b, x) = 1 for x > 0; betainc(a, 0, x) = 0 for x < 1.
        if x == 0: return mp.mpf(1 if z > 0 else 0)
        if b == 0: return mp.mpf(0 if z < 1 else 1)
        return mp.betainc(x, b, 0, z, regularized=True)
    if op == "GammaIncDa":  # PyTensor: 0 at x = 0 and inf; a = inf is NaN
        if x < 0 or y < 0 or mp.isinf(x): return None
        if y == 0 or mp.isinf(y): return mp.mpf(0)
        if mp.gammainc(x, 0, y, regularized=True) < 0.5:
            d = mp.diff(lambda u: mp.gammainc(u, 0, y, regularized=True), x)
        else:
            d = -mp.diff(lambda u: mp.gammainc(u, y, mp.inf, regularized=True), x)
        return TINY if abs(d) < 2.2250738585072014e-308 else d
    if op in ("BetaIncDa", "BetaIncDb"):
        b, z = y, mp.mpf(a[2])
        if not (0 < x < mp.inf and 0 < b < mp.inf and 0 <= z <= 1): return None
        if z == 0 or z == 1: return mp.mpf(0)  # I is 0 or 1 for every a, b there
        if mp.betainc(x, b, 0, z, regularized=True) < 0.5:
            f, sign = (lambda u, v: mp.betainc(u, v, 0, z, regularized=True)), 1
        else:  # 1 - I_z(a, b) = I_{1-z}(b, a), 1 - z exact
            f, sign = (lambda u, v: mp.betainc(v, u, 0, 1 - z, regularized=True)), -1
        if op == "BetaIncDa":
            return sign * mp.diff(lambda u: f(u, b), x)
        return sign * mp.diff(lambda v: f(x, v), b)
    raise KeyError(op)


def too_costly(op, a):
    # mpmath is slow (or hangs) far out in these; the fuzz dump still covers them.
    if op in ("BetaIncDa", "BetaIncDb") and 0 < min(a[0], a[1]) < 1e-6:
        # PyTensor's fraction, and so Ember's, gives NaN for such shapes (1 - x
        # rounds to 1 after its symmetry swap, or 200 terms do not converge).
        return True
    if op in ("GammaInc", "GammaIncC", "BetaInc", "GammaIncDa", "BetaIncDa", "BetaIncDb"):
        return any(abs(v) > 1e4 or (v != 0 and abs(v) < 1e-30) for v in a)
    if op in ("I0", "I1", "I0e", "I1e", "J0", "J1", "Gamma", "GammaLn", "Psi", "TriGamma"):
        return abs(a[0]) > 1e15
    if op == "PolyGamma":  # n > 170: n! overflows (inf or NaN, tests/unit/test_math_special.cpp)
        return a[0] > 170 or abs(a[1]) > 1e15
    if op in ("Sin", "Cos", "Tan"):
        return False
    return False


class Slow(Exception):
    pass


def _alarm(signum, frame):
    raise Slow()


def ulp_error(got, want, size=None):
    """Error of float got against exact want, in ulp of size (default |want|) rounded."""
    w = float(want)
    if math.isinf(w):
        return 0.0 if got == w else math.inf
    if math.isinf(got):
        return math.inf
    w = float(size) if size is not None else w
    u = math.ulp(w) if w != 0 else math.ulp(0.0)
    return float(abs(mp.mpf(got) - want) / u)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--dump", help="use this dump instead of running ember")
    ap.add_argument("--ops", help="comma-separated ops to check (default: every op of BOUND)")
    args = ap.parse_args()
    if not args.dump and not args.ember:
        ap.error("--ember or --dump is required")
    bound = BOUND
    wanted = set(args.ops.split(",")) if args.ops else set(BOUND)

    signal.signal(signal.SIGALRM, _alarm)
    path = args.dump
    if not path:
        fd, path = tempfile.mkstemp(suffix=".tsv")
        os.close(fd)
        subprocess.run([args.ember, "fuzz", "--seed", str(args.seed), "--dump-samples", path,
                        "--samples", str(args.samples)], check=True)
    stats = {}
    for line in open(path):
        cells = line.rstrip("\n").split("\t")
        op, vals = cells[0], [float(c) for c in cells[1:]]
        if args.ops and op not in wanted:
            continue
        a, got = vals[:-1], vals[-1]
        s = stats.setdefault(op, {"n": 0, "in_domain": 0, "worst": 0.0, "worst_at": None,
                                  "bad": [], "skipped": 0})
        s["n"] += 1
        if op not in bound:
            s["bad"].append((a, got, "an op this check does not know"))
            continue
        if any(math.isnan(v) for v in a):
            if not math.isnan(got) and not (op == "XlogY0" and a[0] == 0):  # xlogy0(0, y) = 0
                s["bad"].append((a, got, "NaN input gave a number"))
            continue
        if too_costly(op, a):
            s["skipped"] += 1
            continue
        try:
            signal.setitimer(signal.ITIMER_REAL, 2.0)  # mpmath can take very long far out
            want = ref(op, a)
        except (ValueError, ZeroDivisionError, OverflowError, mp.libmp.NoConvergence, Slow):
            s["skipped"] += 1
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if want is TINY:
            if not abs(got) < 2.2250738585072014e-308:
                s["bad"].append((a, got, "expected a result below the normal range (or 0)"))
            continue
        if want is POLE:
            if not (math.isinf(got) or math.isnan(got)):
                s["bad"].append((a, got, "at a pole, expected inf or NaN"))
            continue
        if want is None or isinstance(want, mp.mpc) or mp.isnan(want):
            if not math.isnan(got):
                s["bad"].append((a, got, "outside the domain, expected NaN"))
            continue
        s["in_domain"] += 1
        if math.isnan(got):
            s["bad"].append((a, got, "NaN, expected %s" % mp.nstr(want, 17)))
            continue
        err = ulp_error(got, want, scale(op, a, want))
        limit = max(bound[op], exp_bound(op, want))
        if err > s["worst"]:
            s["worst"], s["worst_at"] = err, (a, got, mp.nstr(want, 20))
        if err > limit:
            s["bad"].append((a, got, "%.3g ulp, expected %s" % (err, mp.nstr(want, 20))))

    if not stats:
        print("the dump holds no samples: nothing checked")
        return 1
    failed = 0
    for op in sorted(wanted - set(stats)):
        print("%-10s FAIL not in the dump" % op)
        failed += 1
    for op in sorted(stats):
        s = stats[op]
        if not s["in_domain"] and op in bound:
            s["bad"].append(([], math.nan, "no point in the domain: nothing checked"))
        status = "ok" if not s["bad"] else "FAIL"
        failed += bool(s["bad"])
        print("%-10s %-4s %4d samples, %4d in domain, %3d skipped, worst %.3g ulp (bound %s)"
              % (op, status, s["n"], s["in_domain"], s["skipped"], s["worst"], bound.get(op, "none")))
        for a, got, why in s["bad"][:5]:
            print("    %s(%s) = %r: %s" % (op, ", ".join(repr(v) for v in a), got, why))
    print("%d ops checked, %d failed" % (len(stats), failed))
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
