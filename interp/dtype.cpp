#include "interp/dtype.hpp"

namespace ember {

namespace {
// Rank within a kind; NumPy promotes mixed signed/unsigned by widening.
int kind(DType t) { return t == DType::Bool ? 0 : dtype_is_int(t) ? 1 : 2; }
}  // namespace

bool dtype_is_unsigned(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

DType dtype_upcast(DType a, DType b) {
  if (a == b) return a;
  int ka = kind(a), kb = kind(b);
  if (ka != kb) {
    DType hi = ka > kb ? a : b, lo = ka > kb ? b : a;
    // int + float32: float32 holds (u)int8 and (u)int16 exactly, wider ints need float64.
    if (hi == DType::Float32 && lo != DType::Bool && dtype_size(lo) > 2) return DType::Float64;
    return hi;
  }
  if (ka == 2) return DType::Float64;  // float32 with float64
  // two different integer types
  const bool ua = dtype_is_unsigned(a), ub = dtype_is_unsigned(b);
  if (ua == ub) return dtype_size(a) > dtype_size(b) ? a : b;
  const DType s = ua ? b : a, u = ua ? a : b;
  if (dtype_size(s) > dtype_size(u)) return s;  // the signed type holds every value of the unsigned one
  switch (dtype_size(u)) {  // the next signed type that holds both
    case 1: return DType::Int16;
    case 2: return DType::Int32;
    case 4: return DType::Int64;
    default: return DType::Float64;  // uint64 with a signed type: NumPy's float64
  }
}

}  // namespace ember
