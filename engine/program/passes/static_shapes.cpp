// Static shapes the graph leaves unknown but its inputs' static shapes fix:
// a Join of pieces of known length (PyTensor gives ZeroSumNormal's joined
// vector an unknown length), literal slices of a known vector (x[:-1]), the
// Elemwise, increments and splits downstream of them. A refined dim is a
// fact of the graph, not a rewrite: the node computes the same shape at run
// time from inputs of those shapes, and
// PyTensor's broadcasting rule (only dims of static length 1 broadcast)
// makes an Elemwise's dim that of any input whose length is known and not 1.
// Fold then evaluates what read only these shapes (Shape, its casts and
// products, the index arithmetic of a split), and later passes see known
// shapes. Graph outputs keep their declared static shapes.
#include "engine/ops/ops_common.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

class Refiner {
 public:
  explicit Refiner(Editor& e) : e_(e), g_(e.g) {}

  int run() {
    for (int k = 0; k < e_.num_nodes(); ++k) {
      if (e_.removed(k)) continue;
      const NodeSpec& n = e_.node(k);
      const auto op = find_tensor_op(n.op);
      if (!op || n.outputs.empty() || !unknown_output(n)) continue;
      switch (*op) {
        case TensorOp::Elemwise: elemwise(n); break;
        case TensorOp::Join: join(n); break;
        case TensorOp::Split: split(n); break;
        case TensorOp::IncSubtensor:
        case TensorOp::AdvancedIncSubtensor:
        case TensorOp::AdvancedIncSubtensor1:
          if (n.outputs.size() == 1) like(n.outputs[0], shape(n.inputs[0]));
          break;
        case TensorOp::DimShuffle: dimshuffle(n); break;
        case TensorOp::Subtensor: subtensor(n); break;
        default: break;
      }
    }
    return refined_;
  }

 private:
  Editor& e_;
  Graph& g_;
  int refined_ = 0;

  const Shape& shape(int v) const { return g_.vars[v].static_shape; }

  bool unknown_output(const NodeSpec& n) const {
    for (int v : n.outputs)
      for (int d = 0; d < shape(v).ndim; ++d)
        if (shape(v).dims[d] < 0) return true;
    return false;
  }

  // Dim d of v becomes `len` (>= 0) if it is unknown; a known dim is left.
  void set(int v, int d, int64_t len) {
    if (len < 0 || e_.is_graph_output(v)) return;
    Shape& s = g_.vars[v].static_shape;
    if (d >= s.ndim || s.dims[d] >= 0) return;
    s.dims[d] = len;
    ++refined_;
  }
  void like(int v, const Shape& s) {
    if (shape(v).ndim != s.ndim) return;
    for (int d = 0; d < s.ndim; ++d) set(v, d, s.dims[d]);
  }

  void elemwise(const NodeSpec& n) {
    const int nd = shape(n.outputs[0]).ndim;
    for (int v : n.inputs)
      if (shape(v).ndim != nd) return;
    for (int d = 0; d < nd; ++d) {
      int64_t len = 1;  // every input's length known and 1: 1
      for (int v : n.inputs) {
        const int64_t s = shape(v).dims[d];
        if (s < 0 && len == 1) len = -1;
        if (s >= 0 && s != 1) {
          len = s;
          break;
        }
      }
      for (int o : n.outputs) set(o, d, len);
    }
  }

  // The node's axis from its attribute, or its constant first input (then
  // the tensors start at `first`); nullopt if neither.
  std::optional<int> axis(const NodeSpec& n, int nd, int& first) const {
    int64_t a;
    first = 0;
    if (n.attrs.contains("axis")) {
      if (!n.attrs["axis"].is_number_integer()) return std::nullopt;
      a = n.attrs["axis"].get<int64_t>();
    } else {
      if (n.inputs.empty() || !e_.is_constant(n.inputs[0])) return std::nullopt;
      const Tensor t = e_.constant(n.inputs[0]);
      if (t.size() != 1 || !is_int_dtype(t.dtype)) return std::nullopt;
      a = scalar_int(t);
      first = 1;
    }
    if (a < 0) a += nd;
    if (a < 0 || a >= nd) return std::nullopt;
    return static_cast<int>(a);
  }

  void join(const NodeSpec& n) {
    if (n.outputs.size() != 1) return;
    const int o = n.outputs[0], nd = shape(o).ndim;
    int first;
    const auto ax = axis(n, nd, first);
    if (!ax || first >= static_cast<int>(n.inputs.size())) return;
    int64_t total = 0;
    for (size_t i = first; i < n.inputs.size(); ++i) {
      const Shape& s = shape(n.inputs[i]);
      if (s.ndim != nd) return;
      total = total >= 0 && s.dims[*ax] >= 0 ? total + s.dims[*ax] : -1;
      for (int d = 0; d < nd; ++d)
        if (d != *ax) set(o, d, s.dims[d]);
    }
    set(o, *ax, total);
  }

  // Split by constant lengths (its axis an attribute): output i is
  // splits[i] long on the axis.
  void split(const NodeSpec& n) {
    if (n.inputs.size() != 2 || !n.attrs.contains("axis") || !e_.is_constant(n.inputs[1])) return;
    const int nd = shape(n.inputs[0]).ndim;
    int first;
    const auto ax = axis(n, nd, first);
    const Tensor t = e_.constant(n.inputs[1]);
    if (!ax || t.dtype != DType::Int64 || t.size() != static_cast<int64_t>(n.outputs.size())) return;
    const int64_t* len = t.ptr<const int64_t>();
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const int o = n.outputs[i];
      if (shape(o).ndim != nd) continue;
      for (int d = 0; d < nd; ++d) set(o, d, d == *ax ? len[i] : shape(n.inputs[0]).dims[d]);
    }
  }

  void dimshuffle(const NodeSpec& n) {
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return;
    const auto order = dimshuffle_order(n);
    const int o = n.outputs[0];
    if (!order || static_cast<int>(order->size()) != shape(o).ndim) return;
    for (int j = 0; j < shape(o).ndim; ++j) set(o, j, (*order)[j] < 0 ? 1 : dim_of(n.inputs[0], (*order)[j]));
  }
  int64_t dim_of(int v, int d) const { return d < shape(v).ndim ? shape(v).dims[d] : -1; }

  // Basic indexing by literals of an input of known dims: a slice's length
  // (x[:-1] of a known vector, which PyTensor leaves unknown), the axes
  // past the index list as the input's. An index out of range is left to
  // the loader's error: nothing is refined.
  void subtensor(const NodeSpec& n) {
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return;
    auto it = n.attrs.find("idx_list");
    if (it == n.attrs.end()) return;
    if (const auto out = literal_index_shape(*it, shape(n.inputs[0]))) like(n.outputs[0], *out);
  }
};

}  // namespace

int refine_static_shapes(Editor& e) { return Refiner(e).run(); }

}  // namespace ember::passes
