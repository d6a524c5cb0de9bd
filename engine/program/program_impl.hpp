// Internals of a loaded Program: its static schedule (Steps, engine/ops/
// workspace.hpp), kernels, buffer plan and pool of Workspaces.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"
#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/workspace.hpp"
#include "engine/program/lazy_branches.hpp"
#include "engine/program/passes/passes.hpp"
#include "interp/kernel.hpp"

namespace ember {

struct ProgramImpl {
  Graph graph;
  Options options;
  std::vector<std::unique_ptr<OpKernel>> kernels;  // per step
  std::vector<Step> steps;
  std::vector<IOInfo> args, shared, outputs;
  std::vector<int> const_vars;
  std::vector<Tensor> const_values;  // parallel to const_vars
  int num_slots = 0;
  size_t arena_bytes = 0, fused_ops_size = 0;  // Workspace::arena / fused_ops sizes
  passes::PassReport pass_report;  // what the load-time graph passes did
  bool tiered = false;  // some kernel is the tier manager's: runs keep an epoch (RunEpoch)
  std::vector<Guard> guards;  // lazy IfElse branches (Step::guard)

  mutable std::mutex shared_mu;  // guards shared_values
  mutable std::vector<std::shared_ptr<const Array>> shared_values;
  mutable std::atomic<uint64_t> shared_version{0};  // bumped (under shared_mu) by each set_shared
  mutable std::mutex pool_mu;
  mutable std::vector<WorkspacePtr> pool;

  // Builds the schedule, kernels and buffer plan. Throws LoadError.
  static std::unique_ptr<ProgramImpl> build(Graph g, const Options& o);
};

// One step of Program::run (skipped while its lazy branch's guard is shut):
// fused nodes write to their planned arena places. Inline: the executor's loop.
// Brackets a run in its workspace's epoch (TierManager::begin_run).
struct RunGuard {
  RunEpoch* r;
  explicit RunGuard(Workspace& ws) : r(ws.epoch.get()) {
    if (r) TierManager::begin_run(r);
  }
  ~RunGuard() {
    if (r) TierManager::end_run(r);
  }
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;
};

inline void run_step(const ProgramImpl& p, Workspace& ws, const Step& st) {
  if (st.guard >= 0 && !guard_open(p, ws, st.guard)) return;
  Frame f(ws, st);
  if (st.fused)
    st.fused->run_planned(f, ws.fused_ops.data() + st.ops_at, st);
  else
    st.kernel->run(f);
}

// root[v]: the variable whose buffer v's memory may be, through the steps'
// views (OpKernel::may_view); v itself when it owns its memory.
std::vector<int> view_roots(const ProgramImpl& p);
// Throws CallError unless t fits argument k (info: p.args[k] or p.shared[k]).
void check_arg(const ProgramImpl& p, const IOInfo& info, const Tensor& t, size_t k);
// The schedule on the values as bound (Program::run without binding or epoch).
void run_steps(const ProgramImpl& p, Workspace& ws);

// A Program as the ops stage's Subprogram (engine/program/subprogram.cpp).
std::unique_ptr<Subprogram> load_subprogram(Graph g, const Options& o);

}  // namespace ember
