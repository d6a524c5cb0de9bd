// Internal building blocks shared between the math library's source files.
#pragma once
#include "interp/math/simd.hpp"

namespace ember::math::simd {

// exp, log and log1p as inline functions, with their shared pieces: the
// public ones (exp_log.cpp) are these, and callers in other files use them
// directly (a call per batch costs about as much as exp itself).
namespace exp_log_detail {
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 32 significant bits
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kExpOverflow = 7.09782712893383973096e+02;
constexpr double kExpUnderflow = -7.45133219101941108420e+02;
}  // namespace exp_log_detail
using namespace exp_log_detail;

// Splits positive finite x into 2^k * (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)).
inline void log_reduce(D x, D& k, D& f) {
  B sub = x < D(2.2250738585072014e-308);
  D xs = x;
  k = exponent(x);
  if (xsimd::any(sub)) {
    xs = select(sub, x * D(18014398509481984.0), x);  // * 2^54
    k = exponent(xs) - select(sub, D(54.0), D(0.0));
  }
  D m = mantissa(xs);
  B big = m > D(1.4142135623730951);
  m = select(big, m * D(0.5), m);
  k = k + select(big, D(1.0), D(0.0));
  f = m - D(1.0);
}

// Special values shared by the logarithms: NaN for x < 0 or NaN, -inf at 0, +inf at +inf.
inline D log_specials(D x, D r) {
  if (xsimd::all(x > D(0.0) && x < inf())) return r;
  r = select(x == inf(), x, r);
  r = select(x == D(0.0), neg(inf()), r);
  r = select(x < D(0.0), nan(), r);
  return select(is_nan(x), x, r);
}

// exp(hi - lo) * 2^k for |hi - lo| <= ~0.35, lo tiny against hi, integer k in
// [-2044, 2046] (fdlibm's exp kernel, < 1 ulp).
inline D exp_core(D hi, D lo, D k) {
  D r = hi - lo;
  D t = r * r;
  D c = r - t * horner(t, 1.66666666666666019037e-01, -2.77777777770155933842e-03,
                       6.61375632143793436117e-05, -1.65339022054652515390e-06,
                       4.13813679705723846039e-08);
  D y = D(1.0) - ((lo - (r * c) / (D(2.0) - c)) - hi);
  return ldexp(y, k);
}

// exp(x) * 2^s for integer s, without intermediate overflow; x within
// [-746, 711] or the result is garbage (callers select special cases).
inline D exp_scaled(D x, D s) {
  D k = rint(x * D(kInvLn2));
  D hi = x - k * D(kLn2Hi);  // exact: k*kLn2Hi has <= 43 bits
  D lo = k * D(kLn2Lo);
  return exp_core(hi, lo, k + s);
}

inline D exp_inline(D x) {
  D y = exp_scaled(x, D(0.0));
  if (xsimd::all(abs(x) < D(708.0))) return y;
  y = select(x > D(kExpOverflow), inf(), y);
  y = select(x < D(kExpUnderflow), D(0.0), y);
  return select(is_nan(x), x, y);
}

// log(1+f) - f + f*f/2 for f in [sqrt(2)/2 - 1, sqrt(2) - 1] (msun k_log1p).
inline D log1p_kernel(D f) {
  D s = f / (D(2.0) + f);
  D z = s * s;
  D w = z * z;
  D t1 = w * horner(w, 3.999999999940941908e-01, 2.222219843214978396e-01,
                    1.531383769920937332e-01);
  D t2 = z * horner(w, 6.666666666666735130e-01, 2.857142874366239149e-01,
                    1.818357216161805012e-01, 1.479819860511658591e-01);
  D hfsq = D(0.5) * f * f;
  return s * (hfsq + (t2 + t1));
}

inline D log_inline(D x) {
  D k, f;
  log_reduce(x, k, f);
  D hfsq = D(0.5) * f * f;
  D r = k * D(kLn2Hi) - ((hfsq - (log1p_kernel(f) + k * D(kLn2Lo))) - f);
  return log_specials(x, r);
}

inline D log1p_inline(D x) {
  D u = D(1.0) + x;
  D k, f;
  log_reduce(u, k, f);
  // u = 1 + x rounded; c/u corrects log(u) to log(1 + x).
  D ke = exponent(u);
  D c = select(ke > D(0.0), D(1.0) - (u - x), x - (u - D(1.0))) / u;
  B near = x > D(-0.2928932188134524) && x < D(0.41421356237309503);
  f = select(near, x, f);
  k = select(near, D(0.0), k);
  c = select(near, D(0.0), c);
  D hfsq = D(0.5) * f * f;
  D s = f / (D(2.0) + f);
  D z = s * s;
  D R = z * horner(z, 6.666666666666735130e-01, 3.999999999940941908e-01,
                   2.857142874366239149e-01, 2.222219843214978396e-01,
                   1.818357216161805012e-01, 1.531383769920937332e-01,
                   1.479819860511658591e-01);
  D r = k * D(kLn2Hi) - ((hfsq - (s * (hfsq + R) + (k * D(kLn2Lo) + c))) - f);
  if (xsimd::all(x > D(-1.0) && x < inf() && x != D(0.0))) return r;
  r = select(x == inf(), x, r);
  r = select(x == D(-1.0), neg(inf()), r);
  r = select(x < D(-1.0), nan(), r);
  r = select(x == D(0.0), x, r);  // keeps -0
  return select(is_nan(x), x, r);
}

}  // namespace ember::math::simd
