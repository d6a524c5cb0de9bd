// Fills sunk through element-wise ops, as PyTensor's canonicalize does
// (local_fill_sink): f(..., fill(x, y), ...) -> fill(x, f(..., y, ...)), and
// the fill goes when the other operands already give f's output its shape.
// The gradient of a Sum is a fill of its output gradient; sunk, the
// gradient's arithmetic runs on the small value and a later sum of the
// broadcast becomes a product (sum_broadcast.cpp). Exact: a fill only
// repeats values.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

int sink_fills(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    const std::string op = passes::elemwise_scalar_op(node);
    if (op.empty() || op == "Second" || node.outputs.size() != 1) return -1;
    const int out = node.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    std::vector<int> ins = node.inputs, shapers;
    for (int& v : ins) {
      const int p = e.producer(v);
      if (p < 0 || e.removed(p)) continue;
      const NodeSpec& f = e.node(p);
      if (passes::elemwise_scalar_op(f) != "Second" || e.g.vars[f.inputs[1]].dtype != e.g.vars[v].dtype) continue;
      shapers.push_back(f.inputs[0]);
      v = f.inputs[1];
    }
    if (shapers.empty()) return -1;
    const Shape want = e.g.vars[out].static_shape;
    if (passes::same_broadcast_pattern(broadcast_static(e.g, ins), want)) return b.elem(op, ins, dt);
    std::vector<int> all = ins;
    all.insert(all.end(), shapers.begin(), shapers.end());
    if (!passes::same_broadcast_pattern(broadcast_static(e.g, all), want)) return -1;
    int r = b.elem(op, ins, dt);
    for (int x : shapers) r = b.elem("Second", {x, r}, dt);
    return r;
  });
}

}  // namespace ember::grad
