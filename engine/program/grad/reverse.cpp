#include "engine/program/grad/reverse.hpp"

#include "engine/program/grad/adjoints.hpp"

namespace ember::grad {

namespace {

bool is_float(DType dt) { return dt == DType::Float64 || dt == DType::Float32; }

}  // namespace

std::vector<int> reverse(Builder& b, int cost, const std::vector<int>& wrt, const std::string& source) {
  Graph& g = b.e.g;
  const int nvars = static_cast<int>(g.vars.size());
  const int nnodes = b.e.num_nodes();

  // Forward: float variables that depend on some wrt.
  std::vector<char> reach(nvars, 0);
  for (int v : wrt) reach[v] = 1;
  std::vector<char> on(nnodes, 0);
  for (int k = 0; k < nnodes; ++k) {
    if (b.e.removed(k)) continue;
    const NodeSpec& n = b.e.node(k);
    for (int v : n.inputs) on[k] = on[k] || reach[v];
    if (on[k])
      for (int v : n.outputs) reach[v] = is_float(g.vars[v].dtype);
  }

  // Backward: contributions, summed when a variable's producer is reached.
  std::vector<std::vector<int>> terms(nvars);
  terms[cost].push_back(b.constant(1.0, g.vars[cost].dtype, 0));
  auto total = [&](int v) {
    std::vector<int>& t = terms[v];
    if (t.empty()) return -1;
    const int s = b.add(t);
    t.assign(1, s);
    return s;
  };
  for (int k = nnodes - 1; k >= 0; --k) {
    if (!on[k] || b.e.removed(k)) continue;
    const NodeSpec n = b.e.node(k);  // a copy: building appends nodes
    std::vector<int> gz;
    bool any = false;
    for (int v : n.outputs) {
      gz.push_back(reach[v] ? total(v) : -1);
      any = any || gz.back() >= 0;
    }
    if (!any) continue;
    std::vector<char> need(n.inputs.size(), 0);
    bool needed = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      need[i] = reach[n.inputs[i]];
      needed = needed || need[i];
    }
    if (!needed) continue;
    const int shown = b.e.origin && k < static_cast<int>(b.e.origin->size()) ? (*b.e.origin)[k] : k;
    const std::string where = source + ": cannot differentiate node " + std::to_string(shown) + " (" + n.op + ")";
    const std::vector<int> contrib = adjoint(b, n, gz, need, where);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (need[i] && contrib[i] >= 0) terms[n.inputs[i]].push_back(contrib[i]);
  }
  std::vector<int> out;
  for (int v : wrt) out.push_back(total(v));
  return out;
}

}  // namespace ember::grad
