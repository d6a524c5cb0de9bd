// Fills sunk through element-wise ops, as PyTensor's canonicalize does
// (local_fill_sink): f(..., fill(x, y), ...) -> fill(x, f(..., y, ...)), and
// the fill goes when the other operands already give f's output its shape.
// The gradient of a Sum is a fill of its output gradient; sunk, the
// gradient's arithmetic runs on the small value and a later sum of the
// broadcast becomes a product (sum_broadcast.cpp). Exact: a fill only
// repeats values.
// A constant whose elements are all one value is taken as a fill of that
// value: folding made it from one (a truncated Poisson's lower bound,
// fill(data, 0) + 1, is 400 ones), and the ops reading it run once instead
// of once per element.
#include <cstring>
#include <unordered_map>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

// v's one value as a constant of v's rank with every dim 1 when v is a
// constant of more than one element all equal bit for bit; else -1.
int uniform_constant(passes::Editor& e, int v) {
  if (!e.is_constant(v)) return -1;
  const Tensor t = e.constant(v);
  if (t.size() < 2) return -1;
  bool same = true;
  dtype_dispatch(t.dtype, [&](auto z) {
    using T = decltype(z);
    const T first = t.at<T>(0);
    for (int64_t i = 1; i < t.size() && same; ++i) {
      const T x = t.at<T>(i);
      same = std::memcmp(&x, &first, sizeof(T)) == 0;
    }
  });
  if (!same) return -1;
  Shape ones;
  ones.ndim = t.shape.ndim;
  for (int d = 0; d < ones.ndim; ++d) ones.dims[d] = 1;
  Array a = Array::empty(t.dtype, ones);
  dtype_dispatch(t.dtype, [&](auto z) { *a.data<decltype(z)>() = t.at<decltype(z)>(0); });
  return e.add_constant(t.dtype, ones, a);
}

}  // namespace

int sink_fills(passes::Editor& e) {
  std::unordered_map<int, int> uniform;  // constant -> its value (or -1), each scanned once
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    const std::string op = passes::elemwise_scalar_op(node);
    if (op.empty() || op == "Second" || node.outputs.size() != 1) return -1;
    const int out = node.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    std::vector<int> ins = node.inputs, shapers;
    for (int& v : ins) {
      auto [it, fresh] = uniform.try_emplace(v, -1);
      if (fresh) it->second = uniform_constant(e, v);
      if (it->second >= 0) {
        shapers.push_back(v);
        v = it->second;
        continue;
      }
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
