// Sums of outer products: Sum over axis 0 of x[n, i, 1] * y[n, 1, j], x and
// y DimShuffles of matrices, is the matrix product sum_n a[i, n] b[n, j]. An
// MvNormal's gradient sums the outer products of its solved residuals so;
// as one product it needs no (N, p, q) temporary nor its pass over it. A
// different order of additions, so on differentiated graphs only.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

// v as a DimShuffle of a float64 matrix to 3 dims with a new axis at
// `bcast` (1 or 2): the matrix and its axes at output dims 0 (summed) and
// the other kept one. src < 0 when v is not one.
struct Side {
  int src = -1, ax_n = -1, ax_k = -1;
};

Side side(passes::Editor& e, int v, int bcast) {
  const int p = e.producer(v);
  if (p < 0 || e.removed(p)) return {};
  const NodeSpec& n = e.node(p);
  if (!passes::is_op(n, TensorOp::DimShuffle) || n.inputs.size() != 1) return {};
  const auto order = passes::dimshuffle_order(n);
  const int src = n.inputs[0];
  const VarSpec& s = e.g.vars[src];
  if (!order || order->size() != 3 || s.static_shape.ndim != 2 || s.dtype != DType::Float64) return {};
  const std::vector<int>& o = *order;
  const int other = bcast == 1 ? 2 : 1;
  if (o[bcast] != -1 || o[0] < 0 || o[other] < 0 || o[0] == o[other]) return {};
  // Only static 1s broadcast: a summed dim of 1 against a longer one would
  // broadcast in the product but not in a matrix product.
  if (s.static_shape.dims[o[0]] == 1) return {};
  return {src, o[0], o[other]};
}

}  // namespace

int sum_outer_products(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (node.op != "Sum" || node.inputs.size() != 1 || node.outputs.size() != 1) return -1;
    const int x = node.inputs[0], out = node.outputs[0];
    const VarSpec &xs = e.g.vars[x], os = e.g.vars[out];
    if (os.dtype != DType::Float64 || xs.dtype != DType::Float64 || xs.static_shape.ndim != 3 ||
        os.static_shape.ndim != 2 || reduce_axes(node.attrs, 3) != std::vector<int>{0})
      return -1;
    const int p = e.producer(x);
    if (p < 0 || e.removed(p)) return -1;
    const NodeSpec& m = e.node(p);
    if (passes::elemwise_scalar_op(m) != "Mul" || m.inputs.size() != 2 || m.outputs.size() != 1) return -1;
    const std::vector<int> ins = m.inputs;
    const Shape shape = os.static_shape;
    for (int k = 0; k < 2; ++k) {
      const Side l = side(e, ins[k], 2), r = side(e, ins[1 - k], 1);
      if (l.src < 0 || r.src < 0) continue;
      const int a = l.ax_k == 0 ? l.src : b.dimshuffle(l.src, {1, 0});  // (p, N)
      const int c = r.ax_n == 0 ? r.src : b.dimshuffle(r.src, {1, 0});  // (N, q)
      return b.node("Dot", {a, c}, nlohmann::json::object(), DType::Float64, shape);
    }
    return -1;
  });
}

}  // namespace ember::grad
