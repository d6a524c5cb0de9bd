// Element-wise work on gathered values, done on the values they are gathered
// from: f(x[idx], c...) -> f(x, c...)[idx], when idx is at least twice as
// long as x's first axis and f costs more than a gather (a math-library call,
// a division, a square root, a loop). A hierarchical model's log(sigma[g])
// and 1 / sigma[g] per observation become one per group. Every element is
// the same scalar op on the same operands, so the bits stay; an index out of
// range fails in the gather, as before.
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

int lift_through_gathers(Editor& e) {
  int rewrites = 0;
  const int n = e.num_nodes();
  for (int k = 0; k < n; ++k) {
    if (e.removed(k)) continue;
    const NodeSpec& node = e.node(k);
    if (!is_op(node, TensorOp::Elemwise) || node.outputs.size() != 1 ||
        !costly_elemwise(node))
      continue;
    // One gathered operand; every other one element, so it broadcasts over
    // x as it did over x[idx].
    int at = -1;
    for (size_t i = 0; i < node.inputs.size() && at != -2; ++i)
      if (!one_element(e.g.vars[node.inputs[i]])) at = at == -1 ? static_cast<int>(i) : -2;
    if (at < 0) continue;
    const int gathered = node.inputs[at], out = node.outputs[0];
    const int p = e.producer(gathered);
    if (p < 0 || !is_op(e.node(p), TensorOp::AdvancedSubtensor1)) continue;
    const NodeSpec& take = e.node(p);
    if (take.inputs.size() != 2) continue;
    const int x = take.inputs[0], idx = take.inputs[1];
    const Shape xs = e.g.vars[x].static_shape, gs = e.g.vars[gathered].static_shape;
    const VarSpec ov = e.g.vars[out];
    if (xs.ndim < 1 || xs.ndim != gs.ndim || static_size(xs) < 0 || !same_static_shape(gs, ov.static_shape) ||
        gs.dims[0] < 2 * xs.dims[0])
      continue;
    NodeSpec f = node;  // a copy: add_op below may move the node
    f.inputs[at] = x;
    f.outputs = {e.add_var(ov.dtype, xs)};
    e.add_node(f, k);
    const int lifted = e.add_op("AdvancedSubtensor1", {f.outputs[0], idx}, nlohmann::json::object(), ov.dtype,
                                ov.static_shape, k);
    e.replace(out, lifted);
    e.remove(k);
    ++rewrites;
  }
  if (rewrites) e.commit();
  return rewrites;
}

}  // namespace ember::passes
