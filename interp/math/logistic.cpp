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

// softplus(x) from e = exp(-|x|) and l = log1p(e) (l is read only for
// -37 <= x < 18): PyTensor's regions, with x + log1p(exp(-x)) for 0 <= x < 18
// so that x and -x share one exp and one log1p.
static D softplus_of(D x, D e, D l) {
  D y = select(x < D(-37.0), e, select(x < D(0.0), l, select(x < D(18.0), x + l, select(x < D(33.3), x + e, x))));
  return select(is_nan(x), x, y);
}

D softplus(D x) {
  D e = exp_inline(neg(abs(x)));
  // log1p only if some lane needs it (lanes stay independent: same bits).
  D l = xsimd::any(x >= D(-37.0) && x < D(18.0)) ? log1p_inline(e) : e;
  return softplus_of(x, e, l);
}

void logistic(D x, D* sp, D* spn, D* sg, D* sgn) {
  // The steps of softplus and sigmoid for x and y = -x, whose |y| is |x|:
  // each shared value once.
  const D y = neg(x);
  D e = exp_inline(neg(abs(x)));
  if (sp || spn) {
    B need = (x >= D(-37.0) && x < D(18.0)) || (y >= D(-37.0) && y < D(18.0));
    D l = xsimd::any(need) ? log1p_inline(e) : e;
    if (sp) *sp = softplus_of(x, e, l);
    if (spn) *spn = softplus_of(y, e, l);
  }
  if (sg || sgn) {
    D s = D(1.0) + e;
    D se = (D(1.0) - s) + e;
    D inv = D(1.0) / s, dh = trunc32(s), dl = s - dh;
    if (sg) *sg = select(is_nan(x), x, div_dd_by(select(x < D(0.0), e, D(1.0)), s, se, inv, dh, dl));
    if (sgn) *sgn = select(is_nan(y), y, div_dd_by(select(y < D(0.0), e, D(1.0)), s, se, inv, dh, dl));
  }
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

// y[0..3][i]: softplus(x[i]), softplus(-x[i]), sigmoid(x[i]), sigmoid(-x[i]),
// each only where y[k] is not null; outputs may alias x exactly.
EMBER_MATH_WIDE_DECL(logistic, int64_t, const double*, double*, double*, double*, double*)
EMBER_MATH_FLATTEN
void ember::math::logistic(int64_t n, const double* x, double* sp, double* spn, double* sg, double* sgn) {
  EMBER_MATH_TO_WIDE(logistic, n, x, sp, spn, sg, sgn)
  double* const y[4] = {sp, spn, sg, sgn};
  detail::apply_group<4>(n, x, y, [](simd::D v, simd::D* const* r) { simd::logistic(v, r[0], r[1], r[2], r[3]); });
}
EMBER_MATH_C_ENTRY(ember_math_logistic(int64_t n, const double* x, double* sp, double* spn, double* sg, double* sgn),
                   logistic(n, x, sp, spn, sg, sgn))
EMBER_MATH_ARRAY1(softplus)
EMBER_MATH_ARRAY1(log1mexp)
EMBER_MATH_ARRAY1(xlogx)
EMBER_MATH_ARRAY2(xlogy0)
