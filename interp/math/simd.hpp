// Batch-level math: every function works lane by lane on xsimd batches using
// only IEEE add/sub/mul/div/sqrt, compares, selects and bit operations (no
// FMA, no libm), so the result of a lane never depends on the batch width or
// on the other lanes. The array entry points in math.hpp run these.
#pragma once
#include <cstdint>
#include <xsimd/xsimd.hpp>

namespace ember::math::simd {

using D = xsimd::batch<double>;
using B = xsimd::batch_bool<double>;
using U = xsimd::batch<uint64_t>;

// ---- elementary (interp/math/exp_log.cpp, trig.cpp, ...) ----
D exp(D x);
D exp2(D x);
D expm1(D x);
D log(D x);
D log2(D x);
D log10(D x);
D log1p(D x);
D sin(D x);
D cos(D x);
// sin(x) and cos(x), each where its pointer is not null: one reduction and
// one pair of kernels serve both. The bits of each one's own call.
void sincos(D x, D* s, D* c);
D tan(D x);
D asin(D x);
D acos(D x);
D atan(D x);
D atan2(D y, D x);
D sinh(D x);
D cosh(D x);
D tanh(D x);
D asinh(D x);
D acosh(D x);
D atanh(D x);
D sigmoid(D x);
D softplus(D x);
// softplus(x), softplus(-x), sigmoid(x), sigmoid(-x) (-x by sign flip, as
// the Neg op) at once, each where its pointer is not null: one exp, one
// log1p and one reciprocal serve them all. The bits of each one's own call.
void logistic(D x, D* sp, D* spn, D* sg, D* sgn);
D log1mexp(D x);
D pow(D x, D y);
D xlogx(D x);
D xlogy0(D x, D y);

// ---- small helpers ----
inline U bits(D x) { return xsimd::bitwise_cast<U>(x); }
inline D from_bits(U u) { return xsimd::bitwise_cast<D>(u); }
inline D from_bits(uint64_t u) { return from_bits(U(u)); }

// Sign flip by bit operation: xsimd's unary minus is 0 - x on some targets
// (AVX-512), which turns -0 into +0.
inline D neg(D x) { return from_bits(bits(x) ^ U(0x8000000000000000ull)); }
inline D abs(D x) { return from_bits(bits(x) & U(0x7fffffffffffffffull)); }
// Sign bit of s, magnitude of m.
inline D copysign(D m, D s) {
  return from_bits((bits(m) & U(0x7fffffffffffffffull)) | (bits(s) & U(0x8000000000000000ull)));
}
// Sign bit of x as a mask (true for -0.0 and negative NaNs too).
inline B signbit(D x) { return copysign(D(1.0), x) < D(0.0); }
inline B is_nan(D x) { return !(x == x); }  // xsimd's != is ordered
inline D inf() { return D(__builtin_inf()); }
inline D nan() { return D(__builtin_nan("")); }

// Round to nearest integer (ties to even), valid for |x| < 2^51; NaN stays NaN.
inline D rint(D x) {
  const D magic(6755399441055744.0);  // 1.5 * 2^52
  return (x + magic) - magic;
}
// 2^n for integer-valued n in [-1022, 1023] (exact power of two).
inline D pow2i(D n) {
  const D magic(6755399441055744.0 + 1023.0);
  return from_bits(bits(n + magic) << 52);
}
// x * 2^n for integer-valued n in [-2044, 2046]: two exact-power steps so a
// subnormal result is rounded once. For |x| in [2^-500, 2^500] (the callers'
// x is near 1) one step gives the same bits when every |n| <= 1022.
inline D ldexp(D x, D n) {
  if (xsimd::all(abs(n) <= D(1022.0))) return x * pow2i(n);
  D n1 = rint(n * D(0.5));
  return x * pow2i(n1) * pow2i(n - n1);
}
// Mantissa m in [1, 2) and unbiased exponent e of a positive finite normal x.
inline D mantissa(D x) {
  return from_bits((bits(x) & U(0x000fffffffffffffull)) | U(0x3ff0000000000000ull));
}
inline D exponent(D x) {
  // Biased exponent placed in the low mantissa bits of 2^52, then unbiased.
  U e = bits(x) >> 52 & U(0x7ff);
  return from_bits(e | U(0x4330000000000000ull)) - D(4503599627370496.0 + 1023.0);
}
// x with the low 32 bits of its representation cleared (exact-product splits).
inline D trunc32(D x) { return from_bits(bits(x) & U(0xffffffff00000000ull)); }

// a + b = s + e exactly (Knuth's TwoSum).
inline void two_sum(D a, D b, D& s, D& e) {
  s = a + b;
  D bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}
// a * b = p + e exactly (Dekker, no FMA; |a|, |b| < 2^995).
inline void two_prod(D a, D b, D& p, D& e) {
  const D split(134217729.0);  // 2^27 + 1
  D ca = split * a, cb = split * b;
  D ah = ca - (ca - a), al = a - ah;
  D bh = cb - (cb - b), bl = b - bh;
  p = a * b;
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}
// num / (dhi + dlo), |dlo| <= ulp(dhi): one correction step, ~0.5 ulp. One
// division: q = num * (1/dhi) may be an ulp off, the exact residual corrects
// it, and the correction (~1 ulp of q) needs only a few correct bits.
// The residual splits q and dhi at 21 bits by masking (cheaper than Dekker's
// multiply): every partial product is exact but the last (lo*lo, ~2^-42 of
// q*dhi), whose rounding (~2^-95 relative) is far below what the correction needs.
// div_dd with the parts that depend on the divisor alone given: inv =
// 1/dhi, dh = trunc32(dhi), dl = dhi - dh (several quotients by one divisor).
inline D div_dd_by(D num, D dhi, D dlo, D inv, D dh, D dl) {
  D q = num * inv;
  D qh = trunc32(q), ql = q - qh;
  D p = q * dhi;
  D pe = ((qh * dh - p) + qh * dl + ql * dh) + ql * dl;
  D r = ((num - p) - pe) - q * dlo;
  return q + r * inv;
}
inline D div_dd(D num, D dhi, D dlo) {
  D dh = trunc32(dhi);
  return div_dd_by(num, dhi, dlo, D(1.0) / dhi, dh, dhi - dh);
}

// Polynomial c0 + x*(c1 + x*(c2 + ...)), Horner without FMA.
inline D horner(D, double c0) { return D(c0); }
template <class... C>
inline D horner(D x, double c0, double c1, C... cs) {
  return D(c0) + x * horner(x, c1, cs...);
}

}  // namespace ember::math::simd
