// Constant folding: a node whose inputs are all constants (or a Shape /
// Shape_i of a fully known static shape) and whose outputs are small is run
// once at load by its own kernel, on the interpreter, and its outputs become
// constants: the bits a call would compute (every tier gives the same bits).
// A node whose kernel rejects it (load or run-time error) is left for the
// loader and the call to report.
#include <memory>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/workspace.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"
#include "interp/vm.hpp"

namespace ember::passes {

namespace {

// Outputs above this many elements stay computed (no large constants are
// made at load).
constexpr int64_t kMaxFoldElements = 1 << 14;

bool shape_op(const std::string& op) { return op == "Shape" || op == "Shape_i"; }

// The node's kernel. Elemwise kernels are built here without joining the
// tier manager (which in eager mode would compile them).
std::unique_ptr<OpKernel> make_kernel(NodeContext& ctx) {
  const NodeSpec& n = ctx.spec();
  if (n.op == "Elemwise" && n.attrs.contains("scalar_op") && n.attrs["scalar_op"].is_object() &&
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
  const OpFactory f = find_op(n.op);
  return f ? f(ctx) : nullptr;
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
  static const char dummy[64] = {};
  for (int k = 0; k < e.num_nodes(); ++k) {
    if (e.removed(k)) continue;
    const NodeSpec& n = e.node(k);
    if (n.outputs.empty()) continue;
    const bool by_shape = shape_op(n.op) && n.inputs.size() == 1 && !e.is_constant(n.inputs[0]);
    bool ok = true;
    if (by_shape) {
      const Shape& s = g.vars[n.inputs[0]].static_shape;
      for (int d = 0; d < s.ndim; ++d) ok = ok && s.dims[d] >= 0;
    } else {
      for (int v : n.inputs) ok = ok && e.is_constant(v);
    }
    for (int v : n.outputs) ok = ok && small_enough(g.vars[v]);
    if (!ok) continue;

    std::vector<Array> values;
    try {
      NodeContext ctx(g, k, o);
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
      st.op = n.op;
      for (int i = 0; i < nin; ++i) {
        st.in.push_back(i);
        const int v = n.inputs[i];
        ws.values[i] = by_shape ? Tensor::contiguous(g.vars[v].dtype, g.vars[v].static_shape,
                                                     const_cast<char*>(dummy))
                                : e.constant(v);
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
