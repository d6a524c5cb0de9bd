// The adjoints of the ops built on products and normalizations: Softmax,
// LogSoftmax, Prod (and CAReduce of Mul), CumOp of mode mul; PyTensor's
// pullbacks, node for node.
#include <algorithm>

#include "engine/ops/tensor_op.hpp"
#include "engine/program/grad/adjoint_kit.hpp"
#include "interp/dtype.hpp"

namespace ember::grad {

using nlohmann::json;

int Kit::unreduce(int v, const std::vector<int>& axes, int nd) {
  std::vector<int> order;
  int k = 0;
  for (int d = 0; d < nd; ++d) order.push_back(std::binary_search(axes.begin(), axes.end(), d) ? -1 : k++);
  return b.dimshuffle(v, order);
}

int Kit::sum_keep(int v, const std::vector<int>& axes) {
  const Shape s = shape(v);
  Shape rs;
  rs.ndim = 0;
  for (int d = 0; d < s.ndim; ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) rs.dims[rs.ndim++] = s.dims[d];
  const int r = b.node("Sum", {v}, json{{"axis", axes}}, dtype(v), rs);
  return unreduce(r, axes, s.ndim);
}

namespace {

// Softmax's axis attribute: null (all axes) or one integer.
std::vector<int> softmax_axes(const Kit& c) { return reduce_axes(c.n.attrs, c.ndim(c.in(0))); }

// d = gz * sm; d - sm * sum(d, axis, keepdims)
void softmax(Kit& c) {
  const int sm = c.n.outputs[0];
  const int d = c.elem("Mul", {c.grad_of(0), sm});
  c.give(0, c.elem("Sub", {d, c.elem("Mul", {sm, c.sum_keep(d, softmax_axes(c))})}));
}

// gz - sum(gz, axis, keepdims) * softmax(x, axis)
void log_softmax(Kit& c) {
  const int x = c.in(0), g = c.grad_of(0);
  json attrs{{"axis", c.n.attrs.contains("axis") ? c.n.attrs.at("axis") : json(nullptr)}};
  const int sm = c.b.node("Softmax", {x}, attrs, c.dtype(c.n.outputs[0]), c.shape(c.n.outputs[0]));
  c.give(0, c.elem("Sub", {g, c.elem("Mul", {c.sum_keep(g, softmax_axes(c)), sm})}));
}

// PyTensor's Prod.L_op: gz * prod / x in groups without a zero; in a group
// with one zero, the product of the others at the zero and 0 elsewhere; 0 in
// a group with more. ProdWithoutZeros is a Prod with the zeros made ones.
void prod(Kit& c) {
  const int x = c.in(0), z = c.n.outputs[0], nd = c.ndim(x);
  const DType dt = c.dtype(x);
  if (!dtype_is_float(dt) || !dtype_is_float(c.dtype(z))) c.no_rule("Prod of integers");
  const std::vector<int> axes = reduce_axes(c.n.attrs, nd);
  const int g = c.b.cast(c.unreduce(c.grad_of(0), axes, nd), dt);
  if (axes.empty()) return c.give(0, g);
  const int pz = c.b.cast(c.unreduce(z, axes, nd), dt);
  const int no_zeros = c.elem("TrueDiv", {c.elem("Mul", {g, pz}), x});
  const int zero = c.b.constant(0.0, dt, nd);
  const int is_zero = c.b.elem("EQ", {x, zero}, DType::Bool);
  Shape rs = c.shape(z);
  const int count = c.b.node("Sum", {c.b.cast(is_zero, DType::Int64)}, json{{"axis", axes}}, DType::Int64, rs);
  auto count_is = [&](double k) {
    const int e = c.b.elem("EQ", {count, c.b.constant(k, DType::Int64, rs.ndim)}, DType::Bool);
    return c.unreduce(e, axes, nd);
  };
  const int single_zero = c.b.elem("AND", {count_is(1), is_zero}, DType::Bool);
  const int nonzero = c.b.elem("Switch", {c.b.elem("NEQ", {x, zero}, DType::Bool), x, c.b.constant(1.0, dt, nd)}, dt);
  Shape ps = c.shape(z);
  json pattrs{{"axis", axes}};
  const int others = c.unreduce(c.b.node("Prod", {nonzero}, pattrs, dt, ps), axes, nd);
  const int with_zero = c.elem("Mul", {c.b.elem("Switch", {single_zero, others, zero}, dt), g});
  c.give(0, c.b.elem("Switch", {count_is(0), no_zeros, with_zero}, dt));
}

// x reversed along `axis`.
int flip(Kit& c, int x, int axis) {
  json idx = json::array();
  for (int d = 0; d < axis; ++d)
    idx.push_back(json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", nullptr}});
  idx.push_back(json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", -1}});
  return c.b.node("Subtensor", {x}, json{{"idx_list", idx}}, c.dtype(x), c.shape(x));
}

// reverse-cumsum(cumprod(x) * gz) / x
void cumprod(Kit& c) {
  auto it = c.n.attrs.find("axis");
  if (it == c.n.attrs.end() || it->is_null()) c.no_rule("CumOp over the flattened input");
  const int x = c.in(0), nd = c.ndim(x);
  int axis = it->get<int>();
  if (axis < 0) axis += nd;
  const int fg = flip(c, c.elem("Mul", {c.n.outputs[0], c.grad_of(0)}), axis);
  const int cum = c.b.node("CumOp", {fg}, json{{"axis", axis}, {"mode", "add"}}, c.dtype(fg), c.shape(fg));
  c.give(0, c.elem("TrueDiv", {flip(c, cum, axis), x}));
}

}  // namespace

std::vector<int> products_adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz,
                                  const std::vector<char>& need, const std::string& where) {
  Kit c(b, n, gz, need, where);
  const std::optional<TensorOp> op = find_tensor_op(n.op);
  if (op == TensorOp::Softmax) softmax(c);
  else if (op == TensorOp::LogSoftmax) log_softmax(c);
  else if (op == TensorOp::Prod || op == TensorOp::CAReduce) prod(c);
  else if (op == TensorOp::CumOp && n.attrs.value("mode", "add") == "mul") cumprod(c);
  else c.no_rule("no adjoint for op " + n.op);
  return c.out;
}

}  // namespace ember::grad
