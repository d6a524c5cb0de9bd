// Common-subexpression elimination: constants with the same dtype, static
// shape and bytes become one; so do nodes with the same op, attrs and
// (merged) inputs whose outputs have the same dtypes and static shapes (the
// operands of two-operand commutative ops in either order). Every op is a
// pure function of its inputs, so the merged node computes the same bits
// once.
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

bool same_var_type(const VarSpec& a, const VarSpec& b) {
  if (a.dtype != b.dtype || a.static_shape.ndim != b.static_shape.ndim) return false;
  for (int d = 0; d < a.static_shape.ndim; ++d)
    if (a.static_shape.dims[d] != b.static_shape.dims[d]) return false;
  return true;
}

size_t mix(size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// The inputs that identify a node: a two-operand Add, Mul, EQ, NEQ, AND, OR
// or XOR gives the same bits either way round (up to which NaN's payload
// propagates), so its operands are sorted.
std::vector<int> key_inputs(const NodeSpec& n) {
  std::vector<int> in = n.inputs;
  if (in.size() == 2 && in[1] < in[0]) {
    const std::string s = elemwise_scalar_op(n);
    if (s == "Add" || s == "Mul" || s == "EQ" || s == "NEQ" || s == "AND" || s == "OR" || s == "XOR")
      std::swap(in[0], in[1]);
  }
  return in;
}

}  // namespace

int common_subexpressions(Editor& e) {
  Graph& g = e.g;
  int merged = 0;

  // Constants: by dtype, shape and bytes.
  std::unordered_map<size_t, std::vector<int>> consts;
  for (const ConstSpec& c : g.constants) {
    const int v = c.var;
    if (!e.is_constant(v)) continue;  // a shared input's value
    const VarSpec& vs = g.vars[v];
    const size_t nb = static_cast<size_t>(c.shape.size()) * dtype_size(vs.dtype);
    size_t h = std::hash<std::string_view>()(std::string_view(static_cast<const char*>(c.data), nb));
    h = mix(h, static_cast<size_t>(vs.dtype));
    for (int d = 0; d < c.shape.ndim; ++d) h = mix(h, static_cast<size_t>(c.shape.dims[d]));
    bool found = false;
    for (int u : consts[h]) {
      if (e.is_graph_output(v)) break;  // keeps its variable
      const Tensor a = e.constant(u), b = e.constant(v);
      if (!same_var_type(g.vars[u], vs) || a.shape.ndim != b.shape.ndim) continue;
      bool same_shape = true;
      for (int d = 0; d < a.shape.ndim; ++d) same_shape = same_shape && a.shape.dims[d] == b.shape.dims[d];
      if (!same_shape || std::memcmp(a.data, b.data, nb) != 0) continue;
      e.replace(v, u);
      found = true;
      ++merged;
      break;
    }
    if (!found) consts[h].push_back(v);
  }

  // Nodes, in order (inputs are merged before their users are looked at).
  std::unordered_map<size_t, std::vector<int>> seen;
  std::vector<std::vector<int>> keys(e.num_nodes());
  for (int k = 0; k < e.num_nodes(); ++k) {
    if (e.removed(k)) continue;
    const NodeSpec& n = e.node(k);
    if (n.outputs.empty()) continue;
    keys[k] = key_inputs(n);
    size_t h = std::hash<std::string>()(n.op);
    for (int v : keys[k]) h = mix(h, static_cast<size_t>(v));
    h = mix(h, std::hash<nlohmann::json>()(n.attrs));
    h = mix(h, n.outputs.size());
    bool found = false;
    for (int j : seen[h]) {
      const NodeSpec& m = g.nodes[j];
      if (m.op != n.op || keys[j] != keys[k] || m.outputs.size() != n.outputs.size()) continue;
      bool same = true;
      for (size_t o = 0; o < n.outputs.size() && same; ++o)
        same = same_var_type(g.vars[m.outputs[o]], g.vars[n.outputs[o]]);
      if (!same || m.attrs != n.attrs) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o) e.replace(n.outputs[o], m.outputs[o]);
      e.remove(k);
      found = true;
      ++merged;
      break;
    }
    if (!found) seen[h].push_back(k);
  }
  if (merged) e.commit();
  return merged;
}

}  // namespace ember::passes
