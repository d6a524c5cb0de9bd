// Array drivers for the batch functions: full batches, then one padded batch
// for the tail. Every lane is computed independently, so the tail and the
// scalar path give the same bits as the body. y may alias an input exactly.
#pragma once
#include <cstdint>

#include "interp/math/simd.hpp"
#include "interp/math/wide.hpp"

namespace ember::math::detail {

using simd::D;
constexpr int64_t W = D::size;

// Loads the last n < W elements into a full batch, padding with 1.0.
inline D load_tail(const double* p, int64_t n) {
  alignas(64) double buf[W];
  for (int64_t k = 0; k < W; ++k) buf[k] = k < n ? p[k] : 1.0;
  return D::load_aligned(buf);
}
inline void store_tail(D v, double* p, int64_t n) {
  alignas(64) double buf[W];
  v.store_aligned(buf);
  for (int64_t k = 0; k < n; ++k) p[k] = buf[k];
}

// One element (the one-element kernels' calls) is broadcast to every lane:
// building a padded batch from 8-byte stores stalls the 32-byte load on
// store forwarding. Lanes are independent, so lane 0 is the same either way.
template <class F>
void apply1(int64_t n, const double* x, double* y, F f) {
  if (n == 1) return store_tail(f(D(x[0])), y, 1);
  int64_t i = 0;
  for (; i + W <= n; i += W) f(D::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n) store_tail(f(load_tail(x + i, n - i)), y + i, n - i);
}

template <class F>
void apply2(int64_t n, const double* a, const double* b, double* y, F f) {
  if (n == 1) return store_tail(f(D(a[0]), D(b[0])), y, 1);
  int64_t i = 0;
  for (; i + W <= n; i += W)
    f(D::load_unaligned(a + i), D::load_unaligned(b + i)).store_unaligned(y + i);
  if (i < n) store_tail(f(load_tail(a + i, n - i), load_tail(b + i, n - i)), y + i, n - i);
}

template <class F>
void apply3(int64_t n, const double* a, const double* b, const double* c, double* y, F f) {
  if (n == 1) return store_tail(f(D(a[0]), D(b[0]), D(c[0])), y, 1);
  int64_t i = 0;
  for (; i + W <= n; i += W)
    f(D::load_unaligned(a + i), D::load_unaligned(b + i), D::load_unaligned(c + i))
        .store_unaligned(y + i);
  if (i < n)
    store_tail(f(load_tail(a + i, n - i), load_tail(b + i, n - i), load_tail(c + i, n - i)),
               y + i, n - i);
}

// A function of one argument with K results (a group the JIT makes in one
// call): f(x, r) sets *r[k] where r[k] is not null; y[k] null: not wanted.
template <int K, class F>
void apply_group(int64_t n, const double* x, double* const* y, F f) {
  D v[K];
  D* r[K];
  for (int k = 0; k < K; ++k) r[k] = y[k] ? &v[k] : nullptr;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    f(D::load_unaligned(x + i), r);
    for (int k = 0; k < K; ++k)
      if (y[k]) v[k].store_unaligned(y[k] + i);
  }
  if (i < n) {
    f(n == 1 ? D(x[0]) : load_tail(x + i, n - i), r);
    for (int k = 0; k < K; ++k)
      if (y[k]) store_tail(v[k], y[k] + i, n - i);
  }
}

}  // namespace ember::math::detail

// The array loops inline the batch function and what it calls in the same
// file: a call per batch (stack realignment, spills) costs about as much as
// exp itself. Inlining does not change bits (no contraction, no fast-math).
#define EMBER_MATH_FLATTEN __attribute__((flatten))

// Defines ember::math::f over arrays and its extern "C" twin for JIT code.
// With a wide copy of the library in the build (EMBER_MATH_HAS_WIDE, the
// AVX-512 one in namespace ember_wide, wide.hpp), ember::math::f runs it
// when math::wide() says so; the copy itself (EMBER_MATH_WIDE_COPY) has
// neither the switch nor the C entry points.
#if defined(EMBER_MATH_WIDE_COPY)
#define EMBER_MATH_WIDE_DECL(...)
#define EMBER_MATH_TO_WIDE(f, ...)
#define EMBER_MATH_C_ENTRY(proto, ...)
#else
#if defined(EMBER_MATH_HAS_WIDE)
#define EMBER_MATH_WIDE_DECL(f, ...) \
  namespace ember_wide::math {       \
  void f(__VA_ARGS__);               \
  }
// One narrow batch (a one-element kernel's call) stays narrow: the wide
// batch would compute twice the lanes for the same element.
#define EMBER_MATH_TO_WIDE(f, ...) \
  if (n > detail::W && ::ember::math::wide()) return ::ember_wide::math::f(__VA_ARGS__);
#else
#define EMBER_MATH_WIDE_DECL(...)
#define EMBER_MATH_TO_WIDE(f, ...)
#endif
#define EMBER_MATH_C_ENTRY(proto, ...) \
  extern "C" void proto { ember::math::__VA_ARGS__; }
#endif

#define EMBER_MATH_ARRAY1(f)                                                        \
  EMBER_MATH_WIDE_DECL(f, int64_t, const double*, double*)                          \
  EMBER_MATH_FLATTEN                                                                \
  void ember::math::f(int64_t n, const double* x, double* y) {                      \
    EMBER_MATH_TO_WIDE(f, n, x, y)                                                  \
    detail::apply1(n, x, y, [](simd::D v) { return simd::f(v); });                  \
  }                                                                                 \
  EMBER_MATH_C_ENTRY(ember_math_##f(int64_t n, const double* x, double* y), f(n, x, y))
#define EMBER_MATH_ARRAY2(f)                                                        \
  EMBER_MATH_WIDE_DECL(f, int64_t, const double*, const double*, double*)           \
  EMBER_MATH_FLATTEN                                                                \
  void ember::math::f(int64_t n, const double* a, const double* b, double* y) {     \
    EMBER_MATH_TO_WIDE(f, n, a, b, y)                                               \
    detail::apply2(n, a, b, y, [](simd::D u, simd::D v) { return simd::f(u, v); }); \
  }                                                                                 \
  EMBER_MATH_C_ENTRY(ember_math_##f(int64_t n, const double* a, const double* b, double* y), f(n, a, b, y))
#define EMBER_MATH_ARRAY3(f)                                                        \
  EMBER_MATH_WIDE_DECL(f, int64_t, const double*, const double*, const double*, double*) \
  EMBER_MATH_FLATTEN                                                                \
  void ember::math::f(int64_t n, const double* a, const double* b, const double* c, \
                      double* y) {                                                  \
    EMBER_MATH_TO_WIDE(f, n, a, b, c, y)                                            \
    detail::apply3(n, a, b, c, y,                                                   \
                   [](simd::D u, simd::D v, simd::D w) { return simd::f(u, v, w); }); \
  }                                                                                 \
  EMBER_MATH_C_ENTRY(ember_math_##f(int64_t n, const double* a, const double* b, const double* c, double* y), \
                     f(n, a, b, c, y))
