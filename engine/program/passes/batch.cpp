// Horizontal fusion: Elemwise nodes that run one scalar op (or Composite) over
// arrays of one static shape S, each reading only constants of shape S and
// one-element values, and each of whose outputs is only summed whole, become
// one Elemwise over the stacked batch (G, S) and one Sum per output over S.
// A model written as a Python loop over groups (one observed variable per
// group) makes one such node per group, each paying a step's fixed cost for
// a few dozen elements; batched, the G groups are one step.
//
// Each row of the batch runs the same scalar ops on the same values, and each
// row's sum follows the summation tree of its R elements, the tree the whole
// sum it replaces used (engine/ops/reduce_tree.hpp): the bits stay.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

using nlohmann::json;

constexpr int kMinBatch = 3;  // fewer members gain less than the joins cost

struct Member {
  int node = -1;
  std::vector<int> sums;  // the Sum node reading each output
};

bool sums_everything(const NodeSpec& s, int ndim) {
  if (!s.attrs.contains("axis") || s.attrs["axis"].is_null()) return true;
  const json& a = s.attrs["axis"];
  if (!a.is_array() || static_cast<int>(a.size()) != ndim) return false;
  std::vector<int> axes;
  for (const json& x : a) {
    if (!x.is_number_integer()) return false;
    const int d = x.get<int>();
    axes.push_back(d < 0 ? d + ndim : d);
  }
  std::sort(axes.begin(), axes.end());
  for (int d = 0; d < ndim; ++d)
    if (axes[d] != d) return false;
  return true;
}

// The grouping key of an Elemwise node that can be batched, or "" when it
// cannot; fills m.sums.
std::string batch_key(Editor& e, const Users& users, int k, Member& m) {
  const NodeSpec& n = e.node(k);
  if (!is_op(n, TensorOp::Elemwise) || !n.attrs.contains("scalar_op") || n.outputs.empty()) return "";
  const json& so = n.attrs["scalar_op"];
  if (!so.is_object() || so.value("op", json()) == "ScalarLoop") return "";
  const Shape s = e.g.vars[n.outputs[0]].static_shape;
  if (s.ndim < 1 || s.ndim >= kMaxRank) return "";
  int64_t size = 1;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.dims[d] < 0) return "";
    size *= s.dims[d];
  }
  if (size <= 1) return "";
  std::string key = so.dump() + "|" + s.str();
  for (int v : n.inputs) {
    const VarSpec& vs = e.g.vars[v];
    if (vs.static_shape.ndim != s.ndim) return "";
    if (e.is_constant(v) && same_static_shape(vs.static_shape, s) && e.constant(v).is_contiguous()) {
      key += "|c";
    } else if (one_element(vs) && !e.is_graph_output(v)) {
      key += "|1";
    } else {
      return "";
    }
    key += dtype_name(vs.dtype);
  }
  m.node = k;
  m.sums.clear();
  for (int v : n.outputs) {
    const VarSpec& vs = e.g.vars[v];
    if (e.is_graph_output(v) || !same_static_shape(vs.static_shape, s)) return "";
    const auto readers = users.of(v);
    if (readers.size() != 1) return "";
    const NodeSpec& sum = e.node(readers[0]);
    if (!is_op(sum, TensorOp::Sum) || sum.inputs.size() != 1 || sum.outputs.size() != 1 ||
        !sums_everything(sum, s.ndim) || e.g.vars[sum.outputs[0]].static_shape.ndim != 0)
      return "";
    json rest = sum.attrs;
    rest.erase("axis");
    key += "|";
    key += dtype_name(vs.dtype);
    key += rest.dump();
    key += dtype_name(e.g.vars[sum.outputs[0]].dtype);
    m.sums.push_back(readers[0]);
  }
  return key;
}

// The nodes that read, directly or through others, an output of a member.
std::vector<char> downstream(Editor& e, const Users& users, const std::vector<Member>& members) {
  std::vector<char> seen(static_cast<size_t>(e.num_nodes()), 0);
  std::vector<int> todo;
  auto reach = [&](int k) {
    for (int v : e.node(k).outputs)
      for (int u : users.of(v))
        if (!seen[u]) {
          seen[u] = 1;
          todo.push_back(u);
        }
  };
  for (const Member& m : members) reach(m.node);
  while (!todo.empty()) {
    const int k = todo.back();
    todo.pop_back();
    reach(k);
  }
  return seen;
}

// Input p of every member, stacked to (G, S) or (G, 1, ..., 1).
int stack_input(Editor& e, const std::vector<Member>& group, int p, const Shape& batch, int at) {
  const int v0 = e.node(group[0].node).inputs[p];
  const VarSpec vs = e.g.vars[v0];
  const int nd = vs.static_shape.ndim;
  bool same = true;
  for (const Member& m : group) same = same && e.node(m.node).inputs[p] == v0;
  json order = json::array({"x"});
  for (int d = 0; d < nd; ++d) order.push_back(d);
  Shape lead;  // v0's shape with a leading 1
  lead.ndim = nd + 1;
  lead.dims[0] = 1;
  for (int d = 0; d < nd; ++d) lead.dims[d + 1] = vs.static_shape.dims[d];
  if (same) return e.add_op("DimShuffle", {v0}, json{{"new_order", order}}, vs.dtype, lead, at);
  const int64_t g = static_cast<int64_t>(group.size());
  if (e.is_constant(v0)) {
    Array a = Array::empty(vs.dtype, batch);
    const size_t bytes = static_cast<size_t>(vs.static_shape.size()) * dtype_size(vs.dtype);
    for (int64_t i = 0; i < g; ++i)
      std::memcpy(static_cast<char*>(a.t.data) + i * bytes, e.constant(e.node(group[i].node).inputs[p]).data, bytes);
    return e.add_constant(vs.dtype, batch, a);
  }
  // Each one-element value given the batch's rank, then joined on axis 0:
  // the one-element fusion writes the joined elements in place (a Pack) and
  // takes the reshapes in, so no step of its own is left for them.
  json to_batch = json::array({0, "x"});
  for (int d = 1; d < nd; ++d) to_batch.push_back(d);
  Shape one;
  one.ndim = nd + 1;
  for (int d = 0; d <= nd; ++d) one.dims[d] = 1;
  std::vector<int> parts;
  for (const Member& m : group)
    parts.push_back(e.add_op("DimShuffle", {e.node(m.node).inputs[p]}, json{{"new_order", to_batch}}, vs.dtype, one, at));
  Shape col = one;  // (G, 1, ..., 1)
  col.dims[0] = g;
  return e.add_op("Join", std::move(parts), json{{"axis", 0}}, vs.dtype, col, at);
}

void batch_group(Editor& e, const std::vector<Member>& group) {
  const NodeSpec first = e.node(group[0].node);
  const int at = group[0].node;
  const Shape s = e.g.vars[first.outputs[0]].static_shape;
  Shape batch;
  batch.ndim = s.ndim + 1;
  batch.dims[0] = static_cast<int64_t>(group.size());
  for (int d = 0; d < s.ndim; ++d) batch.dims[d + 1] = s.dims[d];
  NodeSpec n;
  n.op = first.op;
  n.attrs = first.attrs;
  for (size_t p = 0; p < first.inputs.size(); ++p) n.inputs.push_back(stack_input(e, group, static_cast<int>(p), batch, at));
  for (int v : first.outputs) n.outputs.push_back(e.add_var(e.g.vars[v].dtype, batch));
  const std::vector<int> outs = n.outputs;
  e.add_node(std::move(n), at);
  json axes = json::array();
  for (int d = 1; d <= s.ndim; ++d) axes.push_back(d);
  Shape rows;
  rows.ndim = 1;
  rows.dims[0] = batch.dims[0];
  for (size_t j = 0; j < outs.size(); ++j) {
    const NodeSpec sum0 = e.node(group[0].sums[j]);
    json attrs = sum0.attrs;
    attrs["axis"] = axes;
    const DType dt = e.g.vars[sum0.outputs[0]].dtype;
    const int sums = e.add_op("Sum", {outs[j]}, attrs, dt, rows, at);
    for (size_t g = 0; g < group.size(); ++g) {
      const int old = e.node(group[g].sums[j]).outputs[0];
      const json idx = json::array({json{{"type", "index"}, {"value", static_cast<int64_t>(g)}}});
      e.replace(old, e.add_op("Subtensor", {sums}, json{{"idx_list", idx}}, dt, Shape{}, at));
      e.remove(group[g].sums[j]);
    }
  }
  for (const Member& m : group) e.remove(m.node);
}

// Batches the first group that can be and commits: the number of members,
// or 0 when none can.
int batch_one_group(Editor& e) {
  const Users users = e.users();
  std::map<std::string, std::vector<Member>> groups;
  std::vector<std::string> order;  // keys by first appearance: a deterministic graph
  const int n = e.num_nodes();
  for (int k = 0; k < n; ++k) {
    if (e.removed(k)) continue;
    Member m;
    const std::string key = batch_key(e, users, k, m);
    if (key.empty()) continue;
    auto& g = groups[key];
    if (g.empty()) order.push_back(key);
    g.push_back(std::move(m));
  }
  for (const std::string& key : order) {
    std::vector<Member>& all = groups[key];
    if (static_cast<int>(all.size()) < kMinBatch) continue;
    // A member none of whose inputs depends on a member's outputs: no member
    // then reads another's sums, and commit() can place the batched node
    // after every member's inputs (their parameters are often computed
    // just before each member, between the members).
    const std::vector<char> after = downstream(e, users, all);
    std::vector<Member> group;
    for (const Member& m : all) {
      bool ok = true;
      for (int v : e.node(m.node).inputs) ok = ok && !(e.producer(v) >= 0 && after[e.producer(v)]);
      if (ok) group.push_back(m);
    }
    if (static_cast<int>(group.size()) < kMinBatch) continue;
    batch_group(e, group);
    e.commit();
    return static_cast<int>(group.size());
  }
  return 0;
}

}  // namespace

// One group at a time: the dependencies a batched group adds (its node reads
// every member's inputs) are in the graph the next group is checked on.
int batch_siblings(Editor& e) {
  int batched = 0;
  while (const int b = batch_one_group(e)) batched += b;
  return batched;
}

}  // namespace ember::passes
