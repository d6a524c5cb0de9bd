// The scalar op enum and its properties, expanded from scalar_ops.def.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace ember::interp {

enum class OpKind : uint8_t { Same, Float, Compare, Predicate, Bitwise, Switch, Cast };

enum class ScalarOp : uint16_t {
#define X(E, name, arity, kind) E,
#include "interp/scalar_ops.def"
#undef X
};

inline constexpr int kNumScalarOps = 0
#define X(E, name, arity, kind) +1
#include "interp/scalar_ops.def"
#undef X
    ;

struct ScalarOpInfo {
  ScalarOp op;
  std::string_view name;  // PyTensor's class name
  int arity;              // -1: variadic
  OpKind kind;
};

inline constexpr ScalarOpInfo kScalarOps[] = {
#define X(E, name, arity, kind) {ScalarOp::E, name, arity, OpKind::kind},
#include "interp/scalar_ops.def"
#undef X
};

constexpr const ScalarOpInfo& op_info(ScalarOp op) { return kScalarOps[static_cast<int>(op)]; }

inline std::optional<ScalarOp> scalar_op_from_name(std::string_view s) {
  for (const auto& i : kScalarOps)
    if (i.name == s) return i.op;
  return std::nullopt;
}

}  // namespace ember::interp
