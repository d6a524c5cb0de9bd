// Batch-level special functions (erf, gamma family, incomplete gamma/beta,
// Bessel) and the small helpers they share. Same rules as simd.hpp: only
// IEEE add/sub/mul/div/sqrt, compares, selects and bit operations, so a
// lane's result never depends on the batch width or the other lanes.
// Iterations run until every active lane has converged, and a converged
// lane is frozen (its value is no longer updated), so that holds for loops too.
#pragma once
#include <cstddef>

#include "interp/math/apply.hpp"
#include "interp/math/simd.hpp"

namespace ember::math::simd {

D erf(D x);
D erfc(D x);
D erfcx(D x);
D erfinv(D x);
D erfcinv(D x);
D tgamma(D x);
D lgamma(D x);
D digamma(D x);
D trigamma(D x);
D polygamma(D n, D x);
D gammainc(D a, D x);
D gammaincc(D a, D x);
D gammainc_da(D a, D x);
D i0(D x);
D i1(D x);
D i0e(D x);
D i1e(D x);
D j0(D x);
D j1(D x);
D betainc(D a, D b, D x);
D betainc_da(D a, D b, D x);
D betainc_db(D a, D b, D x);

namespace special {

// Cephes-style polynomial, coefficients highest degree first.
template <size_t N>
inline D polevl(D x, const double (&c)[N]) {
  D r(c[0]);
  for (size_t i = 1; i < N; ++i) r = r * x + D(c[i]);
  return r;
}
// Same with an implicit leading coefficient 1.
template <size_t N>
inline D p1evl(D x, const double (&c)[N]) {
  D r = x + D(c[0]);
  for (size_t i = 1; i < N; ++i) r = r * x + D(c[i]);
  return r;
}
// Chebyshev series sum (Cephes chbevl), coefficients highest order first.
template <size_t N>
inline D chbevl(D x, const double (&c)[N]) {
  D b0(c[0]), b1(0.0), b2(0.0);
  for (size_t i = 1; i < N; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + D(c[i]);
  }
  return D(0.5) * (b0 - b2);
}

inline B is_int(D x) { return xsimd::floor(x) == x; }

// log(1 + t) - t, accurate for small |t| (t > -1).
D log1pmx(D t);
// Same, given ratio = 1 + t computed directly (used when t is near -1,
// where 1 + t would lose the digits that t's rounding took away).
D log1pmx(D t, D ratio);
// lgamma(x) - Stirling's main term ((x-0.5)log x - x + log sqrt(2 pi)), x >= 10.
D stirling_corr(D x);
// lgamma(2 + e) for |e| <= 0.5.
D lgamma2p(D e);
// lgamma restricted to x > 0 (shared by lgamma, gammainc, betainc).
D lgamma_pos(D x);
// Reflection helpers: sin(pi x) and cos(pi x) with exact argument reduction.
D sinpi(D x);
D cospi(D x);

}  // namespace special
}  // namespace ember::math::simd
