#include "engine/program/lazy_branches.hpp"

#include <functional>
#include <utility>

#include "engine/ops/ops_common.hpp"
#include "engine/program/program_impl.hpp"

namespace ember {

BranchContexts branch_contexts(const std::vector<BranchNode>& nodes, size_t nvars, const std::vector<int>& outputs) {
  BranchContexts r;
  const int ns = static_cast<int>(nodes.size());
  bool any = false;
  for (const BranchNode& nd : nodes) any |= nd.in && nd.ifelse;
  if (!any) return r;

  std::vector<std::vector<std::pair<int, int>>> users(nvars);  // (node, input position)
  for (int s = 0; s < ns; ++s)
    if (nodes[s].in)
      for (size_t i = 0; i < nodes[s].in->size(); ++i) users[(*nodes[s].in)[i]].push_back({s, static_cast<int>(i)});
  std::vector<char> is_output(nvars, 0);
  for (int v : outputs) is_output[v] = 1;

  std::vector<Guard>& guards = r.guards;
  std::vector<int>& ctx = r.ctx;
  ctx.assign(ns, -1);
  std::vector<int> depth;  // per guard
  std::vector<int> branch_guard(2 * static_cast<size_t>(ns), -1);  // (IfElse, branch) -> guard
  auto depth_of = [&](int g) { return g < 0 ? 0 : depth[g]; };
  auto lca = [&](int a, int b) {
    while (depth_of(a) > depth_of(b)) a = guards[a].parent;
    while (depth_of(b) > depth_of(a)) b = guards[b].parent;
    while (a != b) a = guards[a].parent, b = guards[b].parent;
    return a;
  };
  auto guard_for = [&](int ifelse, bool when) {
    int& g = branch_guard[2 * static_cast<size_t>(ifelse) + (when ? 1 : 0)];
    if (g < 0) {
      g = static_cast<int>(guards.size());
      guards.push_back(Guard{(*nodes[ifelse].in)[0], when, ctx[ifelse], ifelse});
      depth.push_back(depth_of(ctx[ifelse]) + 1);
    }
    return g;
  };
  // Reverse order: every user's context is known before its producer's.
  for (int s = ns - 1; s >= 0; --s) {
    if (!nodes[s].in) continue;
    bool seen = false, root = false;
    int c = -1;
    for (int v : *nodes[s].out) {
      if (is_output[v]) root = true;
      for (const auto& [u, pos] : users[v]) {
        int uc = ctx[u];
        if (nodes[u].ifelse && pos >= 1) uc = guard_for(u, pos <= static_cast<int>(nodes[u].out->size()));
        c = seen ? lca(c, uc) : uc;
        seen = true;
      }
    }
    ctx[s] = root || !seen ? -1 : c;  // unused outputs: always run, as without IfElse
  }
  return r;
}

void plan_lazy_branches(ProgramImpl& p) {
  const int ns = static_cast<int>(p.steps.size());
  std::vector<BranchNode> nodes(ns);
  for (int s = 0; s < ns; ++s) nodes[s] = {&p.steps[s].in, &p.steps[s].out, p.steps[s].op == TensorOp::IfElse};
  BranchContexts bc = branch_contexts(nodes, p.graph.vars.size(), p.graph.outputs);
  if (bc.guards.empty()) return;
  const std::vector<int>& ctx = bc.ctx;
  p.guards = std::move(bc.guards);

  // Guarded steps run just before their IfElse, in their original order.
  std::vector<std::vector<int>> deferred(ns);
  for (int s = 0; s < ns; ++s)
    if (ctx[s] >= 0) deferred[p.guards[ctx[s]].ifelse].push_back(s);
  std::vector<int> order;
  order.reserve(ns);
  std::function<void(int)> emit = [&](int s) {
    for (int d : deferred[s]) emit(d);
    order.push_back(s);
  };
  for (int s = 0; s < ns; ++s)
    if (ctx[s] < 0) emit(s);
  std::vector<Step> steps;
  std::vector<std::unique_ptr<OpKernel>> kernels;
  for (int s : order) {
    p.steps[s].guard = ctx[s];
    steps.push_back(std::move(p.steps[s]));
    kernels.push_back(std::move(p.kernels[s]));
  }
  p.steps = std::move(steps);
  p.kernels = std::move(kernels);
}

bool guard_open(const ProgramImpl& p, const Workspace& ws, int g) {
  for (; g >= 0; g = p.guards[g].parent)
    if ((scalar_double(ws.values[p.guards[g].cond_var]) != 0) != p.guards[g].when) return false;
  return true;
}

}  // namespace ember
