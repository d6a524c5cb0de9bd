#include "interp/dtype.hpp"

namespace ember {

namespace {
// Rank within a kind; NumPy promotes mixed signed/unsigned by widening.
int kind(DType t) { return t == DType::Bool ? 0 : dtype_is_int(t) ? 1 : 2; }
}  // namespace

DType dtype_upcast(DType a, DType b) {
  if (a == b) return a;
  int ka = kind(a), kb = kind(b);
  if (ka != kb) {
    DType hi = ka > kb ? a : b, lo = ka > kb ? b : a;
    // int + float: float64 unless both fit float32 (int8/uint8/int16 with float32).
    if (hi == DType::Float32 && (lo == DType::Int32 || lo == DType::Int64)) return DType::Float64;
    return hi;
  }
  if (ka == 2) return DType::Float64;  // float32 with float64
  // two different integer types
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType s = a == DType::UInt8 ? b : a;
    if (s == DType::Int8) return DType::Int16;
    return s;  // int16/int32/int64 hold every uint8
  }
  return dtype_size(a) > dtype_size(b) ? a : b;
}

}  // namespace ember
