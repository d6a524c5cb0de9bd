"""Coefficients of L(e) = lgamma(2 + e)/e on [-0.5, 0.5] for interp/math/gamma.cpp
(kL2): the degree-20 polynomial interpolating L at the 21 Chebyshev nodes,
computed with mpmath at 60 digits, printed highest degree first, with the
interpolation's and the rounded coefficients' worst relative error on a grid.
Usage: python3 tests/gen/fit_lgamma2p.py [degree=20]"""
import sys

import mpmath as mp

mp.mp.dps = 60


def L(e):
    if abs(e) < mp.mpf(10) ** -30:
        return 1 - mp.euler  # psi(2)
    return mp.loggamma(2 + e) / e


def main():
    d = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n = d + 1
    nodes = [mp.mpf(0.5) * mp.cos(mp.pi * (k + mp.mpf(0.5)) / n) for k in range(n)]
    a = mp.matrix([[x**j for j in range(n)] for x in nodes])
    c = mp.lu_solve(a, mp.matrix([L(x) for x in nodes]))
    c = [c[j] for j in range(n)]
    grid = [mp.mpf(-0.5) + mp.mpf(k) / 400 for k in range(401)]
    refs = [L(x) for x in grid]
    for label, cs in (("interpolation", c), ("double coefficients", [mp.mpf(float(v)) for v in c])):
        err = max(abs(mp.polyval(cs[::-1], x) - r) / abs(r) for x, r in zip(grid, refs))
        print(f"// {label}: worst relative error {float(err):.3g}")
    cd = [float(v) for v in c][::-1]
    print(",\n".join("    " + ", ".join("%.17e" % v for v in cd[i : i + 4]) for i in range(0, len(cd), 4)) + "};")


if __name__ == "__main__":
    main()
