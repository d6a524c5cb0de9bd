// exp, exp2, expm1, log, log2, log10, log1p. Algorithms follow fdlibm/FreeBSD
// msun (Sun's error analysis, < 1 ulp), rewritten branch-free: every lane
// computes the general path and special cases are selected at the end.
#include "interp/math/apply.hpp"
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"

namespace ember::math::simd {

D exp2(D x) {
  D k = rint(x);
  D f = x - k;  // exact, |f| <= 0.5
  // r = f*ln2 as hi + rest: f split at 21 bits so fh*ln2h is exact.
  constexpr double kLn2H = 0.6931467056274414;      // ln2 to 21 bits
  constexpr double kLn2L = 4.7493250390316726e-07;  // ln2 - kLn2H
  D fh = trunc32(f);
  D fl = f - fh;
  D hi = fh * D(kLn2H);
  D rest = fl * D(0.6931471805599453) + fh * D(kLn2L);
  D y = exp_core(hi, neg(rest), k);
  y = select(x >= D(1024.0), inf(), y);
  y = select(x <= D(-1075.0), D(0.0), y);
  return select(is_nan(x), x, y);
}

D expm1(D x) {
  D k = rint(x * D(kInvLn2));
  D hi = x - k * D(kLn2Hi);
  D lo = k * D(kLn2Lo);
  D r = hi - lo;
  D c = (hi - r) - lo;  // 0 when k == 0
  D hfx = D(0.5) * r;
  D hxs = r * hfx;
  D r1 = D(1.0) + hxs * horner(hxs, -3.33333333333331316428e-02, 1.58730158725481460165e-03,
                               -7.93650757867487942473e-05, 4.00821782732936239552e-06,
                               -2.01099218183624371326e-07);
  D t = D(3.0) - r1 * hfx;
  D e = hxs * ((r1 - t) / (D(6.0) - r * t));
  D y0 = r - (r * e - hxs);                    // k == 0
  D e2 = (r * (e - c) - c) - hxs;              // k != 0
  D ym1 = D(0.5) * (r - e2) - D(0.5);          // k == -1
  D yp1 = select(r < D(-0.25), D(-2.0) * (e2 - (r + D(0.5))), D(1.0) + D(2.0) * (r - e2));
  D yfar = ldexp(D(1.0) - (e2 - r), k) - D(1.0);  // k <= -2 or k > 56
  D ymid = ldexp((D(1.0) - pow2i(neg(k))) - (e2 - r), k);           // 2 <= k < 20
  D yhigh = ldexp(((r - (e2 + pow2i(neg(k)))) + D(1.0)), k);        // 20 <= k <= 56
  D y = select(k > D(56.0) || k < D(-1.0), yfar, select(k >= D(20.0), yhigh, ymid));
  y = select(k == D(1.0), yp1, y);
  y = select(k == D(-1.0), ym1, y);
  y = select(k == D(0.0), y0, y);
  y = select(x > D(kExpOverflow), inf(), y);
  y = select(x < D(-38.816242111356935), D(-1.0), y);  // |exp(x)| < ulp(1)/2
  y = select(x == D(0.0), x, y);                       // keeps -0
  return select(is_nan(x), x, y);
}


// log2 and log10: f - f*f/2 split exactly into hi + lo, then scaled in
// extra precision (msun e_log2.c / e_log10.c).
D log2(D x) {
  D k, f;
  log_reduce(x, k, f);
  D hfsq = D(0.5) * f * f;
  D r = log1p_kernel(f);
  D hi = trunc32(f - hfsq);
  D lo = ((f - hi) - hfsq) + r;
  constexpr double kIvLn2Hi = 1.44269504072144627571e+00;
  constexpr double kIvLn2Lo = 1.67517131648865118353e-10;
  D vhi = hi * D(kIvLn2Hi);
  D vlo = (lo + hi) * D(kIvLn2Lo) + lo * D(kIvLn2Hi);
  D w = k + vhi;
  vlo = vlo + ((k - w) + vhi);
  return log_specials(x, vlo + w);
}

D log10(D x) {
  D k, f;
  log_reduce(x, k, f);
  D hfsq = D(0.5) * f * f;
  D r = log1p_kernel(f);
  D hi = trunc32(f - hfsq);
  D lo = ((f - hi) - hfsq) + r;
  constexpr double kIvLn10Hi = 4.34294481878168880939e-01;
  constexpr double kIvLn10Lo = 2.50829467116452752298e-11;
  constexpr double kLog10_2Hi = 3.01029995663611771306e-01;
  constexpr double kLog10_2Lo = 3.69423907715893078616e-13;
  D vhi = hi * D(kIvLn10Hi);
  D ykhi = k * D(kLog10_2Hi);
  D vlo = k * D(kLog10_2Lo) + (lo + hi) * D(kIvLn10Lo) + lo * D(kIvLn10Hi);
  D w = ykhi + vhi;
  vlo = vlo + ((ykhi - w) + vhi);
  return log_specials(x, vlo + w);
}

// The public exp, log and log1p are kernels.hpp's inline bodies.
D exp(D x) { return exp_inline(x); }
D log(D x) { return log_inline(x); }
D log1p(D x) { return log1p_inline(x); }

}  // namespace ember::math::simd

namespace ember::math {
using simd::D;
}
EMBER_MATH_ARRAY1(exp)
EMBER_MATH_ARRAY1(exp2)
EMBER_MATH_ARRAY1(expm1)
EMBER_MATH_ARRAY1(log)
EMBER_MATH_ARRAY1(log2)
EMBER_MATH_ARRAY1(log10)
EMBER_MATH_ARRAY1(log1p)
