// Element types shared by every layer (graph, interpreter, JIT).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ember {

enum class DType : uint8_t {
#define X(E, name, T, is_float, is_int) E,
#include "interp/dtype.def"
#undef X
};

inline constexpr int kNumDTypes = 0
#define X(E, name, T, is_float, is_int) +1
#include "interp/dtype.def"
#undef X
    ;

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
#define X(E, name, T, is_float, is_int) case DType::E: return name;
#include "interp/dtype.def"
#undef X
  }
  return "?";
}

constexpr size_t dtype_size(DType t) {
  switch (t) {
#define X(E, name, T, is_float, is_int) case DType::E: return sizeof(T);
#include "interp/dtype.def"
#undef X
  }
  return 0;
}

constexpr bool dtype_is_float(DType t) {
  switch (t) {
#define X(E, name, T, is_float, is_int) case DType::E: return is_float;
#include "interp/dtype.def"
#undef X
  }
  return false;
}

constexpr bool dtype_is_int(DType t) {
  switch (t) {
#define X(E, name, T, is_float, is_int) case DType::E: return is_int;
#include "interp/dtype.def"
#undef X
  }
  return false;
}

inline std::optional<DType> dtype_from_name(std::string_view s) {
#define X(E, name, T, is_float, is_int) if (s == name) return DType::E;
#include "interp/dtype.def"
#undef X
  return std::nullopt;
}

bool dtype_is_unsigned(DType t);

// NumPy's promotion for the types we carry (result of a binary op on a and b).
DType dtype_upcast(DType a, DType b);

// Calls f(T{}) with T the C++ type of t.
template <class F>
decltype(auto) dtype_dispatch(DType t, F&& f) {
  switch (t) {
#define X(E, name, T, is_float, is_int) case DType::E: return f(T{});
#include "interp/dtype.def"
#undef X
  }
  return f(double{});
}

}  // namespace ember
