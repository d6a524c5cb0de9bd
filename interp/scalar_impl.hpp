// Semantics of every inline scalar op, written once as generic code. For
// floats T is double/float or an xsimd batch of them (the VM's vector loops),
// so the scalar path and the vector path run the same IEEE operations in the
// same order and agree to the bit. Integer ops take int64_t holding a value
// of any integer dtype (the VM wraps results to narrower dtypes afterwards).
// A code generator mirrors these functions one for one.
//
// Ops with a math function in interp/scalar_ops.def (exp, log, ..., float
// pow) are not here: they are calls into the math library.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "interp/dtype.hpp"
#include "interp/scalar_op.hpp"

namespace ember::interp::impl {

// ---- primitives with one spelling for scalars and batches -----------------
template <class T> struct is_batch : std::false_type {};
template <class T, class A> struct is_batch<xsimd::batch<T, A>> : std::true_type {};
template <class T> inline constexpr bool is_int_v = std::is_integral_v<T>;

inline double sel(bool c, double a, double b) { return c ? a : b; }
inline float sel(bool c, float a, float b) { return c ? a : b; }
inline int64_t sel(bool c, int64_t a, int64_t b) { return c ? a : b; }
template <class T, class A>
inline xsimd::batch<T, A> sel(const xsimd::batch_bool<T, A>& c, const xsimd::batch<T, A>& a,
                              const xsimd::batch<T, A>& b) {
  return xsimd::select(c, a, b);
}

#define EMBER_UNARY_PRIM(name, stdf, xf)                                              \
  inline double name(double x) { return stdf(x); }                                    \
  inline float name(float x) { return stdf(x); }                                      \
  template <class T, class A>                                                         \
  inline xsimd::batch<T, A> name(const xsimd::batch<T, A>& x) { return xsimd::xf(x); }
EMBER_UNARY_PRIM(vfloor, std::floor, floor)
EMBER_UNARY_PRIM(vceil, std::ceil, ceil)
EMBER_UNARY_PRIM(vtrunc, std::trunc, trunc)
EMBER_UNARY_PRIM(vrint, std::nearbyint, nearbyint)  // round half to even
EMBER_UNARY_PRIM(vsqrt, std::sqrt, sqrt)
EMBER_UNARY_PRIM(vabs, std::fabs, abs)
#undef EMBER_UNARY_PRIM

inline double vcopysign(double x, double y) { return std::copysign(x, y); }
inline float vcopysign(float x, float y) { return std::copysign(x, y); }
template <class T, class A>
inline xsimd::batch<T, A> vcopysign(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y) {
  return xsimd::copysign(x, y);
}

// Unordered "not equal" (true when either is NaN), as C's !=; xsimd's batch
// operator!= is the ordered one, so generic code must use vne.
inline bool vne(double a, double b) { return a != b; }
inline bool vne(float a, float b) { return a != b; }
template <class T, class A>
inline xsimd::batch_bool<T, A> vne(const xsimd::batch<T, A>& a, const xsimd::batch<T, A>& b) {
  return !(a == b);
}
template <class T> inline auto visnan(const T& a) { return vne(a, a); }

// fmod is exact, so any correct implementation gives the same bits; batches
// call it lane by lane (xsimd's fmod is not exact).
inline double vfmod(double x, double y) { return std::fmod(x, y); }
inline float vfmod(float x, float y) { return std::fmod(x, y); }
template <class T, class A>
inline xsimd::batch<T, A> vfmod(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y) {
  constexpr std::size_t W = xsimd::batch<T, A>::size;
  alignas(64) T a[W], b[W];
  x.store_aligned(a);
  y.store_aligned(b);
  for (std::size_t i = 0; i < W; ++i) a[i] = std::fmod(a[i], b[i]);
  return xsimd::batch<T, A>::load_aligned(a);
}

// ---- float ops (T: double, float or a batch of them) -----------------------
template <class T> inline T f_sign(T x) {
  // NaN stays NaN, +-0 gives +0 (as np.sign).
  return sel(x > T(0), T(1), sel(x < T(0), T(-1), sel(x == T(0), T(0), x)));
}
template <class T> inline T f_reciprocal(T x) { return T(1) / x; }
template <class T> inline T f_round_away(T x) {
  T r = vtrunc(x);
  return sel(vabs(x - r) >= T(0.5), r + vcopysign(T(1), x), r);
}
// np.maximum / np.minimum: NaN in either input propagates.
template <class T> inline T f_maximum(T a, T b) { return sel((a >= b) | visnan(a), a, b); }
template <class T> inline T f_minimum(T a, T b) { return sel((a <= b) | visnan(a), a, b); }
// PyTensor's Clip: x < lo ? lo : x > hi ? hi : x.
template <class T> inline T f_clip(T x, T lo, T hi) { return sel(x < lo, lo, sel(x > hi, hi, x)); }

// NumPy's npy_divmod: returns floor(a/b) and sets mod (sign of b).
template <class T> inline T f_divmod(T a, T b, T& mod) {
  T m = vfmod(a, b);
  T div = (a - m) / b;
  auto fix = vne(m, T(0)) & ((b < T(0)) != (m < T(0)));
  T m2 = sel(fix, m + b, m);
  T d2 = sel(fix, div - T(1), div);
  m2 = sel(vne(m, T(0)), m2, vcopysign(T(0), b));
  T fl = vfloor(d2);
  fl = sel(d2 - fl > T(0.5), fl + T(1), fl);
  T q = sel(vne(d2, T(0)), fl, vcopysign(T(0), a / b));
  auto bz = b == T(0);
  mod = sel(bz, m, m2);
  return sel(bz, a / b, q);
}
template <class T> inline T f_floordiv(T a, T b) { T m; return f_divmod(a, b, m); }
template <class T> inline T f_mod(T a, T b) { T m; f_divmod(a, b, m); return m; }

// ---- integer ops on int64_t, wrapping (two's complement) --------------------
inline int64_t i_wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t i_wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
inline int64_t i_wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
inline int64_t i_neg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }
inline int64_t i_abs(int64_t a) { return a < 0 ? i_neg(a) : a; }
inline int64_t i_sign(int64_t a) { return (a > 0) - (a < 0); }
// Python floor division; x // 0 == 0 (NumPy's result); INT64_MIN // -1 wraps.
inline int64_t i_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return i_neg(a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
// Python modulo (sign of divisor); x % 0 == 0.
inline int64_t i_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// Integer power by squaring, wrapping. Negative exponents (an error in
// NumPy) give the exact result truncated toward zero: 1 and -1 keep their
// value (-1 alternating), everything else gives 0 (x ** -k with x == 0 too).
inline int64_t i_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = static_cast<uint64_t>(a);
  auto e = static_cast<uint64_t>(b);
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return static_cast<int64_t>(r);
}
inline int64_t i_maximum(int64_t a, int64_t b) { return a >= b ? a : b; }
inline int64_t i_minimum(int64_t a, int64_t b) { return a <= b ? a : b; }
inline int64_t i_clip(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

// ---- conversions ------------------------------------------------------------
// Keeps an int64 in the range of an integer dtype (wrap), bool as 0/1.
inline int64_t wrap_to(DType dt, int64_t v) {
  switch (dt) {
    case DType::Int32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    case DType::Int16: return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DType::Int8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::UInt8: return static_cast<uint8_t>(v);
    case DType::UInt16: return static_cast<uint16_t>(v);
    case DType::UInt32: return static_cast<uint32_t>(v);
    case DType::Bool: return v != 0;
    default: return v;
  }
}
// Float to int64 truncates toward zero. NaN and values outside int64's range
// give INT64_MIN (what x86's cvttsd2si, and so NumPy on x86, gives); narrower
// integer dtypes then wrap that int64.
template <class F> inline int64_t float_to_i64(F x) {
  if (!(x >= F(-9223372036854775808.0) && x < F(9223372036854775808.0)))
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}
// Float to a dtype held in the int64 register class.
template <class F> inline int64_t float_to_int_dtype(DType dt, F x) {
  if (dt == DType::Bool) return x != F(0);  // NaN is true, as in NumPy
  return wrap_to(dt, float_to_i64(x));
}

// ---- the op table: Impl<op>::f for the ops the VM runs inline --------------
// f takes and returns the computation type (for Compare/Predicate: returns a
// bool or batch_bool). Integer overloads take int64_t.
template <ScalarOp OP> struct Impl { static constexpr bool inline_op = false; };

#define EMBER_IMPL1(E, FEXPR, IEXPR)                                               \
  template <> struct Impl<ScalarOp::E> {                                           \
    static constexpr bool inline_op = true;                                        \
    template <class T> static T f(T a) {                                           \
      if constexpr (is_int_v<T>) return IEXPR; else return FEXPR;                  \
    }                                                                              \
  };
#define EMBER_IMPL2(E, FEXPR, IEXPR)                                               \
  template <> struct Impl<ScalarOp::E> {                                           \
    static constexpr bool inline_op = true;                                        \
    template <class T> static T f(T a, T b) {                                      \
      if constexpr (is_int_v<T>) return IEXPR; else return FEXPR;                  \
    }                                                                              \
  };
EMBER_IMPL1(Neg, -a, i_neg(a))
EMBER_IMPL1(Abs, vabs(a), i_abs(a))
EMBER_IMPL1(Sign, f_sign(a), i_sign(a))
EMBER_IMPL1(Sqr, a * a, i_wrap_mul(a, a))
EMBER_IMPL1(Sqrt, vsqrt(a), a)             // Float kind: never on ints
EMBER_IMPL1(Reciprocal, f_reciprocal(a), a)  // Float kind: never on ints
EMBER_IMPL1(Floor, vfloor(a), a)
EMBER_IMPL1(Ceil, vceil(a), a)
EMBER_IMPL1(Trunc, vtrunc(a), a)
EMBER_IMPL1(RoundHalfToEven, vrint(a), a)
EMBER_IMPL1(RoundHalfAwayFromZero, f_round_away(a), a)
EMBER_IMPL1(Invert, a, ~a)                 // Bitwise: ints only (bool: see compiler)
EMBER_IMPL2(Add, a + b, i_wrap_add(a, b))
EMBER_IMPL2(Mul, a * b, i_wrap_mul(a, b))
EMBER_IMPL2(Sub, a - b, i_wrap_sub(a, b))
EMBER_IMPL2(TrueDiv, a / b, a)             // Float kind: never on ints
EMBER_IMPL2(IntDiv, f_floordiv(a, b), i_floordiv(a, b))
EMBER_IMPL2(Mod, f_mod(a, b), i_mod(a, b))
EMBER_IMPL2(Pow, a, i_pow(a, b))           // float Pow is math::pow
EMBER_IMPL2(Maximum, f_maximum(a, b), i_maximum(a, b))
EMBER_IMPL2(Minimum, f_minimum(a, b), i_minimum(a, b))
EMBER_IMPL2(And, a, a & b)
EMBER_IMPL2(Or, a, a | b)
EMBER_IMPL2(Xor, a, a ^ b)
#undef EMBER_IMPL1
#undef EMBER_IMPL2

template <> struct Impl<ScalarOp::Clip> {
  static constexpr bool inline_op = true;
  template <class T> static T f(T x, T lo, T hi) {
    if constexpr (is_int_v<T>) return i_clip(x, lo, hi); else return f_clip(x, lo, hi);
  }
};

#define EMBER_CMP(E, OPR)                                           \
  template <> struct Impl<ScalarOp::E> {                            \
    static constexpr bool inline_op = true;                         \
    template <class T> static auto f(T a, T b) { return a OPR b; }  \
  };
EMBER_CMP(LT, <)
EMBER_CMP(GT, >)
EMBER_CMP(LE, <=)
EMBER_CMP(GE, >=)
EMBER_CMP(EQ, ==)
#undef EMBER_CMP
template <> struct Impl<ScalarOp::NEQ> {
  static constexpr bool inline_op = true;
  template <class T> static auto f(T a, T b) {
    if constexpr (is_int_v<T>) return a != b; else return vne(a, b);
  }
};

template <> struct Impl<ScalarOp::IsNan> {
  static constexpr bool inline_op = true;
  template <class T> static auto f(T a) {
    if constexpr (is_int_v<T>) return false; else return visnan(a);
  }
};
template <> struct Impl<ScalarOp::IsInf> {
  static constexpr bool inline_op = true;
  template <class T> static auto f(T a) {
    if constexpr (is_int_v<T>) return false;
    else return vabs(a) == T(std::numeric_limits<double>::infinity());
  }
};

}  // namespace ember::interp::impl

namespace ember::interp::impl {
// One element converted between register classes, as the Cast op and every
// implicit conversion do it: D is double, float or int64_t; dt the target
// dtype (used for integer wrapping and bool).
template <class D, class S> inline D convert_value(S x, DType dt) {
  if constexpr (std::is_floating_point_v<D>) return static_cast<D>(x);
  else if constexpr (std::is_floating_point_v<S>) return float_to_int_dtype(dt, x);
  else return wrap_to(dt, x);
}
}  // namespace ember::interp::impl
