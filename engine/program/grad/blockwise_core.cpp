// A Blockwise triangular solve of one matrix against a batch of vectors is
// one solve against a matrix, as PyTensor's rewrites leave an MvNormal's
// `solve_triangular(L, (x - mu).T)`: A X = B^T column by column is the same
// system for every column, where the Blockwise would solve 200 systems of 3
// one call at a time; a batch of matrices (a covariance per group), each
// broadcast along its group's vectors, is a Blockwise of such solves. Per
// column the same substitution, but the solver may order a matrix's work
// differently, so on differentiated graphs only.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

int unbatch_solves(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (node.op != "Blockwise" || node.inputs.size() != 2 || node.outputs.size() != 1) return -1;
    const nlohmann::json& core = node.attrs.value("core_op", nlohmann::json::object());
    if (!core.is_object() || core.value("op", "") != "SolveTriangular" ||
        node.attrs.value("signature", "") != "(m,m),(m)->(m)")
      return -1;
    nlohmann::json attrs = core.value("attrs", nlohmann::json::object());
    if (!attrs.is_object() || attrs.value("b_ndim", 0) != 1) return -1;
    const int a = node.inputs[0], v = node.inputs[1], out = node.outputs[0];
    const Shape as = e.g.vars[a].static_shape, vs = e.g.vars[v].static_shape;
    // k >= 0 batch dims both share (the batch of matrices: a covariance per
    // group), then one the matrix is broadcast along (the vectors).
    const int k = as.ndim - 3;
    if (k < 0 || vs.ndim != k + 2 || as.dims[k] != 1) return -1;
    for (int d = 0; d < k; ++d)
      if (as.dims[d] < 0 || as.dims[d] != vs.dims[d]) return -1;
    const DType dt = e.g.vars[out].dtype;
    attrs["b_ndim"] = 2;
    std::vector<int> a_order, v_order, x_order;
    for (int d = 0; d < k; ++d) a_order.push_back(d), v_order.push_back(d), x_order.push_back(d);
    a_order.insert(a_order.end(), {k + 1, k + 2});
    v_order.insert(v_order.end(), {k + 1, k});
    x_order.insert(x_order.end(), {k + 1, k});
    const int am = b.dimshuffle(a, a_order), vt = b.dimshuffle(v, v_order);
    Shape xs = b.spec(vt).static_shape;
    if (k == 0) return b.dimshuffle(b.node("SolveTriangular", {am, vt}, attrs, dt, xs), x_order);
    const nlohmann::json bw{{"core_op", {{"op", "SolveTriangular"}, {"attrs", attrs}}},
                            {"signature", "(m,m),(m,n)->(m,n)"}};
    return b.dimshuffle(b.node("Blockwise", {am, vt}, bw, dt, xs), x_order);
  });
}

}  // namespace ember::grad
