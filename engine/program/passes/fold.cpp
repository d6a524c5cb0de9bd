// Constant folding: a node whose inputs are all constants and whose outputs
// are small is run once at load by its own kernel, on the interpreter, and
// its outputs become constants: the bits a call would compute (every tier
// gives the same bits). An input only the shape of which matters (of Shape,
// Shape_i, and the first of an Elemwise Second: a fill) needs only a fully
// known static shape: the gradient's fills of ones fold this way.
// A node whose kernel rejects it (load or run-time error) is left for the
// loader and the call to report.
#include <cstring>
#include <memory>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/scalar_loop_kernel.hpp"
#include "engine/ops/workspace.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"
#include "interp/vm.hpp"

namespace ember::passes {

namespace {

// Outputs above this many elements stay computed (no large constants are
// made at load).
constexpr int64_t kMaxFoldElements = 1 << 14;

// Whether the node reads only the shape of input i.
bool shape_only(const NodeSpec& n, size_t i) {
  if (is_op(n, TensorOp::Shape) || is_op(n, TensorOp::Shape_i)) return i == 0;
  return i == 0 && n.inputs.size() == 2 && elemwise_scalar_op(n) == "Second";
}

bool fully_known(const Shape& s) {
  for (int d = 0; d < s.ndim; ++d)
    if (s.dims[d] < 0) return false;
  return true;
}

// The node's kernel. Elemwise kernels are built here without joining the
// tier manager (which in eager mode would compile them).
std::unique_ptr<OpKernel> make_kernel(NodeContext& ctx) {
  const NodeSpec& n = ctx.spec();
  if (ctx.op() == TensorOp::Elemwise && n.attrs.contains("scalar_op") && n.attrs["scalar_op"].is_object() &&
      n.attrs["scalar_op"].value("op", nlohmann::json()) != "ScalarLoop") {
    if (ctx.num_outputs() < 1 || ctx.num_inputs() < 1) return nullptr;
    const int nd = ctx.out(0).static_shape.ndim;
    std::vector<DType> ins, outs;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (ctx.in(i).static_shape.ndim != nd) return nullptr;
      ins.push_back(ctx.in(i).dtype);
    }
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      if (ctx.out(o).static_shape.ndim != nd) return nullptr;
      outs.push_back(ctx.out(o).dtype);
    }
    check_static_broadcast(ctx, nd);
    interp::Composite c = read_composite(ctx, ctx.attr("scalar_op"), ins, outs);
    auto vm = interp::Interpreted::compile(c);
    return std::make_unique<ElemwiseKernel>(std::move(c), std::move(vm), nd, ctx.options().parallel_threshold);
  }
  // A ScalarLoop's, likewise unattached.
  if (ctx.op() == TensorOp::Elemwise && n.attrs.contains("scalar_op") && n.attrs["scalar_op"].is_object())
    return make_scalar_loop(ctx);
  // A host callback runs at call time only: it may not be registered at load.
  if (ctx.op() == TensorOp::PythonCallback) return nullptr;
  return op_factory(ctx.op())(ctx);
}

bool small_enough(const VarSpec& v) {
  int64_t n = 1;
  for (int d = 0; d < v.static_shape.ndim; ++d) {
    if (v.static_shape.dims[d] < 0) return true;  // checked on the value
    n *= v.static_shape.dims[d];
    if (n > kMaxFoldElements) return false;
  }
  return true;
}

}  // namespace

int fold_constants(Editor& e, const Options& o) {
  Graph& g = e.g;
  int folded = 0;
  for (int k = 0; k < e.num_nodes(); ++k) {
    if (e.removed(k)) continue;
    const NodeSpec& n = e.node(k);
    if (n.outputs.empty()) continue;
    bool ok = true;
    std::vector<char> dummy(n.inputs.size(), 0);  // input known by its static shape only
    for (size_t i = 0; i < n.inputs.size() && ok; ++i) {
      const int v = n.inputs[i];
      if (e.is_constant(v)) continue;
      dummy[i] = shape_only(n, i) && fully_known(g.vars[v].static_shape) &&
                 g.vars[v].static_shape.size() <= kMaxFoldElements;
      ok = dummy[i];
    }
    for (int v : n.outputs) ok = ok && small_enough(g.vars[v]);
    if (!ok) continue;

    std::vector<Array> values;
    try {
      const std::optional<TensorOp> op = find_tensor_op(n.op);
      if (!op) continue;
      NodeContext ctx(g, k, *op, o);
      std::unique_ptr<OpKernel> kernel = make_kernel(ctx);
      if (!kernel) continue;
      const int nin = static_cast<int>(n.inputs.size()), nout = static_cast<int>(n.outputs.size());
      Workspace ws;
      ws.source = &g.source;
      ws.values.resize(nin + nout);
      ws.slots.resize(nout);
      Step st;
      st.node = k;
      st.kernel = kernel.get();
      st.op = *op;
      st.name = n.op;
      std::vector<Array> zeros;
      for (int i = 0; i < nin; ++i) {
        st.in.push_back(i);
        const int v = n.inputs[i];
        if (dummy[i]) {
          zeros.push_back(Array::empty(g.vars[v].dtype, g.vars[v].static_shape));
          std::memset(zeros.back().t.data, 0, static_cast<size_t>(zeros.back().size()) * dtype_size(g.vars[v].dtype));
          ws.values[i] = zeros.back().t;
        } else {
          ws.values[i] = e.constant(v);
        }
      }
      for (int j = 0; j < nout; ++j) {
        st.out.push_back(nin + j);
        st.out_slot.push_back(j);
        st.out_dtype.push_back(g.vars[n.outputs[j]].dtype);
      }
      Frame f(ws, st);
      kernel->run(f);
      for (int j = 0; j < nout; ++j) {
        const Tensor& t = ws.values[nin + j];
        const VarSpec& v = g.vars[n.outputs[j]];
        bool fits = t.dtype == v.dtype && t.ndim() == v.static_shape.ndim && t.size() <= kMaxFoldElements;
        for (int d = 0; fits && d < t.ndim(); ++d)
          fits = v.static_shape.dims[d] < 0 || v.static_shape.dims[d] == t.dim(d);
        if (!fits) break;
        values.push_back(Array::copy_of(t));
      }
    } catch (const LoadError&) {
      continue;
    } catch (const CallError&) {
      continue;
    } catch (const nlohmann::json::exception&) {
      continue;
    }
    if (values.size() != n.outputs.size()) continue;
    for (size_t j = 0; j < values.size(); ++j) e.make_constant(n.outputs[j], values[j]);
    e.remove(k);
    ++folded;
  }
  if (folded) e.commit();
  return folded;
}

}  // namespace ember::passes
