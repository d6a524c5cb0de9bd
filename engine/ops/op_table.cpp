#include <string>
#include <vector>

#include "engine/ops/op.hpp"

namespace ember {

#define X(name, factory) std::unique_ptr<OpKernel> factory(NodeContext&);
#include "engine/ops/tensor_ops.def"
#undef X

namespace {
struct Row {
  const char* name;
  OpFactory factory;
};
// Indexed by TensorOp.
constexpr Row kRows[] = {
#define X(name, factory) {#name, &factory},
#include "engine/ops/tensor_ops.def"
#undef X
};
}  // namespace

const char* tensor_op_name(TensorOp op) { return kRows[static_cast<size_t>(op)].name; }

std::optional<TensorOp> find_tensor_op(std::string_view name) {
  for (size_t k = 0; k < std::size(kRows); ++k)
    if (name == kRows[k].name) return static_cast<TensorOp>(k);
  return std::nullopt;
}

OpFactory op_factory(TensorOp op) { return kRows[static_cast<size_t>(op)].factory; }

std::vector<std::string> tensor_op_names() {
  std::vector<std::string> v;
  for (const Row& r : kRows) v.emplace_back(r.name);
  return v;
}

}  // namespace ember
