// Regularized incomplete beta I_x(a, b) as scipy.special.betainc(a, b, x):
// the Cephes incbet method (power series for small b x, else one of two
// continued fractions after the symmetry swap), run per lane with masks.
// The prefactor x^a (1-x)^b / B(a, b) avoids cancelling huge logarithms:
// for a, b >= 10 it is formed around the mean x0 = a/(a+b) from
// d = x (a+b) - a (an exact product) and log1pmx, as Didonato-Morris do.
#include "interp/math/math.hpp"
#include "interp/math/special.hpp"

namespace ember::math::simd {
namespace {
using namespace special;

constexpr double kEps = 1.11022302462515654042e-16;
constexpr double kBig = 4.503599627370496e15;
constexpr double kBigInv = 2.22044604925031308085e-16;
constexpr double kInv2Pi = 0.15915494309189533577;
constexpr int kMaxIter = 1000;

// lgamma(big + s) - lgamma(big) for big >= 10 (Stirling's terms, no cancellation).
D lgamma_shift(D big, D s) {
  D c = big + s;
  return (big - D(0.5)) * log1p(s / big) + s * log(c) - s + stirling_corr(c) - stirling_corr(big);
}

// x^a (1-x)^b / B(a, b), given log x, log(1-x) and d = x (a+b) - a.
D power_terms(D a, D b, D x, D xc, D lx, D lxc, D d) {
  B both = a >= D(10.0) && b >= D(10.0);
  D as = select(both, a, D(10.0)), bs = select(both, b, D(10.0));
  D cs = as + bs;
  D e_mean = as * log1pmx(d / as, x * cs / as) + bs * log1pmx(neg(d) / bs, xc * cs / bs) - stirling_corr(as) - stirling_corr(bs) +
             stirling_corr(cs);
  D mean = sqrt(as * bs / cs * D(kInv2Pi)) * exp(e_mean);
  // One of a, b >= 10: -log B = lgamma(big + small) - lgamma(big) - lgamma(small).
  B a_big = a >= D(10.0) && !both;
  B b_big = b >= D(10.0) && !both;
  D big = select(a_big, a, select(b_big, b, D(10.0)));
  D small = select(a_big, b, select(b_big, a, D(1.0)));
  D nlb_mixed = lgamma_shift(big, small) - lgamma_pos(small);
  D ta = select(a_big || b_big, D(1.0), a), tb = select(a_big || b_big, D(1.0), b);
  D nlb_small = lgamma_pos(ta + tb) - lgamma_pos(ta) - lgamma_pos(tb);
  D nlb = select(a_big || b_big, nlb_mixed, nlb_small);
  D other = exp(a * lx + b * lxc + nlb);
  return select(both, mean, other);
}

// Power series (Cephes pseries) divided by the prefactor x^a (1-x)^b / B(a, b).
D pseries_sum(D a, D b, D x, B on) {
  D ai = D(1.0) / a;
  D u = (D(1.0) - b) * x;
  D t1 = u / (a + D(1.0));
  D t = u, run(0.0), s(0.0), n(2.0);
  D z = D(kEps) * ai;
  B act = on && abs(t1) > z;
  // The recurrence runs on every lane, only the sum is frozen (incomplete_gamma.cpp).
  for (int i = 0; i < kMaxIter && xsimd::any(act); ++i) {
    D un = (n - b) * x / n;
    t = t * un;
    D v = t / (a + n);
    run = run + v;
    s = select(act, run, s);
    n = n + D(1.0);
    act = act && abs(v) > z;
  }
  return s + t1 + ai;
}

// Continued fractions (Cephes incbcf when second = false, incbd when true).
template <bool Second>
D fraction(D a, D b, D x, D xc, B on) {
  D k1 = a, k2 = Second ? b - D(1.0) : a + b, k3 = a, k4 = a + D(1.0);
  D k5(1.0), k6 = Second ? a + b : b - D(1.0), k7 = a + D(1.0), k8 = a + D(2.0);
  D z = Second ? x / xc : x;
  D pkm2(0.0), qkm2(1.0), pkm1(1.0), qkm1(1.0), ans(1.0);
  B act = on;
  for (int n = 0; n < kMaxIter && xsimd::any(act); ++n) {
    D xk = neg(z * k1 * k2) / (k3 * k4);
    D pk = pkm1 + pkm2 * xk, qk = qkm1 + qkm2 * xk;
    pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
    xk = (z * k5 * k6) / (k7 * k8);
    pk = pkm1 + pkm2 * xk, qk = qkm1 + qkm2 * xk;
    pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
    B ok = qk != D(0.0);
    D r = pk / qk;
    B rz = ok && r != D(0.0);
    D t = select(rz, abs((ans - r) / r), D(1.0));
    ans = select(act && ok, r, ans);
    act = act && !(t < D(3.0 * kEps));
    k1 = k1 + D(1.0), k3 = k3 + D(2.0), k4 = k4 + D(2.0), k5 = k5 + D(1.0);
    k7 = k7 + D(2.0), k8 = k8 + D(2.0);
    k2 = Second ? k2 - D(1.0) : k2 + D(1.0);
    k6 = Second ? k6 + D(1.0) : k6 - D(1.0);
    // Rescaled behind a branch, off the recurrence's chain (incomplete_gamma.cpp).
    const B down = abs(qk) + abs(pk) > D(kBig), up = abs(qk) < D(kBigInv) || abs(pk) < D(kBigInv);
    if (xsimd::any(down || up)) {
      const D f = select(down, D(kBigInv), select(up, D(kBig), D(1.0)));
      pkm2 = pkm2 * f, pkm1 = pkm1 * f, qkm2 = qkm2 * f, qkm1 = qkm1 * f;
    }
  }
  return ans;
}

// dI_x(p, q)/dp (WrtP) or /dq by Boik and Robison-Cox's continued fraction
// (J. Stat. Softw. 3(1), 1998), as PyTensor's betainc_grad: at least 3 and at
// most 200 convergents, NaN unless one changes the result by at most 1e-12 of
// max(|result|, 1e-12). That floor stops PyTensor at the third convergent once
// the result is below ~1e-24 (2e-9 relative error seen at 1e-44), so this
// stops only at 1e-12 relative, or after the 200th. Lanes not `on` compute
// garbage. n is a double: PyTensor's int16 n**3 wraps from n = 32 on.
template <bool WrtP>
D betainc_cf_der(D p, D q, D x, B on) {
  constexpr double kThreshold = 1e-12;
  D f = (q * x) / (p * (D(1.0) - x));
  D lx = log(x), lxc = log1p(neg(x));
  D K = exp(p * lx + (q - D(1.0)) * lxc - log(p) - (lgamma_pos(p) + (lgamma_pos(q) - lgamma_pos(p + q))));
  D dK = WrtP ? lx - D(1.0) / p + digamma(p + q) - digamma(p) : lxc + digamma(p + q) - digamma(q);
  D pp = p * p, ff = f * f, qq = q * q, pf = p * f;
  D am2(1.0), am1(1.0), bm2(0.0), bm1(1.0), dam2(0.0), dam1(0.0), dbm2(0.0), dbm1(0.0);
  D der(0.0);
  B act = on, ok(false);
  for (int n = 1; n <= 200 && xsimd::any(act); ++n) {
    const D dn(static_cast<double>(n));
    D p2n = p + D(2.0) * dn;
    D a_n, b_n, da_n, db_n;
    if (n == 1) {
      a_n = pf * (q - D(1.0)) / (q * (p + D(1.0)));
      da_n = WrtP ? neg(pf * (q - D(1.0))) / (q * ((p + D(1.0)) * (p + D(1.0)))) : pf / (q * (p + D(1.0)));
    } else {
      D m3 = p2n - D(3.0), m2 = p2n - D(2.0), m1 = p2n - D(1.0);
      D nm1 = dn - D(1.0), pn1 = p + dn - D(1.0);
      a_n = pp * ff * nm1 / qq * ((p + q + dn - D(2.0)) * pn1 * (q - dn) / (m3 * (m2 * m2) * m1));
      if (WrtP) {
        D ppp = pp * p, n2 = dn * dn, n3 = n2 * dn;
        D n1v = neg(nm1) * ff * pp * (q - dn);
        D n2a = (D(-8.0) + D(8.0) * p + D(8.0) * q) * n3;
        D n2b = (D(16.0) * pp + (D(-44.0) + D(20.0) * q) * p + D(26.0) - D(24.0) * q) * n2;
        D n2c = (D(10.0) * ppp + (D(14.0) * q - D(46.0)) * pp + (D(-40.0) * q + D(66.0)) * p - D(28.0) + D(24.0) * q) * dn;
        D n2d = D(2.0) * (pp * pp) + (D(-13.0) + D(3.0) * q) * ppp + (D(-14.0) * q + D(30.0)) * pp;
        D n2e = (D(-29.0) + D(19.0) * q) * p + D(10.0) - D(8.0) * q;
        D d1 = qq * (m3 * m3), d2 = (m2 * m2 * m2) * (m1 * m1);
        da_n = (n1v / d1) * (n2a + n2b + n2c + n2d + n2e) / d2;
      } else {
        da_n = (pp * ff / qq) * nm1 * pn1 * (D(2.0) * q + p - D(2.0)) / (m3 * (m2 * m2) * m1);
      }
    }
    D m2 = p2n - D(2.0);
    b_n = (D(2.0) * (pf + D(2.0) * q) * dn * (dn + p - D(1.0)) + p * q * (p - D(2.0) - pf)) / (q * m2 * p2n);
    if (WrtP) {
      D q4 = D(4.0) * q, p4 = D(4.0) * p;
      db_n = (pf / q) * ((neg(p4) - q4 + D(4.0)) * (dn * dn) + (p4 - D(4.0) + q4 - D(2.0) * pp) * dn + pp * q) /
             ((m2 * m2) * (p2n * p2n));
    } else {
      db_n = neg(pp * f) / (q * m2 * p2n);
    }
    D A = a_n * am2 + b_n * am1, Bv = a_n * bm2 + b_n * bm1;
    D dA = da_n * am2 + a_n * dam2 + db_n * am1 + b_n * dam1;
    D dB = da_n * bm2 + a_n * dbm2 + db_n * bm1 + b_n * dbm1;
    am2 = am1, am1 = A, bm2 = bm1, bm1 = Bv;
    dam2 = dam1, dam1 = dA, dbm2 = dbm1, dbm1 = dB;
    D F1 = A / Bv;
    D F2 = (dA - F1 * dB) / Bv;
    D dnew = K * (F1 * dK + F2);
    if (n >= 3) {
      D step = abs(der - dnew), scale = abs(dnew);
      ok = ok || (act && step <= D(kThreshold) * select(scale > D(kThreshold), scale, D(kThreshold)));
      der = select(act, dnew, der);
      act = act && !(step <= D(kThreshold) * scale);
    }
  }
  return select(ok, der, nan());
}

// PyTensor's split: the fraction for I_x(p, q) where x <= p / (p + q), else
// for 1 - I_{1-x}(q, p). 0 at x = 0 and x = 1 (I is 0 or 1 for every p, q
// there; PyTensor gives NaN at one of the two), NaN outside p, q in (0, inf)
// and x in [0, 1].
template <bool WrtA>
D betainc_der(D a, D b, D x) {
  B valid = a > D(0.0) && b > D(0.0) && a < inf() && b < inf() && x >= D(0.0) && x <= D(1.0);
  B on = valid && x > D(0.0) && x < D(1.0);
  D av = select(on, a, D(1.0)), bv = select(on, b, D(1.0)), xv = select(on, x, D(0.5));
  B flip = xv > av / (av + bv);
  B direct = on && !flip, flipped = on && flip;
  D r(0.0);
  if (xsimd::any(direct)) r = select(direct, betainc_cf_der<WrtA>(av, bv, xv, direct), r);
  if (xsimd::any(flipped))
    r = select(flipped, neg(betainc_cf_der<!WrtA>(bv, av, D(1.0) - xv, flipped)), r);
  return select(valid, select(on, r, D(0.0)), nan());
}

}  // namespace

D betainc_da(D a, D b, D x) { return betainc_der<true>(a, b, x); }
D betainc_db(D a, D b, D x) { return betainc_der<false>(a, b, x); }

D betainc(D a, D b, D x) {
  B valid = a > D(0.0) && b > D(0.0) && a < inf() && b < inf() && x > D(0.0) && x < D(1.0);
  D av = select(valid, a, D(1.0)), bv = select(valid, b, D(1.0)), xv = select(valid, x, D(0.5));
  D xcv = D(1.0) - xv;
  B ps0 = bv * xv <= D(1.0) && xv <= D(0.95);
  // Also swap when that turns the problem into the power series: the continued
  // fraction loses digits for large a, tiny b, x near 1.
  B ps1 = av * xcv <= D(1.0) && xcv <= D(0.95);
  B swap = !ps0 && (xv > av / (av + bv) || ps1);
  D A = select(swap, bv, av), Bb = select(swap, av, bv);
  D X = select(swap, xcv, xv), XC = select(swap, xv, xcv);
  // Logs of x and 1 - x from the exact input; d = x (a+b) - a, negated by the swap.
  D lx = log(xv), lxc = log1p(neg(xv));
  D LX = select(swap, lxc, lx), LXC = select(swap, lx, lxc);
  D p, e;
  two_prod(xv, av + bv, p, e);
  D d = (p - av) + e;
  D Dd = select(swap, neg(d), d);
  D pre = power_terms(A, Bb, X, XC, LX, LXC, Dd);

  B ps = valid && Bb * X <= D(1.0) && X <= D(0.95);
  B cf = valid && !ps;
  B second = (X * (A + Bb - D(2.0)) - (A - D(1.0))) >= D(0.0);
  D w(1.0);
  if (xsimd::any(ps)) {
    // The series carries x^a / B(a, b) only: divide out (1-x)^b.
    D s = pseries_sum(A, Bb, X, ps);
    w = select(ps, s * exp(neg(Bb * LXC)), w);
  }
  B c1 = cf && !second, c2 = cf && second;
  if (xsimd::any(c1)) w = select(c1, fraction<false>(A, Bb, X, XC, c1) / A, w);
  if (xsimd::any(c2)) w = select(c2, fraction<true>(A, Bb, X, XC, c2) / (XC * A), w);
  D t = pre * w;
  D r = select(swap, D(1.0) - t, t);
  // Edges as SciPy.
  r = select(x == D(0.0), D(0.0), select(x == D(1.0), D(1.0), r));
  r = select(a == D(0.0) && b > D(0.0) && x > D(0.0), D(1.0), r);
  r = select(b == D(0.0) && a > D(0.0) && x < D(1.0), D(0.0), r);
  r = select(a == inf() && b < inf() && x < D(1.0), D(0.0), r);
  r = select(b == inf() && a < inf() && x > D(0.0), D(1.0), r);
  B bad = a < D(0.0) || b < D(0.0) || x < D(0.0) || x > D(1.0) || (a == D(0.0) && b == D(0.0)) ||
          (a == inf() && b == inf());
  return select(bad || is_nan(a) || is_nan(b) || is_nan(x), nan(), r);
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY3(betainc)
EMBER_MATH_ARRAY3(betainc_da)
EMBER_MATH_ARRAY3(betainc_db)
