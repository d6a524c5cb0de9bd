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
constexpr Row kRows[] = {
#define X(name, factory) {name, &factory},
#include "engine/ops/tensor_ops.def"
#undef X
};
}  // namespace

OpFactory find_op(const std::string& name) {
  for (const Row& r : kRows)
    if (name == r.name) return r.factory;
  return nullptr;
}

std::vector<std::string> tensor_op_names() {
  std::vector<std::string> v;
  for (const Row& r : kRows) v.emplace_back(r.name);
  return v;
}

}  // namespace ember
