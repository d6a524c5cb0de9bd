// The scalar op enum and its properties, expanded from scalar_ops.def.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace ember::interp {

enum class OpKind : uint8_t { Same, Float, Compare, Predicate, Bitwise, Switch, Cast };

// Flags of a row (scalar_ops.def says what each means).
namespace opflag {
inline constexpr uint16_t Wraps = 1 << 0, IntId = 1 << 1, Alias = 1 << 2, Reduce = 1 << 3, FastF = 1 << 4,
                          FastI = 1 << 5, AsmF = 1 << 6, AsmI = 1 << 7;
}

enum class ScalarOp : uint16_t {
#define X(E, ...) E,
#include "interp/scalar_ops.def"
#undef X
};

inline constexpr int kNumScalarOps = 0
#define X(E, ...) +1
#include "interp/scalar_ops.def"
#undef X
    ;

struct ScalarOpInfo {
  ScalarOp op;
  std::string_view name;  // PyTensor's class name
  int arity;              // -1: variadic
  OpKind kind;
  uint16_t flags;         // opflag bits
  std::string_view math;  // the math library's function, "" if none

  constexpr bool has(uint16_t flag) const { return (flags & flag) != 0; }
};

namespace detail {
constexpr std::string_view math_column(std::string_view s) { return s == "none" ? std::string_view{} : s; }
}  // namespace detail

inline constexpr ScalarOpInfo kScalarOps[] = {
#define X(E, name, arity, kind, flags, fn)                                                         \
  {ScalarOp::E, name, arity, OpKind::kind, [] { using namespace opflag; return uint16_t(flags); }(), \
   detail::math_column(#fn)},
#include "interp/scalar_ops.def"
#undef X
};

// The scalar ops a CAReduce may carry besides the rows marked Reduce: ops
// that are no element-wise row, because the reduction implements them itself
// (MulWithoutZeros, the product that skips zeros, of prod's gradient).
inline constexpr std::string_view kReduceOnlyOps[] = {"MulWithoutZeros"};

constexpr const ScalarOpInfo& op_info(ScalarOp op) { return kScalarOps[static_cast<int>(op)]; }

inline std::optional<ScalarOp> scalar_op_from_name(std::string_view s) {
  for (const auto& i : kScalarOps)
    if (i.name == s) return i.op;
  return std::nullopt;
}

// The math library's functions take 1 to 3 float64 inputs, the op's own.
static_assert([] {
  for (const auto& i : kScalarOps)
    if (!i.math.empty() && (i.arity < 1 || i.arity > 3 || (i.kind != OpKind::Same && i.kind != OpKind::Float)))
      return false;
  return true;
}());

}  // namespace ember::interp

// EMBER_IF_MATH(fn, M, args...): M(args...) when fn, a row's math column,
// names a function; nothing when it is `none`. (Only `none` has an
// EMBER_MATH_NONE_ macro; its comma shifts the 0 into second place.)
#define EMBER_MATH_NONE_none ~, 0,
#define EMBER_MATH_SECOND_(a, b, ...) b
#define EMBER_MATH_SECOND(...) EMBER_MATH_SECOND_(__VA_ARGS__)
#define EMBER_MATH_HAS(fn) EMBER_MATH_SECOND(EMBER_MATH_NONE_##fn, 1, ~)
#define EMBER_MATH_WHEN_0(M, ...)
#define EMBER_MATH_WHEN_1(M, ...) M(__VA_ARGS__)
#define EMBER_MATH_WHEN_(c, M, ...) EMBER_MATH_WHEN_##c(M, __VA_ARGS__)
#define EMBER_MATH_WHEN(c, M, ...) EMBER_MATH_WHEN_(c, M, __VA_ARGS__)
#define EMBER_IF_MATH(fn, M, ...) EMBER_MATH_WHEN(EMBER_MATH_HAS(fn), M, __VA_ARGS__)
