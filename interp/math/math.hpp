// The one math library. Every function is implemented once, lane-wise over
// xsimd batches with no FMA, so any batch width and the scalar path (a batch
// whose other lanes are ignored) give the same bits; JIT code calls the
// extern "C" entry points, which run this very code.
#pragma once
#include <cstdint>

namespace ember::math {

// y[i] = f(x[i]) for i in [0, n). Arrays may alias (y == x is allowed).
#define M1(E, f) void f(int64_t n, const double* x, double* y);
#define M2(E, f) void f(int64_t n, const double* a, const double* b, double* y);
#define M3(E, f) void f(int64_t n, const double* a, const double* b, const double* c, double* y);
#include "interp/math/math.def"
#undef M1
#undef M2
#undef M3

// Scalar conveniences over the same code (tests, constant folding).
#define M1(E, f) inline double f(double x) { double y; f(1, &x, &y); return y; }
#define M2(E, f) inline double f(double a, double b) { double y; f(1, &a, &b, &y); return y; }
#define M3(E, f) \
  inline double f(double a, double b, double c) { double y; f(1, &a, &b, &c, &y); return y; }
#include "interp/math/math.def"
#undef M1
#undef M2
#undef M3

}  // namespace ember::math

extern "C" {
#define M1(E, f) void ember_math_##f(int64_t n, const double* x, double* y);
#define M2(E, f) void ember_math_##f(int64_t n, const double* a, const double* b, double* y);
#define M3(E, f) \
  void ember_math_##f(int64_t n, const double* a, const double* b, const double* c, double* y);
#include "interp/math/math.def"
#undef M1
#undef M2
#undef M3
}
