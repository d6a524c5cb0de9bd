// tgamma, lgamma, digamma, trigamma (and shared helpers: sinpi, cospi,
// log1pmx, Stirling's correction). lgamma uses a degree-20 polynomial for
// lgamma(2+e)/e on |e| <= 0.5 (exact recurrences keep the argument reduction
// exact near the zeros at 1 and 2); tgamma reduces to
// [2,3) by exact recurrences and the Cephes rational; digamma uses the
// Boost/SciPy rational on [1,2] written around its positive root.
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"
#include "interp/math/special.hpp"

namespace ember::math::simd {
namespace special {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kPiLo = 1.2246467991473532e-16;  // pi - kPi
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
constexpr double kLogPi = 1.14472988584940017414;
constexpr double kEuler = 0.57721566490153286061;

// lgamma(2 + e) = e * L(e), |e| <= 0.5: L interpolated at 21 Chebyshev nodes
// (tests/gen/fit_lgamma2p.py; 4e-20 relative from the interpolation, so L's
// error is its coefficients' rounding, as with the 31-term Taylor series,
// coefficients (-1)^k (zeta(k) - 1)/k, that it replaces). Highest degree first.
constexpr double kL2[] = {
    -3.08598547839057716e-08, 6.47256984006472422e-08, -9.55817810163519461e-08, 2.01938354011369146e-07,
    -4.50816822544683818e-07, 9.58420704859498666e-07, -2.03890778256771042e-06, 4.37422348108204819e-06,
    -9.43952620205881794e-06, 2.05072919965638253e-05, -4.49262338206108256e-05, 9.94575066878813967e-05,
    -2.23154758588186148e-04, 5.09669525024195481e-04, -1.19275391169985272e-03, 2.89051033073440449e-03,
    -7.38555102867402471e-03, 2.05808084277846297e-02, -6.73523010531980881e-02, 3.22467033424113203e-01,
    4.22784335098467134e-01};

}  // namespace

D lgamma2p(D e) {
  // c0 + e(c1 + e(c2 + e(c3 + e T))) by Horner (these steps carry the
  // rounding that matters), the tail T = c4 + c5 e + ... (scaled by e^4 <= 1/16)
  // as four Horner chains in e^4 that overlap instead of one long dependency.
  constexpr int N = sizeof kL2 / sizeof kL2[0];  // kL2[N - 1 - i] = c_i
  D e2 = e * e, e4 = e2 * e2;
  D p[4];
  for (int j = 0; j < 4; ++j) {
    int top = 4 + j + (N - 5 - j) / 4 * 4;  // highest power in chain j
    D r(kL2[N - 1 - top]);
    for (int i = top - 4; i >= 4 + j; i -= 4) r = r * e4 + D(kL2[N - 1 - i]);
    p[j] = r;
  }
  D h = (p[0] + e * p[1]) + e2 * (p[2] + e * p[3]);
  for (int i = 3; i >= 0; --i) h = D(kL2[N - 1 - i]) + e * h;
  return e * h;
}

D sinpi(D x) {
  D n = rint(x);
  D r = x - n;  // exact, |r| <= 0.5
  D half = n * D(0.5);
  B odd = rint(half) != half;
  D s = sin(D(kPi) * r);
  s = select(odd, neg(s), s);
  return select(abs(x) < D(4503599627370496.0), s, D(0.0) * x);
}

D cospi(D x) {
  D n = rint(x);
  D r = x - n;
  D half = n * D(0.5);
  B odd = rint(half) != half;
  D c = cos(D(kPi) * r);
  c = select(odd, neg(c), c);
  B big = abs(x) >= D(4503599627370496.0);
  // Beyond 2^52 every double is an integer; beyond 2^53 every one is even.
  B big_odd = big && abs(x) < D(9007199254740992.0) && rint(half) != half;
  return select(big, select(big_odd, D(-1.0), D(1.0)), c);
}

D log1pmx(D t) {
  // Series -t^2/2 + t^3/3 - ... for |t| < 0.25, else log1p(t) - t; each only
  // when some lane needs it (lanes are independent, so the bits are the same).
  B ser = abs(t) < D(0.25);
  D s(0.0), g(0.0);
  if (xsimd::any(ser)) {
    for (int k = 30; k >= 2; --k) s = s * t + D((k % 2 ? 1.0 : -1.0) / k);
    s = s * t * t;
  }
  if (!xsimd::all(ser)) g = log1p(t) - t;
  return select(ser, s, g);
}

D log1pmx(D t, D ratio) { return select(t < D(-0.5), log(ratio) - t, log1pmx(t)); }

D stirling_corr(D x) {
  // sum B_2k / (2k(2k-1) x^(2k-1)), k = 1..8; enough for x >= 10.
  // One division: 1/x as x * (1/x^2); the sum is below 1/120 of lgamma(x) for
  // x >= 10, so that extra rounding is far below an ulp of the result.
  D z = D(1.0) / (x * x);
  D p = horner(z, 1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360, 1.0 / 156,
               -3617.0 / 122400);
  return p * (x * z);
}

D lgamma_pos(D x) {
  // x in [0.5, 1.5): lgamma(x) = lgamma(x + 1) - log x with x + 1 - 2 = x - 1 exact.
  // x in (0, 0.5): one more step, lgamma(x) = lgamma(x + 1) - log x (x + 1 rounded; well conditioned).
  // x in [1.5, 10): subtract 1 until in [1.5, 2.5), multiplying the factors.
  // x >= 10: Stirling. One log and one series call serve all three ranges,
  // and a range no lane is in is skipped (lanes stay independent).
  B tiny = x < D(0.5);
  D xs = select(tiny, x + D(1.0), x);
  B low = xs < D(1.5);
  B big = xs >= D(10.0);
  D u = select(low || big, D(2.0), xs);
  D z(1.0);
  // n = floor(u - 1.5) <= 8 steps down: u - n in [1.5, 2.5) and z = (u - 1)...(u - n)
  // as a product tree of exact factors (no serial loop, no branch per lane count).
  D n = xsimd::floor(u - D(1.5));
  if (xsimd::any(n > D(0.0))) {
    u = u - n;
    D t[8];
    for (int j = 0; j < 8; ++j) t[j] = select(D(double(j)) < n, u + D(double(j)), D(1.0));
    z = ((t[0] * t[1]) * (t[2] * t[3])) * ((t[4] * t[5]) * (t[6] * t[7]));
  }
  D lg = log_inline(select(low || big, xs, z));
  D r;
  if (xsimd::all(big)) {
    r = (xs - D(0.5)) * lg - xs + D(kLogSqrt2Pi) + stirling_corr(xs);
  } else {
    D ser = lgamma2p(select(low, xs - D(1.0), u - D(2.0)));
    r = select(low, ser - lg, lg + ser);
    if (xsimd::any(big)) {
      D xl = select(big, xs, D(10.0));
      r = select(big, (xl - D(0.5)) * lg - xl + D(kLogSqrt2Pi) + stirling_corr(xl), r);
    }
  }
  if (xsimd::any(tiny)) r = select(tiny, r - log(x), r);
  return select(x == inf(), x, r);
}

}  // namespace special

using namespace special;

D lgamma(D x) {
  B negx = x < D(0.0);
  D q = abs(x);
  // (-0.5, 0): lgamma(x) = lgamma(1 + x) - log(-x), so lgamma_pos runs on 1 + x there.
  B near0 = negx && x > D(-0.5);
  D lp = lgamma_pos(select(x == D(0.0), D(1.0), select(near0, x + D(1.0), q)));
  D r = lp;
  if (xsimd::any(negx)) {
    // x <= -0.5: |Gamma(x)| = pi / (q |sin(pi q)| Gamma(q)).
    D s = abs(sinpi(q));
    D refl = D(kLogPi) - log(q * s) - lp;
    r = select(negx, select(near0, lp - log(q), refl), r);
    r = select(negx && (is_int(x) || s == D(0.0)), inf(), r);
  }
  r = select(x == D(0.0), inf(), r);
  r = select(x == -inf(), -inf(), r);  // SciPy's gammaln(-inf)
  return select(is_nan(x), x, r);
}

namespace {
constexpr double kGP[] = {1.60119522476751861407E-4, 1.19135147006586384913E-3, 1.04213797561761569935E-2,
                          4.76367800457137231464E-2, 2.07448227648435975150E-1, 4.94214826801497100753E-1,
                          9.99999999999999996796E-1};
constexpr double kGQ[] = {-2.31581873324120129819E-5, 5.39605580493303397842E-4, -4.45641913851797240494E-3,
                          1.18139785222060435552E-2,  3.58236398605498653373E-2, -2.34591795718243348568E-1,
                          7.14304917030273074085E-2,  1.00000000000000000320E0};
}  // namespace

D tgamma(D x) {
  B finite = abs(x) < inf();
  B pole = x < D(0.0) && is_int(x);
  B over = x >= D(172.0);
  B under = x < D(-185.0);
  B run = finite && !pole && !over && !under && x != D(0.0);
  D u = select(run, x, D(2.5));
  D z(1.0);
  // Down to [2, 3): Gamma(u) = (u - 1) Gamma(u - 1).
  for (;;) {
    B m = u >= D(3.0);
    if (!xsimd::any(m)) break;
    u = select(m, u - D(1.0), u);
    z = select(m, z * u, z);
  }
  // Up to [2, 3): Gamma(u) = Gamma(u + 1) / u; near 0 use Gamma(u) ~ 1/(u (1 + euler u)).
  B small(false);
  for (;;) {
    B m = u < D(2.0) && !small;
    small = small || (m && abs(u) < D(1e-9));
    m = m && !small;
    if (!xsimd::any(m)) break;
    z = select(m, z / u, z);
    u = select(m, u + D(1.0), u);
  }
  D e = u - D(2.0);
  D r = z * polevl(e, kGP) / polevl(e, kGQ);
  r = select(small, z / ((D(1.0) + D(kEuler) * u) * u), r);
  // Sign below -185 where |Gamma| underflows: negative when floor(x) is odd.
  D fl = xsimd::floor(x) * D(0.5);
  D tiny = select(xsimd::floor(fl) != fl, D(-0.0), D(0.0));
  r = select(under, tiny, r);
  r = select(over, inf(), r);
  r = select(x == D(0.0), copysign(inf(), x), r);
  r = select(pole || x == -inf(), nan(), r);
  return select(is_nan(x), x, r);
}

namespace {
constexpr double kPsiA[] = {8.33333333333333333333E-2,  -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                            -4.16666666666666666667E-3, 3.96825396825396825397E-3,  -8.33333333333333333333E-3,
                            8.33333333333333333333E-2};
constexpr double kPsiP[] = {-0.0020713321167745952, -0.045251321448739056, -0.28919126444774784,
                            -0.65031853770896507,   -0.32555031186804491,  0.25479851061131551};
constexpr double kPsiQ[] = {-0.55789841321675513e-6, 0.0021284987017821144, 0.054151797245674225,
                            0.43593529692665969,     1.4606242909763515,    2.0767117023730469,
                            1.0};
// Positive root of digamma as a sum of three doubles.
constexpr double kRoot1 = 1569415565.0 / 1073741824.0;
constexpr double kRoot2 = (381566830.0 / 1073741824.0) / 1073741824.0;
constexpr double kRoot3 = 0.9016312093258695918615325266959189453125e-19;
constexpr double kPsiY = 0.99558162689208984;  // float constant of the Boost fit
// First negative root of digamma (the double nearest), psi there, and the
// Taylor coefficients psi^(k)(root)/k!, k = 19..1 (mpmath).
constexpr double kNegRoot = -0.5040830082644554;
constexpr double kNegRootVal = 7.289763902976895e-17;
constexpr double kNegRootC[] = {
    2126602.372596875, -163451.7934270022, 530280.3912420176, -36529.945969485576,
    132262.95480834588, -8051.818155363481, 32997.785655255044, -1743.3646088673593,
    8234.667099203069, -368.5783503832184, 2055.5357119463315, -75.37700066344615,
    513.2704629562861, -14.706721735530332, 128.27342343090902, -2.7610116487908227,
    32.258572064915505, -0.8093454625306499, 8.939798558792134};
}  // namespace

// pi * cot(pi r), |r| <= 0.5, with pi r as a double-double so its rounding
// (amplified by cot's slope) does not cost absolute accuracy.
D pi_cotpi(D r) {
  D ph, pl;
  two_prod(D(kPi), r, ph, pl);
  pl = pl + D(kPiLo) * r;
  D c = D(1.0) / tan(ph);
  // cot(ph + pl) = cot(ph) - pl (1 + cot^2(ph)); (pl c) c stays finite for small r.
  D general = D(kPi) * (c - (pl + (pl * c) * c));
  // pi cot(pi r) = 1/r - pi^2 r/3 - ...: 1/r alone below 1e-9 (and no overflow in c).
  return select(abs(r) < D(1e-9), D(1.0) / r, general);
}

D digamma(D x) {
  // Negative x: psi(x) = psi(1 - x) - pi cot(pi x), with pi x reduced exactly.
  B neg = x < D(0.0);
  D r0 = x - rint(x);
  D refl(0.0);
  if (xsimd::any(neg)) refl = select(neg, D(0.0) - pi_cotpi(select(neg, r0, D(0.25))), D(0.0));
  D v = select(neg, D(1.0) - x, x);
  v = select(v == inf() || is_nan(v) || v == D(0.0), D(1.0), v);
  // (0, 1): psi(v) = psi(v + 1) - 1/v.
  D y(0.0);
  B below1 = v < D(1.0);
  if (xsimd::any(below1)) {
    y = select(below1, D(-1.0) / v, y);
    v = select(below1, v + D(1.0), v);
  }
  // (2, 10): psi(v) = psi(w) + sum_{j < n} 1/(w + j), w = v - n in (1, 2],
  // n = ceil(v - 2) <= 8 (every w + j exact), largest w + j first. Above
  // w + 1 the terms go in pairs, 1/a + 1/b = (a + b)/(ab) with a + b exact:
  // independent divisions instead of a loop whose length depends on the
  // lanes, and a pair no lane reaches is skipped. 1/(w + 1) and 1/w, the
  // largest terms, are divided separately (a pair's extra rounding there
  // showed as 3.5e-16 instead of 2.7e-16 on the reference table).
  B step = v > D(2.0) && v < D(10.0);
  if (xsimd::any(step)) {
    D n = select(step, xsimd::ceil(v - D(2.0)), D(0.0));
    D w = v - n;
    D sum(0.0);
    for (int i = 3; i >= 1; --i) {
      if (!xsimd::any(n > D(2.0 * i))) continue;  // adds 0 to every lane
      D a = w + D(2.0 * i), b = w + D(2.0 * i + 1);
      B one = D(2.0 * i) < n, both = D(2.0 * i + 1) < n;
      D num = select(both, a + b, select(one, D(1.0), D(0.0)));
      D den = select(both, a * b, select(one, a, D(1.0)));
      sum = sum + num / den;
    }
    if (xsimd::any(n > D(1.0))) sum = sum + select(n > D(1.0), D(1.0) / (w + D(1.0)), D(0.0));
    y = y + (sum + select(step, D(1.0) / w, D(0.0)));
    v = w;
  }
  // [1, 2]: the rational around the root; above: the asymptotic series. A
  // branch no lane takes is skipped.
  B on12 = v <= D(2.0);
  D small(0.0), large(0.0);
  if (xsimd::any(on12)) {
    D w = select(on12, v, D(1.5));
    D g = ((w - D(kRoot1)) - D(kRoot2)) - D(kRoot3);
    D rat = polevl(w - D(1.0), kPsiP) / polevl(w - D(1.0), kPsiQ);
    small = g * D(kPsiY) + g * rat;
  }
  if (!xsimd::all(on12)) {
    D vl = select(on12, D(10.0), v);
    // One division: 1/v = v * (1/v^2) (its extra rounding is below 0.02 ulp of psi).
    D z = D(1.0) / (vl * vl);
    D corr = select(vl < D(1e17), z * polevl(z, kPsiA), D(0.0));
    B fine = vl < D(1e150);  // vl * vl finite
    D half_inv = D(0.5) * (vl * z);
    if (!xsimd::all(fine)) half_inv = select(fine, half_inv, D(0.5) / vl);
    large = log_inline(vl) - half_inv - corr;
  }
  D r = y + select(on12, small, large) + refl;
  // Next to the first negative root, where the reflection cancels: its Taylor series.
  D h = x - D(kNegRoot);  // exact for |h| < 0.05 (Sterbenz)
  B near_root = abs(h) < D(0.05);
  if (xsimd::any(near_root)) r = select(near_root, D(kNegRootVal) + h * polevl(h, kNegRootC), r);
  r = select(x == D(0.0), D(-1.0) / x, r);
  r = select((neg && is_int(x)) || x == -inf(), nan(), r);
  r = select(x == inf(), x, r);
  return select(is_nan(x), x, r);
}

D trigamma(D x) {
  B neg = x <= D(0.0);
  D s(1.0), refl(0.0);
  if (xsimd::any(neg)) {
    s = sinpi(x);
    refl = select(neg, D(kPi * kPi) / (s * s), D(0.0));
  }
  D v = select(neg, D(1.0) - x, x);
  v = select(v == inf() || is_nan(v), D(1.0), v);
  // Up to v >= 10: psi1(v) = psi1(v + 1) + 1/v^2.
  D y(0.0);
  for (int i = 0; i < 10; ++i) {
    B m = v < D(10.0);
    if (!xsimd::any(m)) break;
    y = select(m, y + D(1.0) / (v * v), y);
    v = select(m, v + D(1.0), v);
  }
  D t = D(1.0) / v;
  D t2 = t * t;
  // 1/v + 1/(2v^2) + sum B_2k / v^(2k+1), k = 1..9.
  D series = horner(t2, 1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
                    -3617.0 / 510, 43867.0 / 798);
  D asym = t + D(0.5) * t2 + t2 * t * series;
  D r = y + asym;
  r = select(neg, refl - r, r);
  r = select((neg && (is_int(x) || s == D(0.0))) || x == -inf(), inf(), r);
  r = select(x == inf(), D(0.0), r);
  return select(is_nan(x), x, r);
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY1(tgamma)
EMBER_MATH_ARRAY1(lgamma)
EMBER_MATH_ARRAY1(digamma)
EMBER_MATH_ARRAY1(trigamma)
