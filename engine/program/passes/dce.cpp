// Dead-code removal: nodes none of whose outputs reach a graph output.
// Unused constants stay (they cost nothing at run time).
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

int dead_code(Editor& e) {
  Graph& g = e.g;
  std::vector<char> live(g.vars.size(), 0);
  for (int v : g.outputs) live[v] = 1;
  int removed = 0;
  for (int k = e.num_nodes() - 1; k >= 0; --k) {
    NodeSpec& n = e.node(k);
    bool used = false;
    for (int v : n.outputs) used = used || live[v];
    if (!used) {
      e.remove(k);
      ++removed;
      continue;
    }
    for (int v : n.inputs) live[v] = 1;
  }
  if (removed) e.commit();
  return removed;
}

}  // namespace ember::passes
