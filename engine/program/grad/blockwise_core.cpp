// A Blockwise triangular solve of one matrix against a batch of vectors is
// one solve against a matrix, as PyTensor's rewrites leave an MvNormal's
// `solve_triangular(L, (x - mu).T)`: A X = B^T column by column is the same
// system for every column, where the Blockwise would solve 200 systems of 3
// one call at a time. Per column the same substitution, but the solver may
// order a matrix's work differently, so on differentiated graphs only.
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
    // One batch dim, the matrix's broadcast along it.
    if (as.ndim != 3 || as.dims[0] != 1 || vs.ndim != 2) return -1;
    const DType dt = e.g.vars[out].dtype;
    Shape xs;
    xs.ndim = 2;
    xs.dims[0] = vs.dims[1];
    xs.dims[1] = vs.dims[0];
    attrs["b_ndim"] = 2;
    const int x = b.node("SolveTriangular", {b.dimshuffle(a, {1, 2}), b.dimshuffle(v, {1, 0})}, attrs, dt, xs);
    return b.dimshuffle(x, {1, 0});
  });
}

}  // namespace ember::grad
