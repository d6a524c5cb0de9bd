// The one math library: one function per row of interp/scalar_ops.def whose
// math column names one. Every function is implemented once, lane-wise over
// xsimd batches with no FMA, so any batch width and the scalar path (a batch
// whose other lanes are ignored) give the same bits; JIT code calls the
// extern "C" entry points, which run this very code.
#pragma once
#include <cstdint>
#include <string_view>

#include "interp/scalar_op.hpp"

#define EMBER_MATH_ROW(arity, f) EMBER_MATH_ROW##arity(f)

namespace ember::math {

// y[i] = f(x[i]) for i in [0, n). Arrays may alias (y == x is allowed).
#define EMBER_MATH_ROW1(f) void f(int64_t n, const double* x, double* y);
#define EMBER_MATH_ROW2(f) void f(int64_t n, const double* a, const double* b, double* y);
#define EMBER_MATH_ROW3(f) void f(int64_t n, const double* a, const double* b, const double* c, double* y);
#define X(E, name, arity, kind, flags, fn) EMBER_IF_MATH(fn, EMBER_MATH_ROW, arity, fn)
#include "interp/scalar_ops.def"
#undef X
#undef EMBER_MATH_ROW1
#undef EMBER_MATH_ROW2
#undef EMBER_MATH_ROW3

// Up to four results computed together (the JIT groups the calls):
// softplus(x), softplus(-x), sigmoid(x), sigmoid(-x), each where its
// pointer is not null, with the bits of its own call. Outputs may alias x.
void logistic(int64_t n, const double* x, double* sp, double* spn, double* sg, double* sgn);
// sin(x) and cos(x), each where its pointer is not null, with the bits of
// its own call. Outputs may alias x.
void sincos(int64_t n, const double* x, double* s, double* c);
// r[i] = pow(x[0], y[i]) (one base, as a uniform input gives), with pow's
// bits: the base's logarithm is computed once.
void pow_base(int64_t n, const double* x, const double* y, double* r);

// Scalar conveniences over the same code (tests, constant folding).
#define EMBER_MATH_ROW1(f) inline double f(double x) { double y; f(1, &x, &y); return y; }
#define EMBER_MATH_ROW2(f) inline double f(double a, double b) { double y; f(1, &a, &b, &y); return y; }
#define EMBER_MATH_ROW3(f) \
  inline double f(double a, double b, double c) { double y; f(1, &a, &b, &c, &y); return y; }
#define X(E, name, arity, kind, flags, fn) EMBER_IF_MATH(fn, EMBER_MATH_ROW, arity, fn)
#include "interp/scalar_ops.def"
#undef X
#undef EMBER_MATH_ROW1
#undef EMBER_MATH_ROW2
#undef EMBER_MATH_ROW3

}  // namespace ember::math

extern "C" {
#define EMBER_MATH_ROW1(f) void ember_math_##f(int64_t n, const double* x, double* y);
#define EMBER_MATH_ROW2(f) void ember_math_##f(int64_t n, const double* a, const double* b, double* y);
#define EMBER_MATH_ROW3(f) \
  void ember_math_##f(int64_t n, const double* a, const double* b, const double* c, double* y);
#define X(E, name, arity, kind, flags, fn) EMBER_IF_MATH(fn, EMBER_MATH_ROW, arity, fn)
#include "interp/scalar_ops.def"
#undef X
#undef EMBER_MATH_ROW1
#undef EMBER_MATH_ROW2
#undef EMBER_MATH_ROW3
void ember_math_logistic(int64_t n, const double* x, double* sp, double* spn, double* sg, double* sgn);
void ember_math_sincos(int64_t n, const double* x, double* s, double* c);
void ember_math_pow_base(int64_t n, const double* x, const double* y, double* r);
}

namespace ember::math {

// The extern "C" entry point of each function with its op, for code that
// picks one at run time (the JIT's symbols, tools, tests). Only the pointer
// of the function's arity is set.
struct Entry {
  interp::ScalarOp op;
  std::string_view name;  // ember::math::NAME, ember_math_NAME
  int arity;
  void (*f1)(int64_t n, const double* x, double* y);
  void (*f2)(int64_t n, const double* a, const double* b, double* y);
  void (*f3)(int64_t n, const double* a, const double* b, const double* c, double* y);

  void* address() const {
    return f1 ? reinterpret_cast<void*>(f1) : f2 ? reinterpret_cast<void*>(f2) : reinterpret_cast<void*>(f3);
  }
  // y[i] = f(x[0][i], ...) for i in [0, n): x holds `arity` arrays.
  void operator()(int64_t n, const double* const* x, double* y) const {
    if (f1) f1(n, x[0], y);
    else if (f2) f2(n, x[0], x[1], y);
    else f3(n, x[0], x[1], x[2], y);
  }
  // f of one element: x holds `arity` inputs.
  double operator()(const double* x) const {
    const double* in[3] = {x, x + 1, x + 2};
    double y;
    (*this)(1, in, &y);
    return y;
  }
};

#define EMBER_MATH_ROW1(f) &ember_math_##f, nullptr, nullptr
#define EMBER_MATH_ROW2(f) nullptr, &ember_math_##f, nullptr
#define EMBER_MATH_ROW3(f) nullptr, nullptr, &ember_math_##f
#define EMBER_MATH_ENTRY(arity, E, f) {interp::ScalarOp::E, #f, arity, EMBER_MATH_ROW(arity, f)},
inline constexpr Entry kEntries[] = {
#define X(E, name, arity, kind, flags, fn) EMBER_IF_MATH(fn, EMBER_MATH_ENTRY, arity, E, fn)
#include "interp/scalar_ops.def"
#undef X
};
#undef EMBER_MATH_ENTRY
#undef EMBER_MATH_ROW1
#undef EMBER_MATH_ROW2
#undef EMBER_MATH_ROW3

// The entry of op's math function, nullptr if it has none.
constexpr const Entry* entry(interp::ScalarOp op) {
  for (const Entry& e : kEntries)
    if (e.op == op) return &e;
  return nullptr;
}

}  // namespace ember::math

#undef EMBER_MATH_ROW
