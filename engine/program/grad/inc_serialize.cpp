// Increments of zeros added to a gradient become increments of the gradient,
// as PyTensor's canonicalize does (local_IncSubtensor_serialize):
// a + inc(zeros, y1, i1) + inc(zeros, y2, i2) -> inc(inc(a, y1, i1), y2, i2).
// Every Subtensor's adjoint is an increment of zeros of its input's shape;
// a parameter read through several slices (a random walk's x[1:] and x[:-1])
// would otherwise fill, increment and add one array per slice. The sums
// are the same but associate differently, so on differentiated graphs only.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

bool is_increment(const NodeSpec& n) {
  const auto op = find_tensor_op(n.op);
  if (op != TensorOp::IncSubtensor && op != TensorOp::AdvancedIncSubtensor1 && op != TensorOp::AdvancedIncSubtensor)
    return false;
  return n.outputs.size() == 1 && !n.attrs.value("set_instead_of_inc", false);
}

}  // namespace

int serialize_increments(passes::Editor& e) {
  const passes::Users users = e.users();
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (passes::elemwise_scalar_op(node) != "Add" || node.outputs.size() != 1) return -1;
    const int out = node.outputs[0];
    const VarSpec ov = e.g.vars[out];  // a copy: building adds variables
    std::vector<int> rest, incs;  // incs: node indices
    for (const int v : node.inputs) {
      const int p = e.producer(v);
      const bool only_here = v + 1 < static_cast<int>(users.off.size()) && users.of(v).size() == 1 &&
                             !e.is_graph_output(v);
      if (p >= 0 && only_here && is_increment(e.node(p)) && e.g.vars[v].dtype == ov.dtype &&
          passes::same_static_shape(e.g.vars[v].static_shape, ov.static_shape) &&
          is_zeros(e, e.node(p).inputs[0])) {
        incs.push_back(p);
      } else {
        rest.push_back(v);
      }
    }
    if (incs.empty() || rest.empty()) return -1;
    int r = rest.size() == 1 ? rest[0] : b.elem("Add", rest, ov.dtype);
    if (e.g.vars[r].dtype != ov.dtype || !passes::same_static_shape(e.g.vars[r].static_shape, ov.static_shape))
      return -1;
    for (const int p : incs) {
      const NodeSpec inc = e.node(p);
      std::vector<int> ins = inc.inputs;
      ins[0] = r;
      r = b.node(inc.op, ins, inc.attrs, ov.dtype, ov.static_shape);
      e.remove(p);
    }
    return r;
  });
}

}  // namespace ember::grad
