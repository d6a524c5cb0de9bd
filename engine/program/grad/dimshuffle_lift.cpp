// DimShuffles lifted through element-wise ops toward the inputs, as
// PyTensor's canonicalize does (local_dimshuffle_lift): DimShuffle(f(a, b))
// -> f(DimShuffle(a), DimShuffle(b)) when the DimShuffle only adds or drops
// broadcast dims of a one-element value and is f's only reader. A gradient moves one-element values
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

}  // namespace

// One pass over a worklist: the DimShuffles a lift puts on f's operands are
// tried in turn, so a chain lifts to its inputs without a commit per step.
// Reader counts are kept by hand: a lift removes f and the DimShuffle and
// reads each operand once, through its new DimShuffle.
int lift_dimshuffles(passes::Editor& e) {
  const passes::Users users = e.users();
  std::vector<int> readers(e.g.vars.size());
  for (size_t v = 0; v < readers.size(); ++v) readers[v] = static_cast<int>(users.of(static_cast<int>(v)).size());
  Builder b(e);
  std::vector<int> work;
  for (int k = e.num_nodes() - 1; k >= 0; --k)
    if (!e.removed(k) && passes::is_op(e.node(k), TensorOp::DimShuffle)) work.push_back(k);
  int lifts = 0;
  while (!work.empty()) {
    const int k = work.back();
    work.pop_back();
    if (e.removed(k)) continue;
    const NodeSpec& node = e.node(k);
    if (node.inputs.size() != 1 || node.outputs.size() != 1) continue;
    const int x = node.inputs[0], out = node.outputs[0];
    const int p = e.producer(x);
    if (p < 0 || e.removed(p) || readers[x] != 1 || e.is_graph_output(x)) continue;
    if (!passes::one_element(e.g.vars[x])) continue;  // a rank change of scalar steps only
    const std::string op = passes::elemwise_scalar_op(e.node(p));
    if (op.empty() || e.node(p).outputs.size() != 1) continue;
    const auto order = passes::dimshuffle_order(node);
    if (!order || !keeps_order(*order)) continue;
    // Every dropped dim is 1 in the output, so in every operand: the same
    // order applies to each.
    const std::vector<int> operands = e.node(p).inputs;
    bool same_rank = true;
    for (const int v : operands) same_rank = same_rank && b.ndim(v) == b.ndim(x);
    if (!same_rank) continue;
    std::vector<int> ins;
    for (const int v : operands) ins.push_back(b.dimshuffle(v, *order));
    const int r = b.elem(op, ins, e.g.vars[x].dtype);
    readers.resize(e.g.vars.size(), 0);
    readers[r] = readers[out];
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i] == operands[i]) continue;  // an identity order: no new node
      readers[ins[i]] = 1;
      work.push_back(e.producer(ins[i]));
    }
    e.replace(out, r);
    e.remove(k);
    e.remove(p);
    ++lifts;
  }
  if (lifts) e.commit();
  return lifts;
}

}  // namespace ember::grad
