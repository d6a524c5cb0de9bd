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
  Builder b(e);
  int rewrites = 0;
  const int n = e.num_nodes();
  for (int k = 0; k < n; ++k) {
    if (e.removed(k)) continue;
    const NodeSpec node = e.node(k);
    const std::string op = passes::elemwise_scalar_op(node);
    if (op.empty() || op == "Second" || node.outputs.size() != 1) continue;
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
    if (shapers.empty()) continue;
    const Shape want = e.g.vars[out].static_shape;
    int r;
    if (passes::same_broadcast_pattern(broadcast_static(e.g, ins), want)) {
      r = b.elem(op, ins, dt);
    } else {
      std::vector<int> all = ins;
      all.insert(all.end(), shapers.begin(), shapers.end());
      if (!passes::same_broadcast_pattern(broadcast_static(e.g, all), want)) continue;
      r = b.elem(op, ins, dt);
      for (int x : shapers) r = b.elem("Second", {x, r}, dt);
    }
    e.replace(out, r);
    e.remove(k);
    ++rewrites;
  }
  if (rewrites) e.commit();
  return rewrites;
}

}  // namespace ember::grad
