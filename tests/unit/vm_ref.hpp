// An independent reference evaluator for Composites, one element at a time:
// plain C++ on the native type of each dtype (int8 arithmetic in int8 via
// casts, float32 in float, ...), the math library's scalar functions for
// transcendental ops. It shares no code with the VM (interp/scalar_impl.hpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/composite.hpp"
#include "interp/math/math.hpp"

namespace ember::test {

using interp::Composite;
using interp::OpKind;
using interp::ScalarOp;

// A scalar of a dtype: f for float dtypes (float32 values exactly), i for
// integer and bool dtypes.
struct RV {
  DType dt = DType::Float64;
  double f = 0;
  int64_t i = 0;
};

inline bool is_f(DType t) { return t == DType::Float64 || t == DType::Float32; }

// NumPy's conversion on x86 (documented in docs/interpreter.md).
inline RV ref_convert(const RV& v, DType to) {
  RV r;
  r.dt = to;
  if (to == DType::Float64) {
    r.f = is_f(v.dt) ? v.f : static_cast<double>(v.i);
  } else if (to == DType::Float32) {
    r.f = is_f(v.dt) ? static_cast<double>(static_cast<float>(v.f)) : static_cast<double>(static_cast<float>(v.i));
  } else if (to == DType::Bool) {
    r.i = is_f(v.dt) ? (v.f != 0) : (v.i != 0);
  } else {
    int64_t x;
    if (is_f(v.dt)) {
      if (std::isnan(v.f) || v.f >= 9223372036854775808.0 || v.f < -9223372036854775808.0)
        x = std::numeric_limits<int64_t>::min();
      else
        x = static_cast<int64_t>(v.f);
    } else {
      x = v.i;
    }
    switch (to) {
      case DType::Int32: r.i = static_cast<int32_t>(x); break;
      case DType::Int16: r.i = static_cast<int16_t>(x); break;
      case DType::Int8: r.i = static_cast<int8_t>(x); break;
      case DType::UInt8: r.i = static_cast<uint8_t>(x); break;
      case DType::UInt16: r.i = static_cast<uint16_t>(x); break;
      case DType::UInt32: r.i = static_cast<uint32_t>(x); break;
      default: r.i = x; break;
    }
  }
  return r;
}

inline RV make_int(DType dt, int64_t x) { return ref_convert(RV{DType::Int64, 0, x}, dt); }
inline RV make_float(DType dt, double x) { return ref_convert(RV{DType::Float64, x, 0}, dt); }

namespace detail {

template <class F> double round_to(DType dt, F x) {
  return dt == DType::Float32 ? static_cast<double>(static_cast<float>(x)) : static_cast<double>(x);
}

// Python/NumPy floor division and remainder for floats in type F.
template <class F> void py_divmod(F a, F b, F& q, F& r) {
  r = std::fmod(a, b);
  if (b == 0) { q = a / b; return; }
  F div = (a - r) / b;
  if (r != 0) {
    if ((b < 0) != (r < 0)) { r += b; div -= 1; }
  } else {
    r = std::copysign(F(0), b);
  }
  if (div != 0) {
    q = std::floor(div);
    if (div - q > F(0.5)) q += 1;
  } else {
    q = std::copysign(F(0), a / b);
  }
}

template <class F> RV float_op(ScalarOp op, DType dt, const std::vector<RV>& in) {
  auto x = [&](int k) { return static_cast<F>(in[k].f); };
  auto mk = [&](F v) { RV r; r.dt = dt; r.f = static_cast<double>(v); return r; };
  switch (op) {
    case ScalarOp::Neg: return mk(-x(0));
    case ScalarOp::Abs: return mk(std::fabs(x(0)));
    case ScalarOp::Sign: { F v = x(0); return mk(v > 0 ? F(1) : v < 0 ? F(-1) : v == 0 ? F(0) : v); }
    case ScalarOp::Add: { F s = x(0); for (size_t k = 1; k < in.size(); ++k) s = s + x(k); return mk(s); }
    case ScalarOp::Mul: { F s = x(0); for (size_t k = 1; k < in.size(); ++k) s = s * x(k); return mk(s); }
    case ScalarOp::Sub: return mk(x(0) - x(1));
    case ScalarOp::TrueDiv: return mk(x(0) / x(1));
    case ScalarOp::IntDiv: { F q, r; py_divmod(x(0), x(1), q, r); return mk(q); }
    case ScalarOp::Mod: { F q, r; py_divmod(x(0), x(1), q, r); return mk(r); }
    case ScalarOp::Sqr: return mk(x(0) * x(0));
    case ScalarOp::Sqrt: return mk(std::sqrt(x(0)));
    case ScalarOp::Reciprocal: return mk(F(1) / x(0));
    case ScalarOp::Floor: return mk(std::floor(x(0)));
    case ScalarOp::Ceil: return mk(std::ceil(x(0)));
    case ScalarOp::Trunc: return mk(std::trunc(x(0)));
    case ScalarOp::RoundHalfToEven: return mk(std::nearbyint(x(0)));
    case ScalarOp::RoundHalfAwayFromZero: return mk(std::round(x(0)));
    case ScalarOp::Maximum: { F a = x(0), b = x(1); return mk(std::isnan(a) ? a : std::isnan(b) ? b : (a >= b ? a : b)); }
    case ScalarOp::Minimum: { F a = x(0), b = x(1); return mk(std::isnan(a) ? a : std::isnan(b) ? b : (a <= b ? a : b)); }
    case ScalarOp::Clip: { F v = x(0), lo = x(1), hi = x(2); return mk(v < lo ? lo : v > hi ? hi : v); }
    default:  // transcendental: the float64 math function, rounded to the dtype
      if (const math::Entry* f = math::entry(op)) {
        const double a[3] = {in[0].f, in.size() > 1 ? in[1].f : 0, in.size() > 2 ? in[2].f : 0};
        RV r;
        r.dt = dt;
        r.f = round_to(dt, (*f)(a));
        return r;
      }
      throw std::logic_error("ref: float op not handled");
  }
}

inline int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1;
  for (int64_t k = 0; k < b && k < 200; ++k) r *= static_cast<uint64_t>(a);  // repeated product
  if (b >= 200) {  // large exponents: square and multiply
    r = 1;
    uint64_t base = static_cast<uint64_t>(a);
    for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1, base *= base)
      if (e & 1) r *= base;
  }
  return static_cast<int64_t>(r);
}

// Integer ops computed on exact int64 values, wrapped to dt at the end.
inline RV int_op(ScalarOp op, DType dt, const std::vector<RV>& in) {
  auto x = [&](int k) { return in[k].i; };
  auto u = [&](int k) { return static_cast<uint64_t>(in[k].i); };
  auto mk = [&](uint64_t v) { return make_int(dt, static_cast<int64_t>(v)); };
  switch (op) {
    case ScalarOp::Neg: return mk(0 - u(0));
    case ScalarOp::Abs: return mk(x(0) < 0 ? 0 - u(0) : u(0));
    case ScalarOp::Sign: return mk(x(0) > 0 ? 1 : x(0) < 0 ? -1 : 0);
    case ScalarOp::Add: { uint64_t s = u(0); for (size_t k = 1; k < in.size(); ++k) s = static_cast<uint64_t>(make_int(dt, static_cast<int64_t>(s + u(k))).i); return mk(s); }
    case ScalarOp::Mul: { uint64_t s = u(0); for (size_t k = 1; k < in.size(); ++k) s = static_cast<uint64_t>(make_int(dt, static_cast<int64_t>(s * u(k))).i); return mk(s); }
    case ScalarOp::Sub: return mk(u(0) - u(1));
    case ScalarOp::IntDiv: {
      int64_t a = x(0), b = x(1);
      if (b == 0) return mk(0);
      if (b == -1) return mk(0 - u(0));
      int64_t q = a / b;
      if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
      return mk(static_cast<uint64_t>(q));
    }
    case ScalarOp::Mod: {
      int64_t a = x(0), b = x(1);
      if (b == 0 || b == -1) return mk(0);
      int64_t r = a - (a / b) * b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return mk(static_cast<uint64_t>(r));
    }
    case ScalarOp::Pow: return mk(static_cast<uint64_t>(ipow(x(0), x(1))));
    case ScalarOp::Sqr: return mk(u(0) * u(0));
    case ScalarOp::Floor: case ScalarOp::Ceil: case ScalarOp::Trunc:
    case ScalarOp::RoundHalfToEven: case ScalarOp::RoundHalfAwayFromZero:
      return mk(u(0));
    case ScalarOp::Maximum: return mk(static_cast<uint64_t>(std::max(x(0), x(1))));
    case ScalarOp::Minimum: return mk(static_cast<uint64_t>(std::min(x(0), x(1))));
    case ScalarOp::Clip: { int64_t v = x(0), lo = x(1), hi = x(2); return mk(static_cast<uint64_t>(v < lo ? lo : v > hi ? hi : v)); }
    case ScalarOp::And: return mk(u(0) & u(1));
    case ScalarOp::Or: return mk(u(0) | u(1));
    case ScalarOp::Xor: return mk(u(0) ^ u(1));
    case ScalarOp::Invert: return dt == DType::Bool ? mk(x(0) == 0) : mk(~u(0));
    default: throw std::logic_error("ref: int op not handled");
  }
}

template <class F> bool compare(ScalarOp op, F a, F b) {
  switch (op) {
    case ScalarOp::LT: return a < b;
    case ScalarOp::GT: return a > b;
    case ScalarOp::LE: return a <= b;
    case ScalarOp::GE: return a >= b;
    case ScalarOp::EQ: return a == b;
    default: return a != b;
  }
}

}  // namespace detail

// Evaluates node `n` of a Composite given its input values.
inline RV ref_node(const interp::ScalarNode& n, const std::vector<RV>& args) {
  const DType dt = n.dtype;
  const OpKind kind = interp::op_info(n.op).kind;
  std::vector<RV> in;
  switch (kind) {
    case OpKind::Cast:
      return ref_convert(args[0], dt);
    case OpKind::Predicate: {
      const RV& v = args[0];
      bool r = is_f(v.dt) && (n.op == ScalarOp::IsNan ? std::isnan(v.f) : std::isinf(v.f));
      return make_int(DType::Bool, r);
    }
    case OpKind::Compare: {
      DType u = dtype_upcast(args[0].dt, args[1].dt);
      RV a = ref_convert(args[0], u), b = ref_convert(args[1], u);
      bool r = is_f(u) ? (u == DType::Float32 ? detail::compare(n.op, static_cast<float>(a.f), static_cast<float>(b.f))
                                               : detail::compare(n.op, a.f, b.f))
                       : detail::compare(n.op, a.i, b.i);
      return make_int(DType::Bool, r);
    }
    case OpKind::Switch: {
      const RV& c = args[0];
      bool t = is_f(c.dt) ? c.f != 0 : c.i != 0;
      return ref_convert(t ? args[1] : args[2], dt);
    }
    default:
      break;
  }
  for (const RV& a : args) in.push_back(ref_convert(a, dt));
  if (n.op == ScalarOp::Identity) return in[0];
  if (n.op == ScalarOp::Second) return in[1];
  if (dt == DType::Float64) return detail::float_op<double>(n.op, dt, in);
  if (dt == DType::Float32) return detail::float_op<float>(n.op, dt, in);
  return detail::int_op(n.op, dt, in);
}

inline RV const_value(const interp::ScalarConst& c) {
  return is_f(c.dtype) ? make_float(c.dtype, c.f) : make_int(c.dtype, c.i);
}

// Evaluates all values of a Composite for one element; returns its outputs.
inline std::vector<RV> ref_eval(const Composite& c, const std::vector<RV>& inputs) {
  std::vector<RV> v(inputs);
  for (const auto& k : c.constants) v.push_back(const_value(k));
  for (const auto& n : c.nodes) {
    std::vector<RV> args;
    for (int32_t i : n.inputs) args.push_back(v[i]);
    v.push_back(ref_node(n, args));
  }
  std::vector<RV> out;
  for (int32_t o : c.outputs) out.push_back(v[o]);
  return out;
}

// Reads/writes one element of typed memory as an RV.
inline RV read_elem(DType dt, const void* p, int64_t k) {
  RV r;
  r.dt = dt;
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    T x;
    std::memcpy(&x, static_cast<const char*>(p) + k * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if constexpr (std::is_floating_point_v<T>) r.f = static_cast<double>(x);
    else r.i = static_cast<int64_t>(x);
  });
  return r;
}
inline void write_elem(const RV& v, void* p, int64_t k) {
  dtype_dispatch(v.dt, [&](auto z) {
    using T = decltype(z);
    T x;
    if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(v.f);
    else x = static_cast<T>(v.i);
    std::memcpy(static_cast<char*>(p) + k * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
  });
}

// Same value, NaN compared as a class; floats compared by bits otherwise
// (so -0 and +0 differ).
inline bool same_value(const RV& a, const RV& b) {
  if (a.dt != b.dt) return false;
  if (!is_f(a.dt)) return a.i == b.i;
  if (std::isnan(a.f) || std::isnan(b.f)) return std::isnan(a.f) && std::isnan(b.f);
  return std::memcmp(&a.f, &b.f, sizeof(double)) == 0;
}

inline std::string show(const RV& v) {
  char buf[64];
  if (is_f(v.dt)) std::snprintf(buf, sizeof buf, "%.17g", v.f);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v.i));
  return std::string(dtype_name(v.dt)) + " " + buf;
}

}  // namespace ember::test
