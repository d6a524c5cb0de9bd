// sigmoid, softplus, log1mexp (PyTensor's definitions), xlogx, xlogy0.
#include "interp/math/apply.hpp"
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"

namespace ember::math::simd {

D sigmoid(D x) {
  // exp(-|x|) never overflows; e/(1+e) keeps precision for x < 0.
  D e = exp_inline(neg(abs(x)));
  D s = D(1.0) + e;
  D se = (D(1.0) - s) + e;  // 1 + e = s + se exactly (Fast2Sum: e <= 1)
  D y = div_dd(select(x < D(0.0), e, D(1.0)), s, se);
  return select(is_nan(x), x, y);
}

void sigmoid_pm(D x, D& rx, D& rn) {
  // sigmoid's steps for x and y = -x, whose |y| is |x|: each shared value once.
  const D y = neg(x);
  D e = exp_inline(neg(abs(x)));
  D s = D(1.0) + e;
  D se = (D(1.0) - s) + e;
  D inv = D(1.0) / s, dh = trunc32(s), dl = s - dh;
  rx = select(is_nan(x), x, div_dd_by(select(x < D(0.0), e, D(1.0)), s, se, inv, dh, dl));
  rn = select(is_nan(y), y, div_dd_by(select(y < D(0.0), e, D(1.0)), s, se, inv, dh, dl));
}

D softplus(D x) {
  // One exp serves both exp(x) (x < 18) and exp(-x) (x >= 18); log1p runs
  // only if some lane needs it (lanes stay independent: same bits).
  B lo = x < D(18.0);
  D ex = exp_inline(select(lo, x, neg(x)));
  B mid = x >= D(-37.0) && lo;
  D l1p = xsimd::any(mid) ? log1p_inline(ex) : ex;
  D y = select(x < D(-37.0), ex, select(lo, l1p, select(x < D(33.3), x + ex, x)));
  return select(is_nan(x), x, y);
}

D log1mexp(D x) {
  B lo = x < D(-0.6931471805599453);
  D a(0.0), b(0.0);
  if (xsimd::any(lo)) a = log1p(neg(exp(x)));
  if (!xsimd::all(lo)) b = log(neg(expm1(x)));
  D y = select(lo, a, b);
  return select(is_nan(x), x, y);
}

D xlogx(D x) { return select(x == D(0.0), D(0.0), x * log(x)); }

D xlogy0(D x, D y) { return select(x == D(0.0), D(0.0), x * log(y)); }

}  // namespace ember::math::simd

EMBER_MATH_ARRAY1(sigmoid)

// rx[i] = sigmoid(x[i]), rn[i] = sigmoid(-x[i]); outputs may alias x exactly.
EMBER_MATH_WIDE_DECL(sigmoid_pm, int64_t, const double*, double*, double*)
EMBER_MATH_FLATTEN
void ember::math::sigmoid_pm(int64_t n, const double* x, double* rx, double* rn) {
  EMBER_MATH_TO_WIDE(sigmoid_pm, n, x, rx, rn)
  using detail::W;
  simd::D a, b;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    simd::sigmoid_pm(simd::D::load_unaligned(x + i), a, b);
    a.store_unaligned(rx + i);
    b.store_unaligned(rn + i);
  }
  if (i < n) {
    simd::sigmoid_pm(detail::load_tail(x + i, n - i), a, b);
    detail::store_tail(a, rx + i, n - i);
    detail::store_tail(b, rn + i, n - i);
  }
}
EMBER_MATH_C_ENTRY(ember_math_sigmoid_pm(int64_t n, const double* x, double* rx, double* rn),
                   sigmoid_pm(n, x, rx, rn))
EMBER_MATH_ARRAY1(softplus)
EMBER_MATH_ARRAY1(log1mexp)
EMBER_MATH_ARRAY1(xlogx)
EMBER_MATH_ARRAY2(xlogy0)
