// The adjoint of an Elemwise over a Composite: the Composite's scalar nodes
// become single-op Elemwise nodes over the node's inputs (constants as
// tensor constants with dims of 1, its outputs read from the node itself),
// and a reverse sweep inside the Composite applies each scalar op's rule
// (interp/scalar_grad.def, through scalar_adjoint). Fusion, which runs
// after differentiation, fuses the forward and backward work again.
#include "engine/ops/elemwise.hpp"
#include "engine/program/grad/adjoints.hpp"

namespace ember::grad {

namespace {

bool is_float(DType dt) { return dt == DType::Float64 || dt == DType::Float32; }

int scalar_const(Builder& b, const interp::ScalarConst& sc, int ndim) {
  Shape s;
  s.ndim = ndim;
  for (int d = 0; d < ndim; ++d) s.dims[d] = 1;
  Array a = Array::empty(sc.dtype, s);
  dtype_dispatch(sc.dtype, [&](auto t) {
    using T = decltype(t);
    *a.data<T>() = dtype_is_float(sc.dtype) ? static_cast<T>(sc.f) : static_cast<T>(sc.i);
  });
  return b.e.add_constant(sc.dtype, s, a);
}

}  // namespace

std::vector<int> composite_adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz,
                                   const std::vector<char>& need, const std::string& where) {
  std::vector<DType> ins, outs;
  for (int v : n.inputs) ins.push_back(b.dtype(v));
  for (int v : n.outputs) outs.push_back(b.dtype(v));
  const int k = b.e.producer(n.outputs[0]);
  NodeContext ctx(b.e.g, k, TensorOp::Elemwise);
  const interp::Composite c = read_composite(ctx, n.attrs.at("scalar_op"), ins, outs);
  const int nd = b.ndim(n.outputs[0]);
  const int nin = static_cast<int>(c.inputs.size()), first = c.first_node_value(), nv = c.num_values();

  // Forward values: the node's inputs, constants, its outputs where the
  // Composite outputs a node's value, else a new Elemwise.
  std::vector<int> val(nv, -1);
  for (int i = 0; i < nin; ++i) val[i] = n.inputs[i];
  for (size_t j = 0; j < c.constants.size(); ++j) val[nin + j] = scalar_const(b, c.constants[j], nd);
  for (size_t j = 0; j < c.outputs.size(); ++j)
    if (c.outputs[j] >= first && val[c.outputs[j]] < 0) val[c.outputs[j]] = n.outputs[j];
  for (int v = first; v < nv; ++v) {
    if (val[v] >= 0) continue;
    const interp::ScalarNode& s = c.nodes[v - first];
    std::vector<int> args;
    for (int32_t a : s.inputs) args.push_back(val[a]);
    val[v] = b.elem(interp::op_info(s.op).name, std::move(args), s.dtype);
  }

  // Float values depending on an input whose gradient is needed.
  std::vector<char> reach(nv, 0);
  for (int i = 0; i < nin; ++i) reach[i] = need[i] && is_float(c.inputs[i]);
  for (int v = first; v < nv; ++v) {
    const interp::ScalarNode& s = c.nodes[v - first];
    for (int32_t a : s.inputs) reach[v] = reach[v] || reach[a];
    reach[v] = reach[v] && is_float(s.dtype);
  }

  // Contributions, each cast to its value's dtype and summed in the order met.
  std::vector<std::vector<int>> terms(nv);
  auto total = [&](int v) {
    std::vector<int>& t = terms[v];
    if (t.empty()) return -1;
    for (int& x : t) x = b.cast(x, c.value_dtype(v));
    const int s = b.add(t);
    t.assign(1, s);
    return s;
  };
  for (size_t j = 0; j < c.outputs.size(); ++j)
    if (j < gz.size() && gz[j] >= 0 && reach[c.outputs[j]]) terms[c.outputs[j]].push_back(gz[j]);
  for (int v = nv - 1; v >= first; --v) {
    if (!reach[v]) continue;
    const int g = total(v);
    if (g < 0) continue;
    const interp::ScalarNode& s = c.nodes[v - first];
    ElemwiseEnv env;
    for (int32_t a : s.inputs) env.inputs.push_back(val[a]);
    env.z = val[v];
    env.gz = g;
    env.out_ndim = nd;
    const std::string in = where + ", Composite node " + std::to_string(v - first);
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      if (!reach[s.inputs[i]]) continue;
      env.wrt = static_cast<int>(i);
      env.dtype = c.value_dtype(s.inputs[i]);
      const int r = scalar_adjoint(b, interp::op_info(s.op).name, env, in);
      if (r >= 0) terms[s.inputs[i]].push_back(r);
    }
  }
  std::vector<int> out(nin, -1);
  for (int i = 0; i < nin; ++i)
    if (reach[i]) out[i] = total(i);
  return out;
}

}  // namespace ember::grad
