// DimShuffles lifted through element-wise ops toward the inputs, as
// PyTensor's canonicalize does (local_dimshuffle_lift): DimShuffle(f(a, b))
// -> f(DimShuffle(a), DimShuffle(b)) when the DimShuffle only adds or drops
// broadcast dims and is f's only reader. A gradient moves one-element values
// between 0-d and (1,) at every scalar step (a Sum's output, a parameter's
// slice); lifted, the steps meet in one Elemwise and fuse into one kernel.
// Exact: the same values in the same order.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

// new_order keeps the input's dims in order (no transposition).
bool keeps_order(const std::vector<int>& order) {
  int last = -1;
  for (int x : order) {
    if (x < 0) continue;
    if (x <= last) return false;
    last = x;
  }
  return true;
}

int lift_once(passes::Editor& e) {
  const passes::Users users = e.users();
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (!passes::is_op(node, TensorOp::DimShuffle) || node.inputs.size() != 1) return -1;
    const int x = node.inputs[0];
    const int p = e.producer(x);
    if (p < 0 || x + 1 >= static_cast<int>(users.off.size()) || users.of(x).size() != 1 || e.is_graph_output(x))
      return -1;
    const NodeSpec f = e.node(p);
    const std::string op = passes::elemwise_scalar_op(f);
    if (op.empty() || f.outputs.size() != 1) return -1;
    const auto order = passes::dimshuffle_order(node);
    if (!order || !keeps_order(*order)) return -1;
    // Every dropped dim is 1 in the output, so in every operand: the same
    // order applies to each.
    for (const int v : f.inputs)
      if (b.ndim(v) != b.ndim(x)) return -1;
    std::vector<int> ins;
    for (const int v : f.inputs) ins.push_back(b.dimshuffle(v, *order));
    const int r = b.elem(op, ins, e.g.vars[x].dtype);
    e.remove(p);
    return r;
  });
}

}  // namespace

int lift_dimshuffles(passes::Editor& e) {
  // Each round lifts one step further; a gradient's scalar chains are short.
  int total = 0;
  for (int round = 0; round < 8; ++round) {
    const int n = lift_once(e);
    if (!n) break;
    total += n;
  }
  return total;
}

}  // namespace ember::grad
