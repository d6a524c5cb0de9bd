// Small static tensors become scalars: an Elemwise, Sum, Subtensor or
// IncSubtensor with literal indices, AdvancedSubtensor1 by constant indices,
// float64 CumOp, DimShuffle, Reshape, Join or MakeVector whose tensors have
// at most kMaxElems elements, all statically known, is
// rewritten into one 0-d node per element (the picks of its inputs are
// one-element Subtensors). The one-element fusion (fuse_elemwise.cpp) then
// runs the whole stretch as one fused node: the small steps of a model's
// tail (gradient pieces joined into the gradient, a parameter vector's
// prior, its sum) stop paying a step each, and the JIT compiles the stretch
// as one function.
//
// Bits: each element runs the same scalar op on the same operands, and a
// Sum's Add chain follows the summation tree of its R elements
// (engine/ops/reduce_tree.hpp: R < 8 folds left to right; else 8 lanes, the
// lanes combined pairwise, the tail folded in), a CumOp's chain NumPy's
// sequential order. Literal and constant indices are checked in range here,
// so no run-time error is lost.
//
// Only connected stretches are rewritten: a lone small node would become as
// many steps as it was (its picks, its elements, a MakeVector).
#include <algorithm>
#include <numeric>
#include <optional>

#include "engine/ops/ops_common.hpp"
#include "engine/ops/reduce_tree.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

using nlohmann::json;

constexpr int64_t kMaxElems = 16;
// Per node: elements x scalar ops. A Composite over 16 elements runs as
// vector code in a few dozen ns; as scalar code its cost grows with both.
constexpr int64_t kMaxScalarOps = 256;

bool small(const VarSpec& v) {
  const int64_t n = static_size(v.static_shape);
  return n >= 1 && n <= kMaxElems;
}

// The reduced axes of a Sum over a float64 input into float64, sorted; nullopt otherwise.
std::optional<std::vector<int>> sum_axes(const Editor& e, const NodeSpec& n) {
  if (n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
  const VarSpec& x = e.g.vars[n.inputs[0]];
  const VarSpec& y = e.g.vars[n.outputs[0]];
  if (x.dtype != DType::Float64 || y.dtype != DType::Float64) return std::nullopt;
  if (n.attrs.contains("acc_dtype") && !n.attrs["acc_dtype"].is_null() &&
      !(n.attrs["acc_dtype"].is_string() && n.attrs["acc_dtype"].get<std::string>() == "float64"))
    return std::nullopt;
  std::vector<int> axes;
  const int nd = x.static_shape.ndim;
  if (!n.attrs.contains("axis") || n.attrs["axis"].is_null()) {
    axes.resize(nd);
    std::iota(axes.begin(), axes.end(), 0);
  } else {
    if (!n.attrs["axis"].is_array()) return std::nullopt;
    for (const json& a : n.attrs["axis"]) {
      if (!a.is_number_integer()) return std::nullopt;
      int d = a.get<int>();
      if (nd == 0 && (d == 0 || d == -1) && n.attrs["axis"].size() == 1) continue;  // a 0-d input's axis 0 reduces nothing
      if (d < 0) d += nd;
      if (d < 0 || d >= nd) return std::nullopt;
      axes.push_back(d);
    }
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  }
  Shape kept;
  for (int d = 0; d < nd; ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) kept.dims[kept.ndim++] = x.static_shape.dims[d];
  if (!same_static_shape(y.static_shape, kept)) return std::nullopt;
  return axes;
}

enum class Kind { None, Scalar, Elemwise, Sum, Subtensor, IncSubtensor, Take, Cum, DimShuffle, Reshape, Join, MakeVector };

class Scalarizer {
 public:
  explicit Scalarizer(Editor& e) : e_(e), g_(e.g) {}

  int run() {
    const int n = e_.num_nodes();
    kind_.assign(n, Kind::None);
    for (int k = 0; k < n; ++k)
      if (!e_.removed(k)) kind_[k] = classify(k);
    const Users users = e_.users();
    const std::vector<char> keep = connected_stretches(users);
    elems_.assign(g_.vars.size(), {});
    std::vector<int> done;
    for (int k = 0; k < n; ++k) {
      if (!keep[k]) continue;
      rewrite(k);
      done.push_back(k);
    }
    if (done.empty()) return 0;
    // Values read by nodes left as they are, or graph outputs: assembled.
    std::vector<char> rewritten(n, 0);
    for (int k : done) rewritten[k] = 1;
    for (int k : done)
      for (int v : std::vector<int>(e_.node(k).outputs)) {
        bool external = e_.is_graph_output(v);
        for (int u : users.of(v)) external = external || !rewritten[u];
        if (external) e_.replace(v, assemble(v, k));
      }
    for (int k : done) e_.remove(k);
    e_.commit();
    return static_cast<int>(done.size());
  }

 private:
  Editor& e_;
  Graph& g_;
  std::vector<Kind> kind_;
  std::vector<std::vector<int>> elems_;  // var -> its elements (0-d vars), C order

  const VarSpec& var(int v) const { return g_.vars[v]; }
  bool all_small(const std::vector<int>& vs) const {
    for (int v : vs)
      if (!small(var(v))) return false;
    return true;
  }

  Kind classify(int k) {
    const NodeSpec& n = e_.node(k);
    const auto op = find_tensor_op(n.op);
    if (!op || n.outputs.empty() || !all_small(n.outputs) || !all_small(n.inputs)) return Kind::None;
    switch (*op) {
      case TensorOp::Elemwise: {
        if (!n.attrs.contains("scalar_op") || !n.attrs["scalar_op"].is_object()) return Kind::None;
        const json& so = n.attrs["scalar_op"];
        if (!so.contains("op") || !so["op"].is_string()) return Kind::None;
        const std::string name = so["op"].get<std::string>();
        if (name == "ScalarLoop") return Kind::None;
        const Shape& s = var(n.outputs[0]).static_shape;
        const int64_t size = static_size(s);
        if (size == 1) return Kind::Scalar;  // already one element: fused as it is
        int64_t ops = 1;
        if (name == "Composite") {
          if (!so.contains("nodes") || !so["nodes"].is_array()) return Kind::None;
          ops = static_cast<int64_t>(so["nodes"].size());
        }
        if (size * ops > kMaxScalarOps) return Kind::None;
        for (int v : n.outputs)
          if (!same_static_shape(var(v).static_shape, s)) return Kind::None;
        for (int v : n.inputs) {
          const Shape& is = var(v).static_shape;
          if (is.ndim != s.ndim) return Kind::None;
          for (int d = 0; d < s.ndim; ++d)
            if (is.dims[d] != 1 && is.dims[d] != s.dims[d]) return Kind::None;
        }
        return Kind::Elemwise;
      }
      case TensorOp::Sum: return sum_axes(e_, n) ? Kind::Sum : Kind::None;
      case TensorOp::Subtensor: {
        Shape out;
        if (n.inputs.size() != 1 || n.outputs.size() != 1 || !n.attrs.contains("idx_list")) return Kind::None;
        if (!literal_selection(n.attrs["idx_list"], var(n.inputs[0]).static_shape, out)) return Kind::None;
        return same_static_shape(var(n.outputs[0]).static_shape, out) &&
                       var(n.inputs[0]).dtype == var(n.outputs[0]).dtype
                   ? Kind::Subtensor
                   : Kind::None;
      }
      case TensorOp::IncSubtensor: {
        Shape out;
        if (n.inputs.size() != 2 || n.outputs.size() != 1 || !n.attrs.contains("idx_list")) return Kind::None;
        const VarSpec &x = var(n.inputs[0]), &y = var(n.inputs[1]);
        if (x.dtype != y.dtype || x.dtype != var(n.outputs[0]).dtype) return Kind::None;
        if (!same_static_shape(var(n.outputs[0]).static_shape, x.static_shape)) return Kind::None;
        if (!literal_selection(n.attrs["idx_list"], x.static_shape, out) || y.static_shape.ndim > out.ndim)
          return Kind::None;
        const int off = out.ndim - y.static_shape.ndim;
        for (int d = 0; d < y.static_shape.ndim; ++d)
          if (y.static_shape.dims[d] != 1 && y.static_shape.dims[d] != out.dims[off + d]) return Kind::None;
        const json& set = n.attrs.value("set_instead_of_inc", json(false));
        return set.is_boolean() ? Kind::IncSubtensor : Kind::None;
      }
      case TensorOp::AdvancedSubtensor1: return take_rows(n) ? Kind::Take : Kind::None;
      case TensorOp::CumOp: return cum_axis(n) ? Kind::Cum : Kind::None;
      case TensorOp::DimShuffle: {
        if (n.inputs.size() != 1 || n.outputs.size() != 1) return Kind::None;
        const auto order = dimshuffle_order(n);
        const Shape &is = var(n.inputs[0]).static_shape, &os = var(n.outputs[0]).static_shape;
        if (!order || static_cast<int>(order->size()) != os.ndim || var(n.inputs[0]).dtype != var(n.outputs[0]).dtype)
          return Kind::None;
        std::vector<char> used(is.ndim, 0);
        for (int j = 0; j < os.ndim; ++j) {
          const int d = (*order)[j];
          if (d < 0 ? os.dims[j] != 1 : (d >= is.ndim || used[d] || os.dims[j] != is.dims[d])) return Kind::None;
          if (d >= 0) used[d] = 1;
        }
        for (int d = 0; d < is.ndim; ++d)
          if (!used[d] && is.dims[d] != 1) return Kind::None;
        return Kind::DimShuffle;
      }
      case TensorOp::Reshape: {
        if (n.inputs.size() != 2 || n.outputs.size() != 1 || !e_.is_constant(n.inputs[1]) ||
            var(n.inputs[0]).dtype != var(n.outputs[0]).dtype ||
            static_size(var(n.inputs[0]).static_shape) != static_size(var(n.outputs[0]).static_shape))
          return Kind::None;
        // The constant shape must be the declared one (a -1 is inferred from the size).
        const Tensor sh = e_.constant(n.inputs[1]);
        const Shape& os = var(n.outputs[0]).static_shape;
        if (!is_int_dtype(sh.dtype) || sh.shape.ndim != 1 || sh.shape.dims[0] != os.ndim) return Kind::None;
        int inferred = 0;
        for (int d = 0; d < os.ndim; ++d) {
          const int64_t v = dtype_dispatch(sh.dtype, [&](auto t) { return int64_t(sh.at<decltype(t)>(d)); });
          if (v != os.dims[d] && v != -1) return Kind::None;
          inferred += v == -1;
        }
        if (inferred > 1) return Kind::None;  // the node's own load error stays
        return Kind::Reshape;
      }
      case TensorOp::Join: {
        if (n.outputs.size() != 1 || n.inputs.empty() || !n.attrs.contains("axis") ||
            !n.attrs["axis"].is_number_integer())
          return Kind::None;
        const Shape& os = var(n.outputs[0]).static_shape;
        int axis = n.attrs["axis"].get<int>();
        if (axis < 0) axis += os.ndim;
        if (axis < 0 || axis >= os.ndim) return Kind::None;
        int64_t along = 0;
        for (int v : n.inputs) {
          const Shape& is = var(v).static_shape;
          if (is.ndim != os.ndim || var(v).dtype != var(n.outputs[0]).dtype) return Kind::None;
          for (int d = 0; d < os.ndim; ++d)
            if (d != axis && is.dims[d] != os.dims[d]) return Kind::None;
          along += is.dims[axis];
        }
        return along == os.dims[axis] ? Kind::Join : Kind::None;
      }
      case TensorOp::MakeVector: {
        if (n.outputs.size() != 1 || n.inputs.empty() ||
            !same_static_shape(var(n.outputs[0]).static_shape, line_of(static_cast<int64_t>(n.inputs.size()))))
          return Kind::None;
        for (int v : n.inputs)
          if (var(v).static_shape.ndim != 0 || var(v).dtype != var(n.outputs[0]).dtype) return Kind::None;
        return Kind::MakeVector;
      }
      default: return Kind::None;
    }
  }

  // AdvancedSubtensor1 by a constant index vector, every index in range:
  // the rows of x it takes, normalized.
  std::optional<std::vector<int64_t>> take_rows(const NodeSpec& n) const {
    if (n.inputs.size() != 2 || n.outputs.size() != 1 || !e_.is_constant(n.inputs[1])) return std::nullopt;
    const VarSpec &x = var(n.inputs[0]), &y = var(n.outputs[0]);
    const Tensor idx = e_.constant(n.inputs[1]);
    if (x.dtype != y.dtype || x.static_shape.ndim < 1 || !is_int_dtype(idx.dtype) || idx.shape.ndim != 1)
      return std::nullopt;
    Shape want = x.static_shape;
    want.dims[0] = idx.shape.dims[0];
    if (!same_static_shape(y.static_shape, want)) return std::nullopt;
    std::vector<int64_t> rows;
    for (int64_t j = 0; j < idx.shape.dims[0]; ++j) {
      const int64_t i = dtype_dispatch(idx.dtype, [&](auto t) { return int64_t(idx.at<decltype(t)>(j)); });
      const int64_t r = normalize_index(i, x.static_shape.dims[0]);
      if (r < 0) return std::nullopt;  // the node's own IndexError stays
      rows.push_back(r);
    }
    return rows;
  }

  // A float64 CumOp's axis (-1: over the flattened input), when it is one.
  std::optional<int> cum_axis(const NodeSpec& n) const {
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
    const VarSpec &x = var(n.inputs[0]), &y = var(n.outputs[0]);
    if (x.dtype != DType::Float64 || y.dtype != DType::Float64) return std::nullopt;
    const json mode = n.attrs.is_object() ? n.attrs.value("mode", json("add")) : json();
    if (mode != "add" && mode != "mul") return std::nullopt;
    if (!n.attrs.contains("axis") || n.attrs["axis"].is_null()) {
      if (y.static_shape.ndim != 1 || y.static_shape.dims[0] != static_size(x.static_shape)) return std::nullopt;
      return -1;
    }
    if (!n.attrs["axis"].is_number_integer()) return std::nullopt;
    int axis = n.attrs["axis"].get<int>();
    if (axis < 0) axis += x.static_shape.ndim;
    if (axis < 0 || axis >= x.static_shape.ndim || !same_static_shape(y.static_shape, x.static_shape))
      return std::nullopt;
    return axis;
  }

  // The candidates in stretches worth rewriting: connected through values,
  // of two nodes or more, computing something (an Elemwise or a Sum). A 0-d
  // Elemwise counts unless a tensor the stretch rewrites, of several
  // elements and not a vector, is read by a node outside it or is a graph
  // output: a MakeVector assembling a vector (or one element) from the
  // elements becomes part of the one-element step, a Reshape after it would
  // be a step of its own. The rewritten elements then join that step (an
  // IncSubtensor of a gradient read back by literal Subtensors).
  std::vector<char> connected_stretches(const Users& users) {
    const int n = static_cast<int>(kind_.size());
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (int k = 0; k < n; ++k) {
      if (kind_[k] == Kind::None) continue;
      for (int v : e_.node(k).inputs)
        if (const int p = e_.producer(v); p >= 0 && kind_[p] != Kind::None) parent[find(p)] = find(k);
    }
    std::vector<int> size(n, 0), rewrites(n, 0);
    std::vector<char> computes(n, 0), scalar(n, 0), read_outside(n, 0);
    for (int k = 0; k < n; ++k) {
      if (kind_[k] == Kind::None) continue;
      const int r = find(k);
      ++size[r];
      rewrites[r] += kind_[k] != Kind::Scalar;
      computes[r] |= kind_[k] == Kind::Elemwise || kind_[k] == Kind::Sum;
      scalar[r] |= kind_[k] == Kind::Scalar;
      if (kind_[k] == Kind::Scalar) continue;
      for (int v : e_.node(k).outputs) {
        if (static_size(var(v).static_shape) <= 1 || var(v).static_shape.ndim == 1) continue;
        bool outside = e_.is_graph_output(v);
        for (int u : users.of(v)) outside = outside || kind_[u] == Kind::None;
        read_outside[r] |= outside;
      }
    }
    std::vector<char> keep(n, 0);
    for (int k = 0; k < n; ++k) {
      if (kind_[k] == Kind::None || kind_[k] == Kind::Scalar) continue;
      const int r = find(k);
      keep[k] = size[r] >= 2 && rewrites[r] >= 1 && (computes[r] || (scalar[r] && !read_outside[r]));
    }
    return keep;
  }

  // v's elements: made by a rewritten node, v itself (0-d), or picks.
  const std::vector<int>& elems(int v, int at) {
    std::vector<int>& el = elems_[v];
    if (!el.empty()) return el;
    const VarSpec vs = var(v);  // a copy: add_op grows the variables
    if (vs.static_shape.ndim == 0) {
      el = {v};
      return el;
    }
    const int64_t n = static_size(vs.static_shape);
    std::vector<int64_t> c(kMaxRank);
    for (int64_t f = 0; f < n; ++f) {
      unflat_index(vs.static_shape, f, c.data());
      json idx = json::array();
      for (int d = 0; d < vs.static_shape.ndim; ++d) idx.push_back(json{{"type", "index"}, {"value", c[d]}});
      el.push_back(e_.add_op("Subtensor", {v}, json{{"idx_list", idx}}, vs.dtype, Shape{}, at));
    }
    return el;
  }

  int scalar_op(const char* op, std::vector<int> in, DType dt, int at) {
    return e_.add_op("Elemwise", std::move(in), json{{"scalar_op", json{{"op", op}}}}, dt, Shape{}, at);
  }

  // The Sum of `x` (R >= 1 element vars, C order) by the summation tree.
  int tree_sum(const std::vector<int>& x, int at) {
    const DType f = DType::Float64;
    auto add = [&](int a, int b) { return scalar_op("Add", {a, b}, f, at); };
    const int64_t r = static_cast<int64_t>(x.size());
    static_assert(kMaxElems <= reduce::kLeaf, "one leaf");
    if (r < reduce::kLanes) {
      int acc = x[0];
      for (int64_t i = 1; i < r; ++i) acc = add(acc, x[i]);
      return acc;
    }
    const int64_t end = r - r % reduce::kLanes;
    int lane[reduce::kLanes];
    for (int k = 0; k < reduce::kLanes; ++k) lane[k] = x[k];
    for (int64_t i = reduce::kLanes; i < end; i += reduce::kLanes)
      for (int k = 0; k < reduce::kLanes; ++k) lane[k] = add(lane[k], x[i + k]);
    int acc = add(add(add(lane[0], lane[1]), add(lane[2], lane[3])), add(add(lane[4], lane[5]), add(lane[6], lane[7])));
    for (int64_t i = end; i < r; ++i) acc = add(acc, x[i]);
    return acc;
  }

  void rewrite(int k) {
    const NodeSpec n = e_.node(k);
    const Shape os = var(n.outputs[0]).static_shape;
    const int64_t size = static_size(os);
    std::vector<int64_t> oc(kMaxRank), ic(kMaxRank);
    switch (kind_[k]) {
      case Kind::Elemwise: {
        std::vector<std::vector<int>> outs(n.outputs.size());
        for (int64_t f = 0; f < size; ++f) {
          unflat_index(os, f, oc.data());
          std::vector<int> in;
          for (int v : n.inputs) {
            const Shape is = var(v).static_shape;
            for (int d = 0; d < is.ndim; ++d) ic[d] = is.dims[d] == 1 ? 0 : oc[d];
            in.push_back(elems(v, k)[flat_index(is, ic.data())]);
          }
          NodeSpec m;
          m.op = n.op;
          m.attrs = n.attrs;
          m.inputs = std::move(in);
          for (size_t j = 0; j < n.outputs.size(); ++j) {
            m.outputs.push_back(e_.add_var(var(n.outputs[j]).dtype, Shape{}));
            outs[j].push_back(m.outputs.back());
          }
          e_.add_node(std::move(m), k);
        }
        for (size_t j = 0; j < n.outputs.size(); ++j) elems_[n.outputs[j]] = std::move(outs[j]);
        return;
      }
      case Kind::Sum: {
        const std::vector<int> axes = *sum_axes(e_, n);
        const Shape xs = var(n.inputs[0]).static_shape;
        const std::vector<int> xe = elems(n.inputs[0], k);
        std::vector<int> out;
        // Per output element, its reduced elements in the C order of the reduced axes.
        std::vector<std::vector<int>> parts(static_cast<size_t>(size));
        for (int64_t f = 0; f < static_cast<int64_t>(xe.size()); ++f) {
          unflat_index(xs, f, ic.data());
          int64_t o = 0;
          for (int d = 0; d < xs.ndim; ++d)
            if (!std::binary_search(axes.begin(), axes.end(), d)) o = o * xs.dims[d] + ic[d];
          parts[o].push_back(xe[f]);
        }
        for (const auto& p : parts)
          out.push_back(p.empty() ? e_.scalar_constant(DType::Float64, 0.0, 0) : tree_sum(p, k));
        elems_[n.outputs[0]] = std::move(out);
        return;
      }
      case Kind::Subtensor: {
        Shape out;
        const auto sel = *literal_selection(n.attrs["idx_list"], var(n.inputs[0]).static_shape, out);
        const std::vector<int> xe = elems(n.inputs[0], k);
        std::vector<int> r;
        for (int64_t i : sel) r.push_back(xe[i]);
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      case Kind::IncSubtensor: {
        Shape sub;
        const auto sel = *literal_selection(n.attrs["idx_list"], var(n.inputs[0]).static_shape, sub);
        std::vector<int> r = elems(n.inputs[0], k);
        const std::vector<int> ye = elems(n.inputs[1], k);
        const Shape ys = var(n.inputs[1]).static_shape;
        const int off = sub.ndim - ys.ndim;
        const bool set = n.attrs.value("set_instead_of_inc", json(false)).get<bool>();
        for (size_t i = 0; i < sel.size(); ++i) {
          unflat_index(sub, static_cast<int64_t>(i), oc.data());
          for (int d = 0; d < ys.ndim; ++d) ic[d] = ys.dims[d] == 1 ? 0 : oc[off + d];
          const int y = ye[flat_index(ys, ic.data())];
          r[sel[i]] = set ? y : scalar_op("Add", {r[sel[i]], y}, var(n.outputs[0]).dtype, k);
        }
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      case Kind::Take: {
        const std::vector<int64_t> rows = *take_rows(n);
        const std::vector<int> xe = elems(n.inputs[0], k);
        const int64_t inner = static_cast<int64_t>(xe.size()) / var(n.inputs[0]).static_shape.dims[0];
        std::vector<int> r;
        for (int64_t row : rows)
          for (int64_t q = 0; q < inner; ++q) r.push_back(xe[row * inner + q]);
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      case Kind::Cum: {
        // NumPy's order: y[i] = y[i-1] op x[i] along the axis (ops_cumop.cpp).
        const int axis = *cum_axis(n);
        const char* op = n.attrs.value("mode", json("add")) == "mul" ? "Mul" : "Add";
        const Shape xs = var(n.inputs[0]).static_shape;
        std::vector<int> r = elems(n.inputs[0], k);
        int64_t len = static_cast<int64_t>(r.size()), inner = 1;
        if (axis >= 0) {
          len = xs.dims[axis];
          for (int d = axis + 1; d < xs.ndim; ++d) inner *= xs.dims[d];
        }
        for (int64_t f = 0; f < static_cast<int64_t>(r.size()); ++f)
          if ((f / inner) % len != 0) r[f] = scalar_op(op, {r[f - inner], r[f]}, DType::Float64, k);
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      case Kind::DimShuffle: {
        const std::vector<int> order = *dimshuffle_order(n);
        const Shape is = var(n.inputs[0]).static_shape;
        const std::vector<int> xe = elems(n.inputs[0], k);
        std::vector<int> r;
        for (int64_t f = 0; f < size; ++f) {
          unflat_index(os, f, oc.data());
          std::fill(ic.begin(), ic.end(), 0);
          for (int j = 0; j < os.ndim; ++j)
            if (order[j] >= 0) ic[order[j]] = oc[j];
          r.push_back(xe[flat_index(is, ic.data())]);
        }
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      case Kind::Reshape: elems_[n.outputs[0]] = elems(n.inputs[0], k); return;
      case Kind::Join: {
        int axis = n.attrs["axis"].get<int>();
        if (axis < 0) axis += os.ndim;
        std::vector<int> r(static_cast<size_t>(size));
        int64_t base = 0;
        for (int v : n.inputs) {
          const Shape is = var(v).static_shape;
          const std::vector<int> xe = elems(v, k);
          for (int64_t f = 0; f < static_cast<int64_t>(xe.size()); ++f) {
            unflat_index(is, f, ic.data());
            ic[axis] += base;
            r[flat_index(os, ic.data())] = xe[f];
          }
          base += is.dims[axis];
        }
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      case Kind::MakeVector: {
        std::vector<int> r;
        for (int v : n.inputs) r.push_back(elems(v, k)[0]);  // v may be a rewritten node's
        elems_[n.outputs[0]] = std::move(r);
        return;
      }
      default: return;
    }
  }

  // A tensor holding v's elements, for readers left as they are: the
  // element itself (0-d) or given v's dims of 1, a MakeVector ((n,)), or a
  // MakeVector reshaped. The one-element fusion takes the first three in.
  int assemble(int v, int at) {
    const VarSpec vs = var(v);
    const std::vector<int> el = elems_[v];
    if (vs.static_shape.ndim == 0) return el[0];
    if (el.size() == 1)
      return e_.add_op("DimShuffle", {el[0]}, json{{"new_order", json::array_t(vs.static_shape.ndim, "x")}}, vs.dtype,
                      vs.static_shape, at);
    const Shape line = line_of(static_cast<int64_t>(el.size()));
    const int mv = e_.add_op("MakeVector", el, json::object(), vs.dtype, line, at);
    if (vs.static_shape.ndim == 1) return mv;
    Array shape = Array::empty(DType::Int64, line_of(vs.static_shape.ndim));
    for (int d = 0; d < vs.static_shape.ndim; ++d) static_cast<int64_t*>(shape.t.data)[d] = vs.static_shape.dims[d];
    const int sv = e_.add_constant(DType::Int64, shape.t.shape, shape);
    return e_.add_op("Reshape", {mv, sv}, json{{"ndim", vs.static_shape.ndim}}, vs.dtype, vs.static_shape, at);
  }
};

}  // namespace

int scalarize(Editor& e) { return Scalarizer(e).run(); }

}  // namespace ember::passes
