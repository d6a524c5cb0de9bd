// TensorOp: one enumerator per row of engine/ops/tensor_ops.def, so code
// branches on an op's kind, never on its name (the name is for messages
// and the graph format).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace ember {

enum class TensorOp : uint8_t {
#define X(name, factory) name,
#include "engine/ops/tensor_ops.def"
#undef X
};

// The PyTensor class name of op (the graph format's "op").
const char* tensor_op_name(TensorOp op);

// The op a graph node names, or nullopt if Ember does not support it.
std::optional<TensorOp> find_tensor_op(std::string_view name);

}  // namespace ember
