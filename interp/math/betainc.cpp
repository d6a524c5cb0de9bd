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
  D t = u, s(0.0), n(2.0);
  D z = D(kEps) * ai;
  B act = on && abs(t1) > z;
  for (int i = 0; i < kMaxIter && xsimd::any(act); ++i) {
    D un = (n - b) * x / n;
    t = select(act, t * un, t);
    D v = t / (a + n);
    s = select(act, s + v, s);
    n = select(act, n + D(1.0), n);
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
    D m = abs(qk) + abs(pk);
    D f = select(m > D(kBig), D(kBigInv), select(abs(qk) < D(kBigInv) || abs(pk) < D(kBigInv), D(kBig), D(1.0)));
    pkm2 = pkm2 * f, pkm1 = pkm1 * f, qkm2 = qkm2 * f, qkm1 = qkm1 * f;
  }
  return ans;
}

}  // namespace

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
