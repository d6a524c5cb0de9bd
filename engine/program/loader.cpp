// Validates a whole Graph and turns it into an immutable program: node
// checks (through each op's factory), static schedule, buffer plan.
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "engine/program/fuse_elemwise.hpp"
#include "engine/program/fuse_reduce.hpp"
#include "engine/program/grad/grad.hpp"
#include "engine/program/passes/passes.hpp"
#include "engine/program/program_impl.hpp"

namespace ember {

using nlohmann::json;

// ---- Program building -----------------------------------------------------

namespace {

std::string io_name(const VarSpec& v, const char* kind, size_t k) {
  return v.name.empty() ? std::string(kind) + std::to_string(k) : v.name;
}

// Every variable must be defined exactly once, before its first use.
void check_topology(const Graph& g) {
  const std::string& src = g.source;
  std::vector<int> def(g.vars.size(), -2);  // -2 undefined, -1 input/constant, else node
  auto define = [&](int v, int by, const std::string& where) {
    if (def[v] != -2)
      throw LoadError(src + ": " + where + ": variable " + std::to_string(v) + " is defined twice");
    def[v] = by;
  };
  std::set<int> shared_vars;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    define(g.inputs[k].var, -1, "inputs[" + std::to_string(k) + "]");
    if (g.inputs[k].shared) shared_vars.insert(g.inputs[k].var);
  }
  for (size_t k = 0; k < g.constants.size(); ++k) {
    const int v = g.constants[k].var;
    if (shared_vars.count(v)) continue;  // a shared input's initial value
    define(v, -1, "constants[" + std::to_string(k) + "]");
  }
  for (int v : shared_vars) {
    bool has_value = false;
    for (const ConstSpec& c : g.constants) has_value |= c.var == v;
    if (!has_value)
      throw LoadError(src + ": shared input variable " + std::to_string(v) +
                      " has no initial value in 'constants'");
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeSpec& n = g.nodes[k];
    const std::string where = "node " + std::to_string(k) + " (" + n.op + ")";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (def[n.inputs[i]] == -2)
        throw LoadError(src + ": " + where + ": field 'inputs[" + std::to_string(i) + "]': variable " +
                        std::to_string(n.inputs[i]) +
                        " is not defined before this node (dangling reference or cycle)");
    for (size_t i = 0; i < n.outputs.size(); ++i)
      define(n.outputs[i], static_cast<int>(k), where + ": field 'outputs[" + std::to_string(i) + "]'");
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (def[g.outputs[k]] == -2)
      throw LoadError(src + ": field 'outputs[" + std::to_string(k) + "]': variable " +
                      std::to_string(g.outputs[k]) + " is never computed");
}

}  // namespace

std::vector<int> view_roots(const ProgramImpl& p) {
  std::vector<int> root(p.graph.vars.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<int>(v);
  for (const Step& st : p.steps)
    for (size_t o = 0; o < st.out.size(); ++o) {
      const int src = st.kernel->may_view(static_cast<int>(o));
      if (src >= 0 && src < static_cast<int>(st.in.size())) root[st.out[o]] = root[st.in[src]];
    }
  return root;
}

namespace {

// Assigns buffer slots: a slot is busy from its variable's definition until
// the last use of it or of any view that may alias it.
int plan_buffers(ProgramImpl& p) {
  const Graph& g = p.graph;
  const int nsteps = static_cast<int>(p.steps.size());
  constexpr int kForever = 1 << 30;
  std::vector<int> end(g.vars.size(), -1);
  for (int s = 0; s < nsteps; ++s)
    for (int v : p.steps[s].in) end[v] = std::max(end[v], s);
  for (int v : g.outputs) end[v] = kForever;
  for (int s = nsteps - 1; s >= 0; --s) {
    const Step& st = p.steps[s];
    for (size_t o = 0; o < st.out.size(); ++o) {
      const int src = st.kernel->may_view(static_cast<int>(o));
      if (src >= 0 && src < static_cast<int>(st.in.size()))
        end[st.in[src]] = std::max(end[st.in[src]], end[st.out[o]]);
    }
  }
  const std::vector<int> root = view_roots(p);
  std::vector<int> free_slots, slot_of(g.vars.size(), -1);
  std::vector<std::vector<int>> release_at(nsteps);
  int nslots = 0;
  // The slot of the input that output o of step s may update in place, when
  // that input owns its buffer, dies here and no other operand views it; else -1.
  auto takeover = [&](int s, int o) {
    const Step& st = p.steps[s];
    const int src = st.kernel->may_overwrite(o);
    if (src < 0 || src >= static_cast<int>(st.in.size())) return -1;
    const int v = st.in[src];
    if (slot_of[v] < 0 || end[v] != s || root[v] != v) return -1;
    for (size_t j = 0; j < st.in.size(); ++j)  // no other operand may read that memory
      if (static_cast<int>(j) != src && root[st.in[j]] == v) return -1;
    auto& rel = release_at[s];
    auto it = std::find(rel.begin(), rel.end(), slot_of[v]);
    if (it == rel.end()) return -1;
    rel.erase(it);
    return slot_of[v];
  };
  for (int s = 0; s < nsteps; ++s) {
    Step& st = p.steps[s];
    st.out_slot.resize(st.out.size());
    for (size_t o = 0; o < st.out.size(); ++o) {
      int slot = takeover(s, static_cast<int>(o));
      if (slot < 0 && !free_slots.empty()) {
        slot = free_slots.back();
        free_slots.pop_back();
      } else if (slot < 0) {
        slot = nslots++;
      }
      st.out_slot[o] = slot;
      slot_of[st.out[o]] = slot;
      const int e = std::max(end[st.out[o]], s);  // unused outputs die at once
      if (e < nsteps) release_at[e].push_back(slot);
    }
    for (int slot : release_at[s]) free_slots.push_back(slot);
  }
  return nslots;
}

}  // namespace

std::unique_ptr<ProgramImpl> ProgramImpl::build(Graph g, const Options& o) {
  auto p = std::make_unique<ProgramImpl>();
  p->graph = std::move(g);
  p->options = o;
  const Graph& gr = p->graph;
  check_topology(gr);

  // All unsupported ops are reported at once.
  std::vector<std::string> missing;
  std::vector<TensorOp> ops;
  for (size_t k = 0; k < gr.nodes.size(); ++k) {
    const std::optional<TensorOp> op = find_tensor_op(gr.nodes[k].op);
    if (op) ops.push_back(*op);
    else missing.push_back("node " + std::to_string(k) + " (" + gr.nodes[k].op + ")");
  }
  if (!missing.empty()) {
    std::string msg = gr.source + ": " + std::to_string(missing.size()) + " node(s) use unsupported ops: ";
    for (size_t k = 0; k < missing.size(); ++k) msg += (k ? ", " : "") + missing[k];
    throw LoadError(msg);
  }

  // A "gradient" directive: the graph is differentiated first (engine/program/grad/).
  passes::PassStat derived;
  std::vector<int> file_index;  // of each differentiated graph's node, for messages
  if (!p->graph.gradient.is_null()) {
    const auto t0 = std::chrono::steady_clock::now();
    derived.name = "differentiate";
    derived.nodes_before = static_cast<int>(gr.nodes.size());
    try {
      grad::derive(p->graph, p->options, &file_index);
    } catch (const nlohmann::json::exception& e) {  // an attribute of the wrong JSON type
      throw LoadError(gr.source + ": gradient: " + e.what());
    }
    derived.nodes_after = static_cast<int>(gr.nodes.size());
    derived.ms = derived.cpu_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    check_topology(gr);
  }

  // Graph passes (engine/program/passes/); messages keep naming the file's nodes.
  p->pass_report = passes::run_passes(p->graph, p->options);
  for (int& k : p->pass_report.origin)
    if (k >= 0 && k < static_cast<int>(file_index.size())) k = file_index[k];
  if (!derived.name.empty()) {
    p->pass_report.passes.insert(p->pass_report.passes.begin(), derived);
    p->pass_report.ms += derived.ms;
  }
  check_topology(gr);
  const std::vector<int>& shown = p->pass_report.origin;
  ops.clear();
  for (const NodeSpec& n : gr.nodes) {  // the passes make nodes of table ops only
    const std::optional<TensorOp> op = find_tensor_op(n.op);
    if (!op) throw LoadError(gr.source + ": a graph pass made a node of unknown op " + n.op);
    ops.push_back(*op);
  }

  for (size_t k = 0; k < gr.nodes.size(); ++k) {
    NodeContext ctx(gr, static_cast<int>(k), ops[k], p->options, k < shown.size() ? shown[k] : -1);
    ctx.set_subprogram_loader(&load_subprogram);
    std::unique_ptr<OpKernel> kernel;
    try {
      kernel = op_factory(ops[k])(ctx);
    } catch (const nlohmann::json::exception& e) {  // an attribute of the wrong JSON type
      ctx.fail("attrs", e.what());
    }
    Step st;
    st.node = static_cast<int>(k);
    st.shown = k < shown.size() ? shown[k] : -1;
    st.kernel = kernel.get();
    st.in = gr.nodes[k].inputs;
    st.out = gr.nodes[k].outputs;
    st.op = ops[k];
    st.name = gr.nodes[k].op;
    p->steps.push_back(std::move(st));
    p->kernels.push_back(std::move(kernel));
  }
  if (fusion_enabled()) {
    fuse_elemwise(*p);
    fuse_reductions(*p);
  }
  plan_lazy_branches(*p);
  p->num_slots = plan_buffers(*p);

  for (size_t k = 0; k < gr.inputs.size(); ++k) {
    const VarSpec& v = gr.vars[gr.inputs[k].var];
    IOInfo info{io_name(v, "input", k), gr.inputs[k].var, v.dtype, v.static_shape, gr.inputs[k].shared};
    (info.shared ? p->shared : p->args).push_back(info);
  }
  for (size_t k = 0; k < gr.outputs.size(); ++k) {
    const VarSpec& v = gr.vars[gr.outputs[k]];
    p->outputs.push_back(IOInfo{io_name(v, "output", k), gr.outputs[k], v.dtype, v.static_shape, false});
  }
  for (const ConstSpec& c : gr.constants) {
    const VarSpec& v = gr.vars[c.var];
    Tensor t = Tensor::contiguous(v.dtype, c.shape, const_cast<void*>(c.data));
    bool is_shared = false;
    p->shared_values.resize(p->shared.size());
    for (size_t s = 0; s < p->shared.size(); ++s)
      if (p->shared[s].var == c.var) {
        is_shared = true;
        p->shared_values[s] = std::make_shared<const Array>(Array::copy_of(t));
      }
    if (!is_shared) {
      p->const_vars.push_back(c.var);
      p->const_values.push_back(t);
    }
  }
  return p;
}

}  // namespace ember
