#include "engine/program/grad/builder.hpp"

#include <algorithm>

namespace ember::grad {

using nlohmann::json;

Shape broadcast_static(const Graph& g, const std::vector<int>& vars) {
  Shape s;
  s.ndim = 0;
  for (int v : vars) s.ndim = std::max(s.ndim, g.vars[v].static_shape.ndim);
  for (int d = 0; d < s.ndim; ++d) {
    int64_t known = -1;
    bool all_one = true;
    for (int v : vars) {
      const Shape& vs = g.vars[v].static_shape;
      const int dd = d - (s.ndim - vs.ndim);
      const int64_t n = dd >= 0 ? vs.dims[dd] : 1;
      if (n != 1) all_one = false;
      if (n >= 0 && n != 1) known = n;
    }
    s.dims[d] = all_one ? 1 : known;
  }
  return s;
}

bool is_zeros(const passes::Editor& e, int v) {
  if (passes::constant_all(e, v, 0.0)) return true;
  const int p = e.producer(v);
  if (p < 0 || e.removed(p)) return false;
  const NodeSpec& n = e.g.nodes[p];
  if (passes::elemwise_scalar_op(n) == "Second") return passes::constant_all(e, e.resolve(n.inputs[1]), 0.0);
  return passes::is_op(n, TensorOp::Alloc) && passes::constant_all(e, e.resolve(n.inputs[0]), 0.0);
}

std::vector<int> reduce_axes(const json& attrs, int ndim) {
  std::vector<int> axes;
  auto it = attrs.find("axis");
  if (it == attrs.end() || it->is_null()) {
    for (int d = 0; d < ndim; ++d) axes.push_back(d);
  } else if (it->is_number_integer()) {
    axes.push_back(it->get<int>());
  } else {
    for (const json& a : *it) axes.push_back(a.get<int>());
  }
  // A 0-d input's axis 0 (or -1) reduces nothing (PyTensor's normalize_reduce_axis).
  if (ndim == 0) axes.erase(std::remove_if(axes.begin(), axes.end(), [](int a) { return a == 0 || a == -1; }),
                            axes.end());
  for (int& a : axes)
    if (a < 0) a += ndim;
  std::sort(axes.begin(), axes.end());
  return axes;
}

int Builder::var(DType dt, const Shape& s) {
  VarSpec v;
  v.dtype = dt;
  v.static_shape = s;
  return e.add_var(v);
}

int Builder::node(std::string op, std::vector<int> inputs, json attrs, DType dt, const Shape& s) {
  const int out = var(dt, s);
  NodeSpec n;
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = {out};
  n.attrs = attrs.is_null() ? json::object() : std::move(attrs);
  e.add_node(std::move(n), at_);
  return out;
}

int Builder::elem(std::string_view scalar_op, std::vector<int> inputs, DType dt) {
  const Shape s = broadcast_static(e.g, inputs);
  return node("Elemwise", std::move(inputs), json{{"scalar_op", json{{"op", std::string(scalar_op)}}}}, dt, s);
}

int Builder::int_vector(const std::vector<int64_t>& values) {
  Shape s;
  s.ndim = 1;
  s.dims[0] = static_cast<int64_t>(values.size());
  Array a = Array::empty(DType::Int64, s);
  std::copy(values.begin(), values.end(), a.data<int64_t>());
  return e.add_constant(DType::Int64, s, a);
}

int Builder::cast(int v, DType dt) { return dtype(v) == dt ? v : elem("Cast", {v}, dt); }

int Builder::add(const std::vector<int>& terms) {
  if (terms.size() == 1) return terms[0];
  return elem("Add", terms, dtype(terms[0]));
}

int Builder::zeros_like(int x) { return elem("Second", {x, constant(0.0, dtype(x), ndim(x))}, dtype(x)); }

int Builder::sum_to(int g, const Shape& target) {
  const Shape gs = spec(g).static_shape;
  const int lead = gs.ndim - target.ndim;
  std::vector<int> axes, order;
  int kept = 0;
  for (int d = 0; d < gs.ndim; ++d) {
    const bool summed = d < lead || (target.dims[d - lead] == 1 && gs.dims[d] != 1);
    if (summed) axes.push_back(d);
    if (d >= lead) order.push_back(summed ? -1 : kept);
    if (!summed) ++kept;
  }
  if (axes.empty()) return g;
  Shape rs;
  rs.ndim = 0;
  for (int d = 0; d < gs.ndim; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) rs.dims[rs.ndim++] = gs.dims[d];
  const int r = node("Sum", {g}, json{{"axis", axes}}, dtype(g), rs);
  return dimshuffle(r, order);
}

int Builder::dimshuffle(int v, const std::vector<int>& order) {
  const Shape in = spec(v).static_shape;
  bool identity = static_cast<int>(order.size()) == in.ndim;
  for (int i = 0; identity && i < in.ndim; ++i) identity = order[i] == i;
  if (identity) return v;
  Shape s;
  s.ndim = static_cast<int>(order.size());
  json o = json::array();
  for (int i = 0; i < s.ndim; ++i) {
    s.dims[i] = order[i] < 0 ? 1 : in.dims[order[i]];
    o.push_back(order[i] < 0 ? json("x") : json(order[i]));
  }
  return node("DimShuffle", {v}, json{{"new_order", o}}, dtype(v), s);
}

int Builder::reshape(int v, const Shape& s) {
  std::vector<int64_t> dims(s.dims, s.dims + s.ndim);
  return node("Reshape", {v, int_vector(dims)}, json{{"ndim", s.ndim}}, dtype(v), s);
}

}  // namespace ember::grad
