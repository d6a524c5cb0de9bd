// TEMPORARY while the math library is written: weak stand-ins over libm so
// everything links. Each real function in interp/math/ overrides its weak
// twin. This file is deleted once every function in math.def is implemented.
#include <cmath>

#include "interp/math/math.hpp"

namespace ember::math {
namespace {
double sigmoid1(double x) { return 1 / (1 + std::exp(-x)); }
double softplus1(double x) { return x < -37 ? std::exp(x) : x < 18 ? std::log1p(std::exp(x)) : x < 33.3 ? x + std::exp(-x) : x; }
double log1mexp1(double x) { return x < -0.6931471805599453 ? std::log1p(-std::exp(x)) : std::log(-std::expm1(x)); }
double nan1(double) { return NAN; }
double nan2(double, double) { return NAN; }
double nan3(double, double, double) { return NAN; }
double xlogx1(double x) { return x == 0 ? 0 : x * std::log(x); }
double xlogy01(double x, double y) { return x == 0 ? 0 : x * std::log(y); }
}  // namespace

#define W __attribute__((weak))
#define L1(f, g) W void f(int64_t n, const double* x, double* y) { for (int64_t i = 0; i < n; ++i) y[i] = g(x[i]); }
#define L2(f, g) W void f(int64_t n, const double* a, const double* b, double* y) { for (int64_t i = 0; i < n; ++i) y[i] = g(a[i], b[i]); }
#define L3(f, g) W void f(int64_t n, const double* a, const double* b, const double* c, double* y) { for (int64_t i = 0; i < n; ++i) y[i] = g(a[i], b[i], c[i]); }
L1(exp, std::exp) L1(exp2, std::exp2) L1(expm1, std::expm1) L1(log, std::log) L1(log2, std::log2)
L1(log10, std::log10) L1(log1p, std::log1p) L1(sin, std::sin) L1(cos, std::cos) L1(tan, std::tan)
L1(asin, std::asin) L1(acos, std::acos) L1(atan, std::atan) L2(atan2, std::atan2) L1(sinh, std::sinh)
L1(cosh, std::cosh) L1(tanh, std::tanh) L1(asinh, std::asinh) L1(acosh, std::acosh) L1(atanh, std::atanh)
L1(sigmoid, sigmoid1) L1(softplus, softplus1) L1(log1mexp, log1mexp1) L1(erf, std::erf) L1(erfc, std::erfc)
L1(erfcx, nan1) L1(erfinv, nan1) L1(erfcinv, nan1) L1(tgamma, std::tgamma) L1(lgamma, std::lgamma)
L1(digamma, nan1) L1(trigamma, nan1) L2(gammainc, nan2) L2(gammaincc, nan2) L1(i0, nan1) L1(i1, nan1)
L1(i0e, nan1) L1(i1e, nan1) L1(j0, ::j0) L1(j1, ::j1) L3(betainc, nan3) L1(xlogx, xlogx1)
L2(xlogy0, xlogy01) L2(pow, std::pow)
}  // namespace ember::math

extern "C" {
#define M1(E, f) __attribute__((weak)) void ember_math_##f(int64_t n, const double* x, double* y) { ember::math::f(n, x, y); }
#define M2(E, f) __attribute__((weak)) void ember_math_##f(int64_t n, const double* a, const double* b, double* y) { ember::math::f(n, a, b, y); }
#define M3(E, f) __attribute__((weak)) void ember_math_##f(int64_t n, const double* a, const double* b, const double* c, double* y) { ember::math::f(n, a, b, c, y); }
#include "interp/math/math.def"
}
