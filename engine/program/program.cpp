// The executor: runs a Program's static schedule in a per-thread Workspace.
#include <algorithm>
#include <cstring>
#include <map>
#include <new>

#include "engine/ops/elemwise.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/scalar_op.hpp"

namespace ember {

// ---- Program --------------------------------------------------------------

static void plan_fused(ProgramImpl& p);

Program::Program(std::unique_ptr<ProgramImpl> impl) : impl_(std::move(impl)) {
  for (size_t k = 0; k < impl_->steps.size(); ++k) {
    Step& st = impl_->steps[k];
    st.index = static_cast<int>(k);
    st.out_dtype.clear();
    for (int v : st.out) st.out_dtype.push_back(impl_->graph.vars[v].dtype);
    if (const auto* e = dynamic_cast<const ElemwiseKernel*>(st.kernel)) impl_->tiered |= e->tiered();
  }
  plan_fused(*impl_);
}

// A fused input that is a constant: the element the kernel reads, or null
// when it is not a constant or breaks its static promise (then each call
// looks it up and fails with ElemwiseKernel's message).
static const void* fixed_input(const ProgramImpl& p, const std::vector<int>& const_of, int v, const FusedInput& fi) {
  return const_of[v] < 0 ? nullptr : fused_element(p.const_values[const_of[v]], fi);
}

// Fused nodes' one-element outputs get fixed places in one per-workspace
// arena, so a call allocates nothing for them and their pointers (and those
// of fused inputs made by earlier fused nodes or read from constants) are
// set up once per workspace instead of once per call. The arena is small
// (the values are a few elements each) and never shared between steps, so
// no lifetime rules.
static void plan_fused(ProgramImpl& p) {
  std::vector<int> const_of(p.graph.vars.size(), -1);  // var -> index in const_values
  for (size_t k = 0; k < p.const_vars.size(); ++k) const_of[p.const_vars[k]] = static_cast<int>(k);
  std::vector<int> made_by(p.graph.vars.size(), -1);  // var -> fused step
  for (size_t s = 0; s < p.steps.size(); ++s) {
    Step& st = p.steps[s];
    const auto* k = dynamic_cast<const ElemwiseKernel*>(st.kernel);
    if (!k || !k->fused()) continue;
    st.fused = k;
    st.ops_at = static_cast<int>(p.fused_ops_size);
    p.fused_ops_size += st.in.size() + k->composite().outputs.size();
    st.out_at.clear();
    for (size_t o = 0; o < st.out.size(); ++o) {
      const size_t es = dtype_size(st.out_dtype[o]), align = std::max<size_t>(es, 8);
      p.arena_bytes = (p.arena_bytes + align - 1) / align * align;
      st.out_at.push_back(p.arena_bytes);
      p.arena_bytes += static_cast<size_t>(k->fused_out_shapes()[o].size()) * es;
      made_by[st.out[o]] = static_cast<int>(s);
    }
    st.live_in.clear();
    st.fixed_in.clear();
    st.live_picks.clear();
    st.pick_members.clear();
    std::map<int, std::vector<std::pair<int32_t, int64_t>>> picks;  // vector variable -> (input, index)
    for (size_t i = 0; i < st.in.size(); ++i) {
      const FusedInput& fi = k->fused_inputs()[i];
      if (const void* c = fixed_input(p, const_of, st.in[i], fi))
        st.fixed_in.emplace_back(static_cast<int32_t>(i), c);
      else if (fi.pick && fi.coord.size() == 1 && fi.coord[0] >= 0)
        picks[st.in[i]].emplace_back(static_cast<int32_t>(i), fi.coord[0]);
      else if (made_by[st.in[i]] < 0 || fi.pick)
        st.live_in.push_back(static_cast<int32_t>(i));
    }
    st.fixed_aligned = std::all_of(st.fixed_in.begin(), st.fixed_in.end(),
                                   [](const auto& f) { return reinterpret_cast<uintptr_t>(f.second) % 8 == 0; });
    for (const auto& [v, members] : picks) {
      Step::PickRun r{members[0].first, static_cast<int32_t>(st.pick_members.size()), 0, 0};
      for (const auto& m : members) {
        st.pick_members.push_back(m);
        r.need = std::max(r.need, m.second + 1);
      }
      r.last = static_cast<int32_t>(st.pick_members.size());
      st.live_picks.push_back(r);
    }
  }
}
Program::~Program() = default;

std::shared_ptr<const Program> Program::from_graph(Graph g, const Options& o) {
  return std::shared_ptr<const Program>(new Program(ProgramImpl::build(std::move(g), o)));
}

std::shared_ptr<const Program> Program::load(const std::string& path, const Options& o) {
  return from_graph(Graph::read_file(path), o);
}

std::shared_ptr<const Program> Program::from_json(std::string_view json, const Options& o) {
  return from_graph(Graph::parse(json, nullptr, 0, "<memory>"), o);
}

const std::vector<IOInfo>& Program::args() const { return impl_->args; }
const std::vector<IOInfo>& Program::shared() const { return impl_->shared; }
const std::vector<IOInfo>& Program::outputs() const { return impl_->outputs; }
const Graph& Program::graph() const { return impl_->graph; }

void WorkspaceDeleter::operator()(Workspace* ws) const { delete ws; }

WorkspacePtr Program::make_workspace() const {
  WorkspacePtr ws(new Workspace);
  ws->owner = impl_.get();
  ws->source = &impl_->graph.source;
  ws->values.resize(impl_->graph.vars.size());
  ws->slots.resize(impl_->num_slots);
  for (size_t k = 0; k < impl_->const_vars.size(); ++k) ws->values[impl_->const_vars[k]] = impl_->const_values[k];
  ws->outputs.resize(impl_->outputs.size());
  // Staggered: steps sampled on the same call would make every kSample-th call slow.
  ws->ticks.resize(impl_->steps.size());
  for (size_t k = 0; k < ws->ticks.size(); ++k) ws->ticks[k] = static_cast<uint32_t>(k % TierManager::kSample);
  if (impl_->tiered) ws->epoch = TierManager::instance().register_run_epoch();
  if (impl_->fused_ops_size) {
    char* arena = static_cast<char*>(ws->arena.reserve(impl_->arena_bytes));
    std::memset(arena, 0, impl_->arena_bytes);
    ws->fused_ops.assign(impl_->fused_ops_size, interp::StridedPtr{nullptr, 0});
    std::vector<char*> at(impl_->graph.vars.size(), nullptr);  // var -> its place in the arena
    for (const Step& st : impl_->steps) {
      if (!st.fused) continue;
      for (size_t o = 0; o < st.out.size(); ++o) {
        at[st.out[o]] = arena + st.out_at[o];
        ws->values[st.out[o]].set_contiguous(st.out_dtype[o], st.fused->fused_out_shapes()[o], at[st.out[o]]);
      }
      interp::StridedPtr* ops = ws->fused_ops.data() + st.ops_at;
      for (size_t i = 0; i < st.in.size(); ++i) ops[i].data = at[st.in[i]];  // live inputs: each call
      for (const auto& [i, c] : st.fixed_in) ops[i].data = const_cast<void*>(c);
      const size_t nin = st.in.size(), ncomp = st.fused->composite().outputs.size();
      for (size_t j = 0; j < ncomp; ++j) {
        const auto [o, elem] = st.fused->fused_target(static_cast<int>(j));
        ops[nin + j].data = at[st.out[o]] + static_cast<size_t>(elem) * dtype_size(st.out_dtype[o]);
      }
    }
  }
  return ws;
}

void check_arg(const ProgramImpl& p, const IOInfo& info, const Tensor& t, size_t k) {
  auto bad = [&](const std::string& what) {
    throw CallError(p.graph.source + ": argument " + std::to_string(k) + " ('" + info.name + "'): " + what);
  };
  if (t.dtype != info.dtype)
    bad("dtype " + std::string(dtype_name(t.dtype)) + ", expected " + std::string(dtype_name(info.dtype)));
  if (t.ndim() != info.static_shape.ndim)
    bad(std::to_string(t.ndim()) + " dims, expected " + std::to_string(info.static_shape.ndim));
  for (int d = 0; d < t.ndim(); ++d) {
    if (t.dim(d) < 0) bad("negative dim");
    if (info.static_shape.dims[d] >= 0 && t.dim(d) != info.static_shape.dims[d])
      bad("shape " + t.shape.str() + " does not match the static shape at dim " + std::to_string(d) +
          " (expected " + std::to_string(info.static_shape.dims[d]) + ")");
  }
  if (!t.data && t.size() > 0) bad("null data pointer");
}

void run_steps(const ProgramImpl& p, Workspace& ws) {
  try {
    for (const Step& st : p.steps) run_step(p, ws, st);
  } catch (const std::bad_alloc&) {
    throw CallError(p.graph.source + ": out of memory");
  }
}

const std::vector<Tensor>& Program::run(Workspace& ws, std::span<const Tensor> args) const {
  const ProgramImpl& p = *impl_;
  if (ws.owner != &p) throw CallError(p.graph.source + ": workspace belongs to another program");
  if (args.size() != p.args.size())
    throw CallError(p.graph.source + ": expected " + std::to_string(p.args.size()) + " arguments, got " +
                    std::to_string(args.size()));
  for (size_t k = 0; k < args.size(); ++k) {
    check_arg(p, p.args[k], args[k], k);
    ws.values[p.args[k].var].set_view(args[k]);
  }
  // Shared values: re-read only when set_shared has changed them since this
  // workspace last looked (steps never write input variables).
  if (!p.shared.empty() && ws.shared_seen != p.shared_version.load(std::memory_order_acquire)) {
    {
      std::lock_guard<std::mutex> lock(p.shared_mu);
      ws.shared_snapshot = p.shared_values;
      ws.shared_seen = p.shared_version.load(std::memory_order_relaxed);
    }
    for (size_t k = 0; k < p.shared.size(); ++k) ws.values[p.shared[k].var] = ws.shared_snapshot[k]->t;
  }
  {
    RunGuard guard(ws);
    run_steps(p, ws);
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) ws.outputs[k].set_view(ws.values[p.outputs[k].var]);
  return ws.outputs;
}

std::vector<Array> Program::call(std::span<const Tensor> args) const {
  WorkspacePtr ws;
  {
    std::lock_guard<std::mutex> lock(impl_->pool_mu);
    if (!impl_->pool.empty()) {
      ws = std::move(impl_->pool.back());
      impl_->pool.pop_back();
    }
  }
  if (!ws) ws = make_workspace();
  std::vector<Array> out;
  {
    const auto& res = run(*ws, args);
    for (const Tensor& t : res) out.push_back(Array::copy_of(t));
  }
  std::lock_guard<std::mutex> lock(impl_->pool_mu);
  impl_->pool.push_back(std::move(ws));
  return out;
}

std::vector<Array> Program::call(std::initializer_list<Tensor> args) const {
  return call(std::span<const Tensor>(args.begin(), args.size()));
}

void Program::set_shared(const std::string& name, const Tensor& value) const {
  ProgramImpl& p = *impl_;
  for (size_t k = 0; k < p.shared.size(); ++k) {
    if (p.shared[k].name != name) continue;
    check_arg(p, p.shared[k], value, k);
    auto copy = std::make_shared<const Array>(Array::copy_of(value));
    std::lock_guard<std::mutex> lock(p.shared_mu);
    p.shared_values[k] = std::move(copy);
    p.shared_version.fetch_add(1, std::memory_order_release);
    return;
  }
  throw CallError(p.graph.source + ": no shared input named '" + name + "'");
}

std::vector<std::string> supported_tensor_ops() { return tensor_op_names(); }

std::vector<std::string> supported_scalar_ops() {
  std::vector<std::string> v;
  for (const auto& i : interp::kScalarOps) v.emplace_back(i.name);
  v.emplace_back("Composite");
  return v;
}

}  // namespace ember
