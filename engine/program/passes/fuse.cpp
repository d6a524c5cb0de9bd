// Element-wise fusion for any shape: connected Elemwise nodes whose outputs
// have the same broadcast pattern become one Elemwise over one Composite,
// as PyTensor's FusionOptimizer does. The Composite holds every member's
// scalar nodes in the members' order, each with its own dtype, so it
// computes the same bits; a member value another node (or the graph's
// outputs) reads is an extra Composite output. Under PyTensor's
// broadcasting rule every member then has the fused node's run-time shape.
//
// Groups grow greedily from the last unfused node backwards (its producers
// first, then their other element-wise consumers), up to kMaxOperands
// inputs + outputs and kMaxScalarNodes scalar nodes. A node joins only if no
// path leaves the group and comes back, counting groups already formed as
// single nodes: the graph of fused nodes stays acyclic. Paths are searched
// in a topological order of that graph, pruned by position.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

using nlohmann::json;

constexpr int kMaxOperands = 32;
constexpr int kMaxScalarNodes = 1024;
constexpr int kMaxSearch = 4096;  // nodes one path search may visit before giving up (no fusion)

json scalar_value_json(const interp::ScalarConst& k) {
  if (k.dtype == DType::Bool) return json(k.i != 0);
  if (!dtype_is_float(k.dtype)) return json(k.i);
  if (std::isnan(k.f)) return json("nan");
  if (std::isinf(k.f)) return json(k.f > 0 ? "inf" : "-inf");
  return json(k.f);
}

json composite_to_json(const interp::Composite& c) {
  json j = {{"op", "Composite"}, {"inputs", json::array()}, {"constants", json::array()},
            {"nodes", json::array()}, {"outputs", c.outputs}};
  for (DType t : c.inputs) j["inputs"].push_back(std::string(dtype_name(t)));
  for (const interp::ScalarConst& k : c.constants)
    j["constants"].push_back({{"dtype", std::string(dtype_name(k.dtype))}, {"value", scalar_value_json(k)}});
  for (const interp::ScalarNode& n : c.nodes)
    j["nodes"].push_back({{"op", std::string(interp::op_info(n.op).name)},
                          {"inputs", n.inputs},
                          {"dtype", std::string(dtype_name(n.dtype))}});
  return j;
}

class Fuser {
 public:
  Fuser(Editor& ed) : e(ed), g(ed.g), n(ed.num_nodes()) {}
  int run();

 private:
  Editor& e;
  Graph& g;
  const int n;
  std::vector<std::vector<int>> users;        // per variable
  std::vector<char> cand;                     // per node: a fusable Elemwise
  std::vector<interp::Composite> comp;        // per candidate node
  std::vector<int> group;                     // per node: group id, -1
  std::vector<std::vector<int>> members;      // per group
  std::vector<int> ord;                       // topological position in the graph of groups
  std::vector<int> stamp;                     // per node: search visit mark
  int cur_stamp = 0;
  Shape known;                                // the growing group's static dims (-1 unknown)

  const Shape& pattern(int k) const { return g.vars[g.nodes[k].outputs[0]].static_shape; }
  bool compatible(int a, int b) const;
  // A one-element constant: a Composite constant rather than an operand.
  bool inline_constant(int v) const { return e.is_constant(v) && one_element(g.vars[v]); }
  // Merges node k's operands' static dims into `s`; false on a conflict.
  bool merge_dims(int k, Shape& s) const;
  bool reaches(const std::vector<int>& from, const std::vector<char>& in_g, int bound, bool forward);
  void reorder();
  int operands(const std::vector<int>& mem, const std::vector<char>& in_g, int* scalar_nodes) const;
  void grow(int root, int gid);
  void build(int gid);
};

bool Fuser::compatible(int a, int b) const {
  const Shape &x = pattern(a), &y = pattern(b);
  if (!same_broadcast_pattern(x, y)) return false;
  for (int d = 0; d < x.ndim; ++d)
    if (x.dims[d] >= 0 && y.dims[d] >= 0 && x.dims[d] != y.dims[d]) return false;
  return true;
}

bool Fuser::merge_dims(int k, Shape& s) const {
  auto merge = [&](int v) {
    const Shape& x = g.vars[v].static_shape;
    for (int d = 0; d < s.ndim; ++d) {
      if (x.dims[d] < 0 || x.dims[d] == 1) continue;
      if (s.dims[d] >= 0 && s.dims[d] != x.dims[d]) return false;
      s.dims[d] = x.dims[d];
    }
    return true;
  };
  for (int v : g.nodes[k].inputs)
    if (!merge(v)) return false;
  for (int v : g.nodes[k].outputs)
    if (!merge(v)) return false;
  return true;
}

// Whether a path from the nodes `from` (not in the group) reaches a group
// member, moving forward (to users) or backward (to producers), through
// nodes of position <= bound (forward) or >= bound (backward); a node of an
// earlier group stands for all of that group's members. A search that grows
// past kMaxSearch answers true (the caller does not fuse).
bool Fuser::reaches(const std::vector<int>& from, const std::vector<char>& in_g, int bound, bool forward) {
  ++cur_stamp;
  std::vector<int> stack;
  int visited = 0;
  auto push = [&](int k) {
    if (k < 0 || stamp[k] == cur_stamp) return;
    if (forward ? ord[k] > bound : ord[k] < bound) return;
    stamp[k] = cur_stamp;
    stack.push_back(k);
  };
  for (int k : from) push(k);
  while (!stack.empty()) {
    const int k = stack.back();
    stack.pop_back();
    if (in_g[k]) return true;
    if (++visited > kMaxSearch) return true;
    auto expand = [&](int m) {
      const NodeSpec& nd = g.nodes[m];
      if (forward) {
        for (int v : nd.outputs)
          for (int u : users[v]) push(u);
      } else {
        for (int v : nd.inputs) push(e.producer(v));
      }
    };
    if (group[k] >= 0) {
      for (int m : members[group[k]]) {
        stamp[m] = cur_stamp;
        expand(m);
      }
    } else {
      expand(k);
    }
  }
  return false;
}

// Kahn's algorithm on the graph where each group is one node: new positions.
void Fuser::reorder() {
  std::vector<int> pending(n, 0);
  auto unit = [&](int k) { return group[k] >= 0 ? members[group[k]][0] : k; };
  for (int k = 0; k < n; ++k) {
    if (e.removed(k)) continue;
    for (int v : g.nodes[k].inputs) {
      const int p = e.producer(v);
      if (p >= 0 && unit(p) != unit(k)) ++pending[unit(k)];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int k = 0; k < n; ++k)
    if (!e.removed(k) && unit(k) == k && pending[k] == 0) ready.push(k);
  int next = 0;
  while (!ready.empty()) {
    const int u = ready.top();
    ready.pop();
    const int pos = next++;
    auto release = [&](int m) {
      ord[m] = pos;
      for (int v : g.nodes[m].outputs)
        for (int w : users[v])
          if (unit(w) != u && --pending[unit(w)] == 0) ready.push(unit(w));
    };
    if (group[u] >= 0) {
      for (int m : members[group[u]]) release(m);
    } else {
      release(u);
    }
  }
}

// Inputs + outputs of the group `mem` would have; its scalar node count.
int Fuser::operands(const std::vector<int>& mem, const std::vector<char>& in_g, int* scalar_nodes) const {
  std::set<int> ins;
  int outs = 0, sn = 0;
  for (int k : mem) {
    const NodeSpec& nd = g.nodes[k];
    sn += static_cast<int>(comp[k].nodes.size());
    for (int v : nd.inputs) {
      const int p = e.producer(v);
      if ((p < 0 || !in_g[p]) && !inline_constant(v)) ins.insert(v);
    }
    for (int v : nd.outputs) {
      bool ext = e.is_graph_output(v);
      for (int u : users[v]) ext = ext || !in_g[u];
      outs += ext;
    }
  }
  *scalar_nodes = sn;
  return static_cast<int>(ins.size()) + outs;
}

void Fuser::grow(int root, int gid) {
  std::vector<int> mem = {root};
  known = pattern(root);
  for (int d = 0; d < known.ndim; ++d) known.dims[d] = -1;
  if (!merge_dims(root, known)) return;
  std::vector<char> in_g(n, 0);
  in_g[root] = 1;
  int lo = ord[root], hi = ord[root];
  // Candidates by position, latest first; a node is tried once.
  std::priority_queue<std::pair<int, int>> work;
  std::vector<char> tried(n, 0);
  tried[root] = 1;
  auto offer_neighbours = [&](int k) {
    for (int v : g.nodes[k].inputs) {
      const int p = e.producer(v);
      if (p >= 0 && !tried[p] && cand[p] && group[p] < 0 && compatible(p, root)) {
        tried[p] = 1;
        work.emplace(ord[p], p);
      }
    }
    for (int v : g.nodes[k].outputs)
      for (int u : users[v])
        if (!tried[u] && cand[u] && group[u] < 0 && compatible(u, root)) {
          tried[u] = 1;
          work.emplace(ord[u], u);
        }
  };
  offer_neighbours(root);
  while (!work.empty()) {
    const int k = work.top().second;
    work.pop();
    Shape dims = known;
    if (!merge_dims(k, dims)) continue;
    // No path from k to the group outside it, nor from the group to k.
    std::vector<int> out_users, in_producers;
    for (int v : g.nodes[k].outputs)
      for (int u : users[v])
        if (!in_g[u]) out_users.push_back(u);
    for (int v : g.nodes[k].inputs) {
      const int p = e.producer(v);
      if (p >= 0 && !in_g[p]) in_producers.push_back(p);
    }
    if (reaches(out_users, in_g, std::max(hi, ord[k]), true)) continue;
    if (reaches(in_producers, in_g, std::min(lo, ord[k]), false)) continue;
    in_g[k] = 1;
    mem.push_back(k);
    int sn = 0;
    if (operands(mem, in_g, &sn) > kMaxOperands || sn > kMaxScalarNodes) {
      in_g[k] = 0;
      mem.pop_back();
      continue;
    }
    known = dims;
    lo = std::min(lo, ord[k]);
    hi = std::max(hi, ord[k]);
    offer_neighbours(k);
  }
  if (mem.size() < 2) return;
  std::sort(mem.begin(), mem.end());  // original order: topological
  for (int k : mem) group[k] = gid;
  members.push_back(std::move(mem));
  // Positions stay valid if every user outside the group comes after its last member.
  const int top = hi;
  bool valid = true;
  for (int k : members[gid]) {
    for (int v : g.nodes[k].outputs)
      for (int u : users[v])
        valid = valid && (group[u] == gid || ord[u] > top);
  }
  if (valid) {
    for (int k : members[gid]) ord[k] = top;
  } else {
    reorder();
  }
}

void Fuser::build(int gid) {
  const std::vector<int>& mem = members[gid];
  std::vector<char> in_g(n, 0);
  for (int k : mem) in_g[k] = 1;
  interp::Composite c;
  std::vector<int> ext_in, ext_out, inlined;
  std::map<int, int32_t> val;  // variable -> fused value
  for (int k : mem)
    for (int v : g.nodes[k].inputs) {
      const int p = e.producer(v);
      if ((p >= 0 && in_g[p]) || val.count(v)) continue;
      if (inline_constant(v)) {
        val[v] = -1;  // numbered below, after the inputs
        inlined.push_back(v);
        continue;
      }
      val[v] = static_cast<int32_t>(ext_in.size());
      ext_in.push_back(v);
      c.inputs.push_back(g.vars[v].dtype);
    }
  if (ext_in.empty()) return;  // constants only (fold is off): an Elemwise needs an operand
  // One-element constants become the Composite's own constants (in its first places).
  for (int v : inlined) {
    const Tensor t = e.constant(v);
    interp::ScalarConst k;
    k.dtype = t.dtype;
    dtype_dispatch(t.dtype, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) k.f = static_cast<double>(t.at<T>(0));
      else k.i = static_cast<int64_t>(t.at<T>(0));
    });
    val[v] = static_cast<int32_t>(ext_in.size() + c.constants.size());
    c.constants.push_back(k);
  }
  for (int k : mem) c.constants.insert(c.constants.end(), comp[k].constants.begin(), comp[k].constants.end());
  const int32_t first_node = c.first_node_value();
  int32_t const_base = static_cast<int32_t>(ext_in.size() + inlined.size());
  for (int k : mem) {
    const NodeSpec& nd = g.nodes[k];
    const interp::Composite& cc = comp[k];
    const int32_t ni = static_cast<int32_t>(cc.inputs.size()), nc = static_cast<int32_t>(cc.constants.size());
    const int32_t node_base = first_node + static_cast<int32_t>(c.nodes.size());
    auto map = [&](int32_t v) -> int32_t {
      if (v < ni && !val.count(nd.inputs[v])) {
        fprintf(stderr, "DBG member %d input var %d producer %d in_g %d; members:", k, nd.inputs[v], e.producer(nd.inputs[v]), e.producer(nd.inputs[v]) >= 0 ? in_g[e.producer(nd.inputs[v])] : -1);
        for (int q : mem) fprintf(stderr, " %d", q);
        fprintf(stderr, "\n");
      }
      if (v < ni) return val.at(nd.inputs[v]);
      if (v < ni + nc) return const_base + (v - ni);
      return node_base + (v - ni - nc);
    };
    for (const interp::ScalarNode& s : cc.nodes) {
      interp::ScalarNode m{s.op, s.dtype, {}};
      for (int32_t a : s.inputs) m.inputs.push_back(map(a));
      c.nodes.push_back(std::move(m));
    }
    for (size_t o = 0; o < nd.outputs.size(); ++o) val[nd.outputs[o]] = map(cc.outputs[o]);
    const_base += nc;
  }
  for (int k : mem)
    for (int v : g.nodes[k].outputs) {
      bool ext = e.is_graph_output(v);
      for (int u : users[v]) ext = ext || !in_g[u];
      if (!ext) continue;
      ext_out.push_back(v);
      c.outputs.push_back(val.at(v));
    }
  if (ext_out.empty() || !c.validate().empty()) return;  // nothing used, or a bug: keep the nodes
  NodeSpec fused;
  fused.op = "Elemwise";
  fused.inputs = ext_in;
  fused.outputs = ext_out;
  fused.attrs = json{{"scalar_op", composite_to_json(c)}};
  for (int k : mem) e.remove(k);
  e.add_node(std::move(fused), mem.back());
}

int Fuser::run() {
  users = e.users();
  cand.assign(n, 0);
  comp.resize(n);
  group.assign(n, -1);
  stamp.assign(n, 0);
  ord.resize(n);
  for (int k = 0; k < n; ++k) ord[k] = k;
  for (int k = 0; k < n; ++k) {
    const NodeSpec& nd = g.nodes[k];
    if (e.removed(k) || nd.op != "Elemwise" || nd.outputs.empty() || nd.inputs.empty()) continue;
    auto so = nd.attrs.find("scalar_op");
    if (so == nd.attrs.end() || !so->is_object() || so->value("op", json()) == "ScalarLoop") continue;
    const int nd0 = g.vars[nd.outputs[0]].static_shape.ndim;
    std::vector<DType> ins, outs;
    bool ok = true;
    for (int v : nd.inputs) {
      ok = ok && g.vars[v].static_shape.ndim == nd0;
      ins.push_back(g.vars[v].dtype);
    }
    for (int v : nd.outputs) {
      ok = ok && same_broadcast_pattern(g.vars[v].static_shape, g.vars[nd.outputs[0]].static_shape);
      outs.push_back(g.vars[v].dtype);
    }
    if (!ok) continue;
    try {
      NodeContext ctx(g, k);
      comp[k] = read_composite(ctx, *so, ins, outs);
    } catch (const std::exception&) {
      continue;  // the loader reports it
    }
    cand[k] = 1;
  }
  for (int k = n - 1; k >= 0; --k)
    if (cand[k] && group[k] < 0) grow(k, static_cast<int>(members.size()));
  int fused = 0;
  for (size_t gid = 0; gid < members.size(); ++gid) {
    build(static_cast<int>(gid));
    fused += static_cast<int>(members[gid].size()) - 1;
  }
  if (!members.empty()) e.commit();
  return fused;
}

}  // namespace

int fuse_elementwise(Editor& e) { return Fuser(e).run(); }

}  // namespace ember::passes
