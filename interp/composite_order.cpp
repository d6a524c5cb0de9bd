#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

#include "interp/bytecode.hpp"
#include "interp/composite.hpp"

namespace ember::interp {

namespace {

// Nodes that call one math function on operands of the same dtypes: the
// bytecode gives them one opcode.
using MathKey = std::tuple<int, int, std::vector<int>>;

MathKey math_key(const Composite& c, const ScalarNode& n) {
  std::vector<int> in;
  for (int32_t v : n.inputs) in.push_back(static_cast<int>(c.value_dtype(v)));
  return {static_cast<int>(n.op), static_cast<int>(n.dtype), std::move(in)};
}

}  // namespace

void group_math_calls(Composite& c) {
  const int32_t n = static_cast<int32_t>(c.nodes.size()), fv = c.first_node_value();
  if (n < 2) return;
  for (int32_t v : c.outputs)
    if (v < 0 || v >= c.num_values()) return;
  std::vector<int> waiting(n, 0);             // node inputs not yet placed
  std::vector<std::vector<int32_t>> users(n);  // per node, its readers (once per operand)
  std::vector<int> group(n, -1);               // math nodes: index of their key
  std::map<MathKey, int> keys;
  int math_nodes = 0;
  for (int32_t k = 0; k < n; ++k) {
    const ScalarNode& node = c.nodes[k];
    for (int32_t v : node.inputs) {
      if (v < 0 || v >= fv + k) return;  // invalid: left for validate() to report
      if (v >= fv) ++waiting[k], users[v - fv].push_back(k);
    }
    if (math_arity(node.op) > 0) {
      group[k] = keys.emplace(math_key(c, node), static_cast<int>(keys.size())).first->second;
      ++math_nodes;
    }
  }
  if (math_nodes < 2) return;
  using MinHeap = std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>>;
  MinHeap plain;                          // ready nodes that compute inline, in their original order
  std::vector<MinHeap> math(keys.size());  // ready math nodes, per key
  auto ready = [&](int32_t k) { group[k] < 0 ? plain.push(k) : math[group[k]].push(k); };
  for (int32_t k = 0; k < n; ++k)
    if (waiting[k] == 0) ready(k);
  std::vector<int32_t> order;
  order.reserve(n);
  auto place = [&](int32_t k) {
    order.push_back(k);
    for (int32_t u : users[k])
      if (--waiting[u] == 0) ready(u);
  };
  // Inline work first; when none is ready, every ready call of the math
  // function whose first ready node comes earliest, together.
  while (static_cast<int32_t>(order.size()) < n) {
    while (!plain.empty()) {
      const int32_t k = plain.top();
      plain.pop();
      place(k);
    }
    int best = -1;
    for (size_t g = 0; g < math.size(); ++g)
      if (!math[g].empty() && (best < 0 || math[g].top() < math[best].top())) best = static_cast<int>(g);
    if (best < 0) break;  // unreachable: every node's inputs come before it
    std::vector<int32_t> batch;  // taken first: nodes it makes ready wait for a later batch
    for (MinHeap& h = math[best]; !h.empty(); h.pop()) batch.push_back(h.top());
    for (int32_t k : batch) place(k);
  }
  std::vector<int32_t> at(n);  // old node index -> new
  for (int32_t i = 0; i < n; ++i) at[order[i]] = i;
  auto remap = [&](int32_t v) { return v < fv ? v : fv + at[v - fv]; };
  std::vector<ScalarNode> nodes;
  nodes.reserve(n);
  for (int32_t k : order) {
    ScalarNode node = std::move(c.nodes[k]);
    for (int32_t& v : node.inputs) v = remap(v);
    nodes.push_back(std::move(node));
  }
  c.nodes = std::move(nodes);
  for (int32_t& v : c.outputs) v = remap(v);
}

}  // namespace ember::interp
