// Algebraic simplification, in the manner of XLA's: local rewrites of one
// node at a time, in topological order (so each node sees its inputs
// already simplified), applied only where the result is the same bits:
//
//   fill: Second(x, y) -> y when y already has the output's broadcast pattern
//   identity views and casts: DeepCopyOp, ViewOp, OutputGuard,
//     TensorFromScalar, ScalarFromTensor, Elemwise Identity, Cast to the
//     same dtype, CheckAndRaise of constant-true conditions -> x
//   DimShuffle: the identity -> x; DimShuffle of DimShuffle -> one; the 0-d
//     element of a one-input MakeVector -> that input
//   All / Any of one bool element -> a view of it (of a 0-d one: it)
//   Reshape: to x's own static shape -> x; of one element to one element
//     -> DimShuffle (a view either way)
//   Subtensor taking every element (full slices) -> x
//   SpecifyShape checking nothing beyond x's static shape -> x
//   Alloc of a value already of the output's static shape -> the value
//   neg(neg x) -> x; x * 1 -> x (any operand of a Mul); x / 1 -> x;
//   x + (-0.0) -> x (floats; integer 0); x - 0 -> x (+0.0 or integer 0);
//   x ** 1 -> x; x ** 2 -> Sqr(x) and x ** -1 -> Reciprocal(x) (float64, whose
//     pow gives exactly these for these exponents: docs/math.md);
//   Switch on a constant condition -> the branch taken; x & true, x | false
//     -> x; x & false, x | true -> the constant (bool, when it has the shape)
//   x[i0, i1, ...] by constant vectors (or a constant mask) over the first m
//     axes -> the one-axis op on x reshaped to (d0 * ... * dm-1, rest)
//   AdvancedSubtensor / AdvancedIncSubtensor of one integer vector (or of a
//     constant boolean mask: its true positions) on axis 0
//     -> AdvancedSubtensor1 / AdvancedIncSubtensor1
//
// where an operand dropped never decides the output's shape (PyTensor's
// broadcasting rule) and the result has the output's dtype. x + 0.0 is not
// x for x = -0.0 and stays.
#include <cmath>
#include <cstring>
#include <optional>

#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

using nlohmann::json;

// Every element of constant v is a zero whose sign bit is `negative`
// (floats), or 0 (integers and bool, when `negative` is false).
bool constant_zero(const Editor& e, int v, bool negative) {
  if (!e.is_constant(v)) return false;
  const Tensor t = e.constant(v);
  bool all = true;
  dtype_dispatch(t.dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < t.size() && all; ++i) {
      const T x = t.at<T>(i);
      if constexpr (std::is_floating_point_v<T>) all = x == T(0) && std::signbit(x) == negative;
      else all = !negative && x == T(0);
    }
  });
  return all;
}

bool constant_bool(const Editor& e, int v, bool value) {
  if (!e.is_constant(v)) return false;
  const Tensor t = e.constant(v);
  bool all = true;
  dtype_dispatch(t.dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < t.size() && all; ++i) all = (t.at<T>(i) != T(0)) == value;
  });
  return all;
}

json order_json(const std::vector<int>& order) {
  json a = json::array();
  for (int x : order) a.push_back(x < 0 ? json("x") : json(x));
  return a;
}

bool is_identity_order(const std::vector<int>& order, int in_ndim) {
  if (static_cast<int>(order.size()) != in_ndim) return false;
  for (int i = 0; i < in_ndim; ++i)
    if (order[i] != i) return false;
  return true;
}

// A Subtensor whose idx_list takes every element of x.
bool full_subtensor(const NodeSpec& n, const VarSpec& x) {
  if (n.inputs.size() != 1) return false;
  auto it = n.attrs.find("idx_list");
  if (it == n.attrs.end() || !it->is_array() || static_cast<int>(it->size()) > x.static_shape.ndim) return false;
  for (size_t d = 0; d < it->size(); ++d) {
    const json& e = (*it)[d];
    if (!e.is_object() || e.value("type", json()) != "slice") return false;
    auto field = [&](const char* k) { return e.contains(k) ? e[k] : json(); };
    const json start = field("start"), stop = field("stop"), step = field("step");
    if (!step.is_null() && !(step.is_number_integer() && step.get<int64_t>() == 1)) return false;
    if (!start.is_null() && !(start.is_number_integer() && start.get<int64_t>() == 0)) return false;
    if (!stop.is_null()) {
      const int64_t n_d = x.static_shape.dims[d];
      if (!stop.is_number_integer() || n_d < 0 || stop.get<int64_t>() < n_d) return false;
    }
  }
  return true;
}

class Simplifier {
 public:
  explicit Simplifier(Editor& ed) : e(ed), g(ed.g) {}
  int run();

 private:
  Editor& e;
  Graph& g;
  int rewrites = 0;

  const VarSpec& var(int v) const { return g.vars[v]; }
  // o may be replaced by x: same dtype and run-time shape.
  bool same_type(int x, int o) const {
    return var(x).dtype == var(o).dtype && same_broadcast_pattern(var(x).static_shape, var(o).static_shape);
  }
  // A graph output copied from an input, a constant or another output keeps its copy.
  bool output_keeps_copy(int o, int x) const { return e.is_graph_output(o) && (e.producer(x) < 0 || e.is_graph_output(x)); }
  void to(int k, int o, int x) {
    e.replace(o, x);
    e.remove(k);
    ++rewrites;
  }
  void set_scalar_op(NodeSpec& n, const char* op, std::vector<int> inputs) {
    n.attrs["scalar_op"] = json{{"op", op}};
    n.inputs = std::move(inputs);
    ++rewrites;
  }
  bool specify_shape_is_static(const NodeSpec& n, const Shape& xs, const Shape& os) const;
  void elemwise(int k, NodeSpec& n, const std::string& s);
  void dimshuffle(int k, NodeSpec& n);
  void advanced_to_axis0(NodeSpec& n);
  int mask_positions(int mask, int64_t dim);
  void advanced_flatten(int k);
};

// A SpecifyShape that checks nothing at run time: each dim it names is a
// constant equal to x's static dim, and its output's static shape says
// nothing more than x's.
bool Simplifier::specify_shape_is_static(const NodeSpec& n, const Shape& xs, const Shape& os) const {
  if (xs.ndim != os.ndim) return false;
  for (int d = 0; d < os.ndim; ++d)
    if (os.dims[d] >= 0 && os.dims[d] != xs.dims[d]) return false;
  auto sh = n.attrs.find("shape");
  if (sh == n.attrs.end() || !sh->is_array() || static_cast<int>(sh->size()) != xs.ndim) return false;
  for (int d = 0; d < xs.ndim; ++d) {
    const json& entry = (*sh)[d];
    if (entry.is_null()) continue;
    if (!entry.is_object() || !entry.contains("input") || !entry["input"].is_number_integer()) return false;
    const int64_t i = entry["input"].get<int64_t>();
    if (i < 1 || i >= static_cast<int64_t>(n.inputs.size()) || xs.dims[d] < 0) return false;
    const int v = n.inputs[i];
    if (!e.is_constant(v) || e.constant(v).size() != 1 || dtype_is_float(var(v).dtype) ||
        !constant_all(e, v, static_cast<double>(xs.dims[d])))
      return false;
  }
  return true;
}

// The attrs of the AdvancedIncSubtensor1 doing an AdvancedIncSubtensor's
// updates (set_instead_of_inc), when those run in order (ignore_duplicates
// off); else nullopt.
std::optional<json> ordered_increment_attrs(const json& a) {
  auto nd = a.find("ignore_duplicates");
  if (nd != a.end() && !(nd->is_boolean() && !nd->get<bool>()) && !(nd->is_number_integer() && nd->get<int64_t>() == 0))
    return std::nullopt;
  auto set = a.find("set_instead_of_inc");
  if (set != a.end() && !set->is_boolean()) return std::nullopt;
  return json{{"set_instead_of_inc", set != a.end() && set->get<bool>()}};
}

// A constant boolean mask over an axis of static length `dim`: a new int64
// constant of its true positions (what NumPy's nonzero gives, in order), or
// -1. A mask of another length stays, so the op reports it per call.
int Simplifier::mask_positions(int mask, int64_t dim) {
  if (!e.is_constant(mask) || dim < 0) return -1;
  const Tensor m = e.constant(mask);
  if (m.ndim() != 1 || m.dim(0) != dim) return -1;
  return passes::mask_positions(e, m, true);
}

// x[idx] / inc(x[idx], y) with one integer vector (or a constant boolean
// mask: the vector of its true positions) indexing axis 0 is
// AdvancedSubtensor1 / AdvancedIncSubtensor1: the same gather, and the same
// sequential updates, through their one-axis kernels.
void Simplifier::advanced_to_axis0(NodeSpec& n) {
  const bool inc = is_op(n, TensorOp::AdvancedIncSubtensor);
  const size_t idx_input = inc ? 2 : 1;
  if (n.inputs.size() != idx_input + 1 || var(n.inputs[0]).static_shape.ndim < 1) return;
  auto it = n.attrs.find("idx_list");
  if (it == n.attrs.end() || !it->is_array() || it->size() != 1) return;
  const json& e0 = (*it)[0];
  if (!e0.is_object() || e0.value("type", json()) != "array" || e0.value("input", json()) != idx_input) return;
  const VarSpec& idx = var(n.inputs[idx_input]);
  if (idx.static_shape.ndim != 1 || dtype_is_float(idx.dtype)) return;
  int mask_index = -1;  // a constant mask: the int64 constant of its true positions
  if (idx.dtype == DType::Bool) {
    mask_index = mask_positions(n.inputs[idx_input], var(n.inputs[0]).static_shape.dims[0]);
    if (mask_index < 0) return;
  }
  json attrs = json::object();
  if (inc) {
    std::optional<json> a = ordered_increment_attrs(n.attrs);
    if (!a) return;
    attrs = std::move(*a);
  }
  n.op = inc ? "AdvancedIncSubtensor1" : "AdvancedSubtensor1";
  n.attrs = std::move(attrs);
  if (mask_index >= 0) n.inputs[idx_input] = mask_index;
  ++rewrites;
}

// x[i0, i1, ...] by constant integer vectors of one length (0-d entries
// broadcast) over x's first m axes (PyMC's imputation of a matrix indexes
// by mask.nonzero()), or by one constant boolean mask over them, is x
// reshaped to (d0 * ... * dm-1, rest) indexed by the flat positions:
// AdvancedSubtensor1, and for an increment AdvancedIncSubtensor1 reshaped
// back. Entries and updates keep their order: the same bits. An index out
// of range stays, so the call reports it.
void Simplifier::advanced_flatten(int k) {
  const NodeSpec& n = g.nodes[k];
  const bool inc = is_op(n, TensorOp::AdvancedIncSubtensor);
  const size_t first = inc ? 2 : 1;
  auto it = n.attrs.find("idx_list");
  if (it == n.attrs.end() || !it->is_array() || it->empty() || n.inputs.size() != first + it->size()) return;
  std::optional<json> inc_attrs;  // the AdvancedIncSubtensor1's
  if (inc && !(inc_attrs = ordered_increment_attrs(n.attrs))) return;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& ent = (*it)[i];
    if (!ent.is_object() || ent.value("type", nlohmann::json()) != "array" ||
        ent.value("input", nlohmann::json()) != static_cast<int64_t>(first + i) || !e.is_constant(n.inputs[first + i]))
      return;
  }
  const Shape xs = var(n.inputs[0]).static_shape;
  const Tensor i0 = e.constant(n.inputs[first]);
  const bool mask = i0.dtype == DType::Bool;
  const int m = mask ? i0.ndim() : static_cast<int>(it->size());
  if ((mask && it->size() != 1) || m < 2 || m > xs.ndim) return;
  int64_t lead = 1;
  for (int d = 0; d < m; ++d) {
    if (xs.dims[d] < 0) return;
    lead *= xs.dims[d];
  }
  std::vector<int64_t> flat;
  if (mask) {
    for (int d = 0; d < m; ++d)
      if (i0.dim(d) != xs.dims[d]) return;
    for (int64_t f = 0; f < lead; ++f)
      if (i0.at<bool>(f)) flat.push_back(f);
  } else {
    // Vectors of one length L; 0-d entries broadcast against them.
    std::vector<Tensor> idx;
    int64_t len = -1;
    for (int d = 0; d < m; ++d) {
      idx.push_back(e.constant(n.inputs[first + d]));
      const Tensor& t = idx[d];
      if (t.ndim() > 1 || dtype_is_float(t.dtype) || t.dtype == DType::Bool) return;
      if (t.ndim() == 1) {
        if (len >= 0 && t.dim(0) != len) return;
        len = t.dim(0);
      }
    }
    if (len < 0) return;
    for (int64_t j = 0; j < len; ++j) {
      int64_t f = 0;
      for (int d = 0; d < m; ++d) {
        int64_t v = 0;
        const int64_t at = idx[d].ndim() == 0 ? 0 : j;
        dtype_dispatch(idx[d].dtype, [&](auto z) {
          using T = decltype(z);
          if constexpr (std::is_integral_v<T>) v = static_cast<int64_t>(idx[d].at<T>(at));
        });
        if (v < 0) v += xs.dims[d];
        if (v < 0 || v >= xs.dims[d]) return;
        f = f * xs.dims[d] + v;
      }
      flat.push_back(f);
    }
  }
  // A few entries (a packed triangle into a 3x3 factor) stay: the scalarize
  // pass and the adjoints take those as they are, in fewer steps.
  if (flat.size() <= 16) return;
  // x as (lead, rest...), and a new constant of the flat positions.
  Shape fs;
  fs.ndim = xs.ndim - m + 1;
  fs.dims[0] = lead;
  for (int d = m; d < xs.ndim; ++d) fs.dims[d - m + 1] = xs.dims[d];
  for (int d = 1; d < fs.ndim; ++d)
    if (fs.dims[d] < 0) return;  // the shape constant needs every dim
  auto shape_constant = [&](const Shape& s) {
    std::vector<int64_t> d(s.dims, s.dims + s.ndim);
    return e.add_constant(DType::Int64, line_of(s.ndim), Array::of<int64_t>(line_of(s.ndim), d));
  };
  const int x = n.inputs[0], o = n.outputs[0];
  const DType dt = var(o).dtype;
  const int y = inc ? n.inputs[1] : -1;
  const int pos = e.add_constant(DType::Int64, line_of(static_cast<int64_t>(flat.size())),
                                 Array::of<int64_t>(line_of(static_cast<int64_t>(flat.size())), flat));
  const int xf = e.add_op("Reshape", {x, shape_constant(fs)}, nlohmann::json{{"ndim", fs.ndim}}, dt, fs, k);
  NodeSpec& r = g.nodes[k];  // add_op may have moved it
  if (!inc) {
    r.op = "AdvancedSubtensor1";
    r.inputs = {xf, pos};
    r.attrs = nlohmann::json::object();
  } else {
    const int upd = e.add_op("AdvancedIncSubtensor1", {xf, y, pos}, *inc_attrs, dt, fs, k);
    const int sc = shape_constant(xs);
    NodeSpec& r2 = g.nodes[k];
    r2.op = "Reshape";
    r2.inputs = {upd, sc};
    r2.attrs = nlohmann::json{{"ndim", xs.ndim}};
  }
  ++rewrites;
}

void Simplifier::dimshuffle(int k, NodeSpec& n) {
  const int x = n.inputs[0], o = n.outputs[0];
  auto order = dimshuffle_order(n);
  if (!order) return;
  if (is_identity_order(*order, var(x).static_shape.ndim) && var(x).dtype == var(o).dtype) return to(k, o, x);
  const int p = e.producer(x);
  // The one element of a MakeVector, as a 0-d value: its input.
  if (p >= 0 && is_op(g.nodes[p], TensorOp::MakeVector) && g.nodes[p].inputs.size() == 1 && order->empty()) {
    const int y = e.resolve(g.nodes[p].inputs[0]);
    if (var(y).dtype == var(o).dtype && var(y).static_shape.ndim == 0) return to(k, o, y);
  }
  if (p < 0 || !is_op(g.nodes[p], TensorOp::DimShuffle) || g.nodes[p].inputs.size() != 1) return;
  auto inner = dimshuffle_order(g.nodes[p]);
  if (!inner) return;
  std::vector<int> composed;
  for (int a : *order) {
    if (a >= static_cast<int>(inner->size())) return;
    composed.push_back(a < 0 ? -1 : (*inner)[a]);
  }
  const int y = e.resolve(g.nodes[p].inputs[0]);
  if (is_identity_order(composed, var(y).static_shape.ndim) && var(y).dtype == var(o).dtype) return to(k, o, y);
  n.inputs = {y};
  n.attrs["new_order"] = order_json(composed);
  ++rewrites;
}

void Simplifier::elemwise(int k, NodeSpec& n, const std::string& s) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return;
  const int o = n.outputs[0];
  const DType dt = var(o).dtype;
  const Shape& os = var(o).static_shape;
  const std::vector<int>& in = n.inputs;
  auto float64_or_int = [&] { return dt == DType::Float64 || (!dtype_is_float(dt) && dt != DType::Bool); };

  if ((s == "Identity" || s == "Cast") && in.size() == 1 && same_type(in[0], o)) return to(k, o, in[0]);
  if (s == "Second" && in.size() == 2 && same_type(in[1], o)) return to(k, o, in[1]);
  if (s == "Neg" && in.size() == 1) {
    const int p = e.producer(in[0]);
    if (p >= 0 && elemwise_scalar_op(g.nodes[p]) == "Neg" && g.nodes[p].inputs.size() == 1) {
      const int x = e.resolve(g.nodes[p].inputs[0]);
      if (same_type(x, o) && var(in[0]).dtype == dt) return to(k, o, x);
    }
    return;
  }
  if ((s == "AND" || s == "OR") && in.size() == 2 && dt == DType::Bool) {
    // x & true, x | false -> x; x & false, x | true -> the constant (a
    // condition on data, such as data == 0, that no element meets).
    for (int i = 0; i < 2; ++i) {
      const int c = in[i], x = in[1 - i];
      if (var(c).dtype != DType::Bool) continue;
      if (constant_bool(e, c, s == "AND") && same_type(x, o)) return to(k, o, x);
      if (constant_bool(e, c, s == "OR") && same_type(c, o)) return to(k, o, c);
    }
    return;
  }
  if (s == "Switch" && in.size() == 3) {
    if (constant_bool(e, in[0], true) && same_type(in[1], o)) return to(k, o, in[1]);
    if (constant_bool(e, in[0], false) && same_type(in[2], o)) return to(k, o, in[2]);
    if (in[1] == in[2] && same_type(in[1], o)) return to(k, o, in[1]);
    return;
  }
  // Binary identities with a constant right operand that does not shape the output.
  if (in.size() == 2 && same_type(in[0], o)) {
    const int x = in[0], c = in[1];
    if (s == "TrueDiv" && dtype_is_float(dt) && constant_all(e, c, 1.0)) return to(k, o, x);
    if (s == "Sub" && constant_zero(e, c, false)) return to(k, o, x);
    if (s == "Pow" && float64_or_int() && constant_all(e, c, 1.0)) return to(k, o, x);
  }
  // Float64 only: pow's results for these exponents are exact there (docs/math.md).
  if (s == "Pow" && in.size() == 2 && dt == DType::Float64 && same_broadcast_pattern(var(in[0]).static_shape, os)) {
    if (constant_all(e, in[1], 2.0)) return set_scalar_op(n, "Sqr", {in[0]});
    if (constant_all(e, in[1], -1.0)) return set_scalar_op(n, "Reciprocal", {in[0]});
    return;
  }
  if (s == "Mul" || s == "Add") {
    // Drop neutral constants: x * 1, and x + (-0.0) (float) or x + 0 (integer).
    std::vector<int> keep;
    for (int v : in) {
      const bool neutral = s == "Mul" ? constant_all(e, v, 1.0)
                                      : (dtype_is_float(dt) ? constant_zero(e, v, true) && dtype_is_float(var(v).dtype)
                                                            : dt != DType::Bool && constant_zero(e, v, false));
      if (!neutral) keep.push_back(v);
    }
    if (keep.size() == in.size() || keep.empty()) return;
    // The operands left must still give the output's shape.
    for (int d = 0; d < os.ndim; ++d) {
      if (os.dims[d] == 1) continue;
      bool shaped = false;
      for (int v : keep) shaped = shaped || var(v).static_shape.dims[d] != 1;
      if (!shaped) return;
    }
    if (keep.size() == 1) {
      if (same_type(keep[0], o)) return to(k, o, keep[0]);
      return;
    }
    n.inputs = keep;
    ++rewrites;
  }
}

int Simplifier::run() {
  for (int k = 0; k < e.num_nodes(); ++k) {
    if (e.removed(k)) continue;
    NodeSpec& n = e.node(k);
    if (n.outputs.size() != 1 || n.inputs.empty()) continue;
    const int x = n.inputs[0], o = n.outputs[0];
    const std::optional<TensorOp> kind = find_tensor_op(n.op);
    if (!kind) continue;
    const TensorOp op = *kind;
    if (op == TensorOp::Elemwise) {
      const std::string s = elemwise_scalar_op(n);
      if (!s.empty()) elemwise(k, n, s);
    } else if (op == TensorOp::DimShuffle) {
      if (n.inputs.size() == 1) dimshuffle(k, n);
    } else if (op == TensorOp::DeepCopyOp || op == TensorOp::ViewOp || op == TensorOp::OutputGuard ||
               op == TensorOp::TensorFromScalar || op == TensorOp::ScalarFromTensor) {
      if (n.inputs.size() != 1 || var(x).dtype != var(o).dtype || var(x).static_shape.ndim != var(o).static_shape.ndim)
        continue;
      if (!output_keeps_copy(o, x)) to(k, o, x);
    } else if (op == TensorOp::All || op == TensorOp::Any) {
      // Of one bool element: that element, as a view (a 0-d one: itself).
      if (n.inputs.size() == 1 && var(x).dtype == DType::Bool && var(o).dtype == DType::Bool && one_element(var(x)) &&
          var(o).static_shape.ndim == 0) {
        if (var(x).static_shape.ndim == 0) {
          if (!output_keeps_copy(o, x)) to(k, o, x);
          continue;
        }
        n.op = tensor_op_name(TensorOp::DimShuffle);
        n.attrs = json{{"new_order", json::array()}};
        ++rewrites;
      }
    } else if (op == TensorOp::AdvancedSubtensor || op == TensorOp::AdvancedIncSubtensor) {
      advanced_to_axis0(n);
      if (!is_op(g.nodes[k], TensorOp::AdvancedSubtensor1) && !is_op(g.nodes[k], TensorOp::AdvancedIncSubtensor1))
        advanced_flatten(k);
    } else if (op == TensorOp::CheckAndRaise || op == TensorOp::Assert) {
      bool all_true = true;
      for (size_t i = 1; i < n.inputs.size(); ++i) all_true = all_true && constant_bool(e, n.inputs[i], true);
      if (all_true && var(x).dtype == var(o).dtype) to(k, o, x);
    } else if (op == TensorOp::SpecifyShape || op == TensorOp::Alloc || op == TensorOp::Reshape ||
               op == TensorOp::Subtensor) {
      const Shape &xs = var(x).static_shape, &os = var(o).static_shape;
      if (var(x).dtype != var(o).dtype) continue;
      if (op == TensorOp::SpecifyShape) {
        if (specify_shape_is_static(n, xs, os)) to(k, o, x);
      } else if (op == TensorOp::Subtensor) {
        if (xs.ndim == os.ndim && full_subtensor(n, var(x))) to(k, o, x);
      } else if (same_static_shape(xs, os)) {
        to(k, o, x);  // Alloc or Reshape to the shape x already has
      } else if (op == TensorOp::Reshape && one_element(var(x)) && one_element(var(o))) {
        n.op = tensor_op_name(TensorOp::DimShuffle);
        n.inputs = {x};
        n.attrs = json{{"new_order", order_json(std::vector<int>(os.ndim, -1))}};
        ++rewrites;
      }
    }
  }
  if (rewrites) e.commit();
  return rewrites;
}

}  // namespace

int simplify(Editor& e) { return Simplifier(e).run(); }

}  // namespace ember::passes
