// sinh, cosh, tanh, asinh, acosh, atanh via this library's exp, expm1, log
// and log1p (fdlibm's formulas and thresholds).
#include "interp/math/apply.hpp"
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"

namespace ember::math::simd {
namespace {
constexpr double kLn2 = 6.93147180559945286227e-01;
constexpr double kSinhOverflow = 710.47586007394394;  // sinh/cosh(x) overflows above
}  // namespace

// sinh and cosh compute a range's formula only when some lane of the batch
// is in it; the selects give every lane the bits they gave when all were
// computed.
D sinh(D x) {
  D a = abs(x);
  const B small = a < D(22.0);
  D y(0.0);
  if (xsimd::any(small)) {
    D t = expm1(a);
    D ysmall = select(a < D(1.0), D(2.0) * t - t * t / (t + D(1.0)), t + t / (t + D(1.0)));
    y = D(0.5) * ysmall;
  }
  if (!xsimd::all(small)) y = select(small, y, exp_scaled(a, D(-1.0)));  // exp(|x|)/2, one rounding
  y = select(a > D(kSinhOverflow), inf(), y);
  y = copysign(y, x);
  y = select(a < D(0x1p-28), x, y);
  return select(is_nan(x), x, y);
}

D cosh(D x) {
  D a = abs(x);
  const B tiny = a < D(0.34657359027997264), mid = !tiny && a < D(22.0);
  D y(0.0);
  if (!xsimd::all(tiny || mid)) y = exp_scaled(a, D(-1.0));
  if (xsimd::any(mid)) {
    D e = exp(a);
    y = select(mid, D(0.5) * e + D(0.5) / e, y);
  }
  if (xsimd::any(tiny)) {
    D t = expm1(a);
    D w = D(1.0) + t;
    y = select(tiny, D(1.0) + (t * t) / (w + w), y);
  }
  y = select(a > D(kSinhOverflow), inf(), y);
  return select(is_nan(x), x, y);
}

D tanh(D x) {
  // t/(t + 2) with t = expm1(2|x|) >= 0: the quotient damps t's error
  // (d ln z / d ln t = 2/(t + 2) <= 1) and t + 2 is kept exact.
  D a = abs(x);
  D t = expm1(D(2.0) * a);
  D s, e;
  two_sum(t, D(2.0), s, e);
  D z = div_dd(t, s, e);
  z = select(a >= D(22.0), D(1.0), z);
  z = copysign(z, x);
  z = select(a < D(0x1p-28), x, z);
  return select(is_nan(x), x, z);
}

D asinh(D x) {
  D a = abs(x);
  B huge = a > D(0x1p28);
  D t = x * x;
  D larg = select(huge, a, D(2.0) * a + D(1.0) / (xsimd::sqrt(t + D(1.0)) + a));
  D ylog = log(larg) + select(huge, D(kLn2), D(0.0));
  D ysmall = log1p(a + t / (D(1.0) + xsimd::sqrt(D(1.0) + t)));
  D y = copysign(select(a > D(2.0), ylog, ysmall), x);
  y = select(a < D(0x1p-28), x, y);
  y = select(a == inf(), x, y);
  return select(is_nan(x), x, y);
}

D acosh(D x) {
  B huge = x > D(0x1p28);
  D larg = select(huge, x, D(2.0) * x - D(1.0) / (x + xsimd::sqrt(x * x - D(1.0))));
  D ylog = log(larg) + select(huge, D(kLn2), D(0.0));
  // 1 < x <= 2: log1p(t + sqrt(2t + t^2)), t = x - 1 exact. The square root
  // and the sum are carried as hi + lo; the lo part enters as a first-order
  // correction of log1p, so only log1p's own error remains.
  D t = x - D(1.0);
  D p, pe, h, he;
  two_prod(t, t, p, pe);
  two_sum(D(2.0) * t, p, h, he);  // h + he + pe = 2t + t^2
  D rh = xsimd::sqrt(h);
  D q, qe;
  two_prod(rh, rh, q, qe);
  D rl = (((h - q) - qe) + (he + pe)) / (D(2.0) * rh);
  rl = select(h == D(0.0), D(0.0), rl);
  D w, we;
  two_sum(t, rh, w, we);
  we = we + rl;
  D ysmall = log1p(w) + we / (D(1.0) + w);
  D y = select(x > D(2.0), ylog, ysmall);
  y = select(x == inf(), x, y);
  y = select(x < D(1.0), nan(), y);
  return select(is_nan(x), x, y);
}

D atanh(D x) {
  D a = abs(x);
  D two_a = a + a;
  D arg = select(a < D(0.5), two_a + two_a * a / (D(1.0) - a), two_a / (D(1.0) - a));
  D y = copysign(D(0.5) * log1p(arg), x);
  y = select(a < D(0x1p-28), x, y);
  y = select(a == D(1.0), copysign(inf(), x), y);
  y = select(a > D(1.0), nan(), y);
  return select(is_nan(x), x, y);
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY1(sinh)
EMBER_MATH_ARRAY1(cosh)
EMBER_MATH_ARRAY1(tanh)
EMBER_MATH_ARRAY1(asinh)
EMBER_MATH_ARRAY1(acosh)
EMBER_MATH_ARRAY1(atanh)
