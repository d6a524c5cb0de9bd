// Element-wise fusion for any shape: connected Elemwise nodes whose outputs
// have the same broadcast pattern become one Elemwise over one Composite,
// as PyTensor's FusionOptimizer does. The Composite holds every member's
// scalar nodes in the members' order, each with its own dtype, so it
// computes the same bits; a member value another node (or the graph's
// outputs) reads is an extra Composite output. Under PyTensor's
// broadcasting rule every member then has the fused node's run-time shape.
//
// Groups grow greedily from the last unfused node backwards, nodes of more
// than one element first (its producers,
// its consumers and the other readers of its operands), up to kMaxOperands
// inputs + outputs and kMaxScalarNodes scalar nodes. A node joins only if no
// path leaves the group and comes back, counting groups already formed as
// single nodes: the graph of fused nodes stays acyclic. One refused for such
// a path is tried again after others join (the path may run through them). The check keeps a
// topological order of that graph (a formed group is one unit of it) and
// marks the growing group's ancestors and descendants lazily, only as far
// as the positions of the candidates tried, so each node is looked at a
// few times per group that comes near it.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "engine/program/lazy_branches.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

using nlohmann::json;

constexpr int kMaxOperands = 32;
constexpr int kMaxScalarNodes = 1024;

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
  explicit Fuser(Editor& ed) : e(ed), g(ed.g), n(ed.num_nodes()) {}
  int run();

 private:
  Editor& e;
  Graph& g;
  const int n;
  Users users;
  std::vector<char> cand;                 // per node: a fusable Elemwise
  std::vector<int> branch;                // per node: lazy IfElse context (empty: no IfElse)
  std::vector<interp::Composite> comp;    // per candidate node
  std::vector<int> group;                 // per node: formed group id, -1
  std::vector<std::vector<int>> members;  // per formed group
  // A topological order of the graph in which each formed group is one
  // unit: ord per node (a group's members share theirs), unit_at per position.
  std::vector<int> ord, unit_at;

  // The group being grown (marks compare against `cur`).
  int cur = 0;
  std::vector<int> in_g;                  // per node: member of the growing group
  std::vector<int> tried;                 // per node: offered to it once
  std::vector<int> anc, desc;             // per node: known ancestor / descendant of the group
  using MaxHeap = std::priority_queue<std::pair<int, int>>;
  using MinHeap = std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>>;
  MaxHeap back;  // ancestors found, not yet expanded
  MinHeap fwd;   // descendants found, not yet expanded
  int back_to = 0, fwd_to = 0;  // expanded: all ancestors above, all descendants below
  std::vector<int> in_ref, ext_users;  // per variable: member reads from outside; reads by non-members
  std::vector<int> touched;            // variables whose in_ref / ext_users are set
  int n_in = 0, n_out = 0, n_scalar = 0;
  Shape known;  // the group's static dims (-1 unknown)
  static constexpr int32_t kUnset = INT32_MIN;
  std::vector<int32_t> val;  // build(): per variable, its value in the fused Composite

  const Shape& pattern(int k) const { return g.vars[g.nodes[k].outputs[0]].static_shape; }
  bool compatible(int a, int b) const;
  // A one-element constant: a Composite constant rather than an operand.
  bool inline_constant(int v) const { return e.is_constant(v) && one_element(g.vars[v]); }
  // Merges node k's operands' static dims into `s`; false on a conflict.
  bool merge_dims(int k, Shape& s) const;
  bool member(int k) const { return k >= 0 && in_g[k] == cur; }
  // The nodes of k's unit: k, or every member of k's group.
  template <class F> void each_of_unit(int k, F&& f) const {
    if (group[k] >= 0) {
      for (int m : members[group[k]]) f(m);
    } else {
      f(k);
    }
  }
  void mark_back(int k);
  void mark_fwd(int k);
  void expand_back(int above);
  void expand_fwd(int below);
  void operand_delta(int k, int* din, int* dout) const;
  void add(int k);
  void grow(int root, int gid);
  void contract(int gid);
  bool build(int gid);
};

bool Fuser::compatible(int a, int b) const {
  if (!branch.empty() && branch[a] != branch[b]) return false;  // a fused node would need both branches
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

// The group's ancestors and descendants are found lazily, in position
// order: every ancestor above `back_to` and every descendant below `fwd_to`
// is marked. A candidate at position p needs only those above / below p
// (its users come after it, its producers before).
void Fuser::mark_back(int k) {
  if (k < 0 || anc[k] == cur) return;
  each_of_unit(k, [&](int m) { anc[m] = cur; });
  back.emplace(ord[k], k);
}

void Fuser::mark_fwd(int k) {
  if (desc[k] == cur) return;
  each_of_unit(k, [&](int m) { desc[m] = cur; });
  fwd.emplace(ord[k], k);
}

void Fuser::expand_back(int above) {
  back_to = std::min(back_to, above);
  while (!back.empty() && back.top().first > back_to) {
    const int k = back.top().second;
    back.pop();
    each_of_unit(k, [&](int m) {
      for (int v : g.nodes[m].inputs) mark_back(e.producer(v));
    });
  }
}

void Fuser::expand_fwd(int below) {
  fwd_to = std::max(fwd_to, below);
  while (!fwd.empty() && fwd.top().first < fwd_to) {
    const int k = fwd.top().second;
    fwd.pop();
    each_of_unit(k, [&](int m) {
      for (int v : g.nodes[m].outputs)
        for (int u : users.of(v)) mark_fwd(u);
    });
  }
}

// The change in the group's inputs and outputs if k joins it (one-element
// constants are not operands).
void Fuser::operand_delta(int k, int* din, int* dout) const {
  const NodeSpec& nd = g.nodes[k];
  int di = 0, dn = 0;
  for (size_t i = 0; i < nd.inputs.size(); ++i) {
    const int v = nd.inputs[i];
    bool first = true;
    for (size_t j = 0; j < i; ++j) first = first && nd.inputs[j] != v;
    if (!first) continue;
    if (member(e.producer(v))) {
      // A group output only k read from outside becomes internal.
      int reads = 0;
      for (int w : nd.inputs) reads += w == v;
      if (!e.is_graph_output(v) && ext_users[v] == reads) --dn;
    } else if (!inline_constant(v) && in_ref[v] == 0) {
      ++di;
    }
  }
  for (int v : nd.outputs) {
    if (in_ref[v] > 0) --di;  // read by members: internal now
    bool ext = e.is_graph_output(v);
    for (int u : users.of(v)) ext = ext || (!member(u) && u != k);
    dn += ext;
  }
  *din = di;
  *dout = dn;
}

void Fuser::add(int k) {
  const NodeSpec& nd = g.nodes[k];
  int di = 0, dn = 0;
  operand_delta(k, &di, &dn);
  n_in += di;
  n_out += dn;
  n_scalar += static_cast<int>(comp[k].nodes.size());
  in_g[k] = cur;
  for (int v : nd.inputs) {
    if (member(e.producer(v))) --ext_users[v];
    else ++in_ref[v];
    touched.push_back(v);
  }
  for (int v : nd.outputs) {
    touched.push_back(v);
    in_ref[v] = 0;
    int ext = 0;
    for (int u : users.of(v)) ext += !member(u);
    ext_users[v] = ext;
  }
  for (int v : nd.inputs) mark_back(e.producer(v));
  for (int v : nd.outputs)
    for (int u : users.of(v)) mark_fwd(u);
  expand_back(back_to);
  expand_fwd(fwd_to);
}

void Fuser::grow(int root, int gid) {
  ++cur;
  back = MaxHeap();
  fwd = MinHeap();
  back_to = ord[root];
  fwd_to = ord[root];
  n_in = n_out = n_scalar = 0;
  known = pattern(root);
  for (int d = 0; d < known.ndim; ++d) known.dims[d] = -1;
  if (!merge_dims(root, known)) return;
  for (int v : touched) in_ref[v] = ext_users[v] = 0;
  touched.clear();
  std::vector<int> mem = {root};
  tried[root] = cur;
  add(root);
  // Candidates by position, latest first; each is tried once.
  MaxHeap work;
  auto offer_neighbours = [&](int k) {
    auto offer = [&](int c) {
      if (c < 0 || tried[c] == cur || !cand[c] || group[c] >= 0 || !compatible(c, root)) return;
      tried[c] = cur;
      work.emplace(ord[c], c);
    };
    for (int v : g.nodes[k].inputs) {
      offer(e.producer(v));
      // Siblings: other readers of the same operand (a logp term and its
      // gradient over the same data) share one loop over it. Only through
      // an operand of the full pattern, broadcast in no dim: then both
      // readers have its run-time shape (through a broadcast dim each could
      // take another size from its other operands).
      if (!inline_constant(v) && same_broadcast_pattern(g.vars[v].static_shape, pattern(k)))
        for (int u : users.of(v)) offer(u);
    }
    for (int v : g.nodes[k].outputs)
      for (int u : users.of(v)) offer(u);
  };
  offer_neighbours(root);
  // Candidates refused for a path through a non-member: tried again once
  // members have joined since (the path may run through one of them: a
  // later position's node is tried first, before the earlier one it reads).
  std::vector<int> deferred;
  size_t retried_at = 0;
  for (;;) {
    while (!work.empty()) {
      const int k = work.top().second;
      work.pop();
      Shape dims = known;
      if (!merge_dims(k, dims)) continue;
      // No path from k to the group through a non-member, nor back.
      expand_back(ord[k]);
      expand_fwd(ord[k]);
      bool cycle = false;
      for (int v : g.nodes[k].outputs)
        for (int u : users.of(v)) cycle = cycle || (!member(u) && anc[u] == cur);
      for (int v : g.nodes[k].inputs) {
        const int p = e.producer(v);
        cycle = cycle || (p >= 0 && !member(p) && desc[p] == cur);
      }
      if (cycle) {
        deferred.push_back(k);
        continue;
      }
      int di = 0, dn = 0;
      operand_delta(k, &di, &dn);
      if (n_in + di + n_out + dn > kMaxOperands ||
          n_scalar + static_cast<int>(comp[k].nodes.size()) > kMaxScalarNodes)
        continue;
      known = dims;
      add(k);
      mem.push_back(k);
      offer_neighbours(k);
    }
    if (deferred.empty() || mem.size() == retried_at) break;
    retried_at = mem.size();
    for (int k : deferred) work.emplace(ord[k], k);
    deferred.clear();
  }
  if (mem.size() < 2) return;
  std::sort(mem.begin(), mem.end());  // the graph's order: topological
  for (int k : mem) group[k] = gid;
  members.push_back(std::move(mem));
  contract(gid);
}

// Makes the new group one unit of the order: the units between its first
// and last member that depend on it move after it, the rest keep their
// places before it (none depends on it, and it depends on none of the
// moved ones: no path leaves the group and comes back).
void Fuser::contract(int gid) {
  const std::vector<int>& mem = members[gid];
  int a = ord[mem[0]], b = a;
  for (int k : mem) a = std::min(a, ord[k]), b = std::max(b, ord[k]);
  ++cur;  // marks: desc[] for the units that move
  std::vector<int> stack;
  for (int k : mem)
    for (int v : g.nodes[k].outputs)
      for (int u : users.of(v))
        if (group[u] != gid && ord[u] < b && desc[u] != cur) {
          each_of_unit(u, [&](int m) { desc[m] = cur; });
          stack.push_back(u);
        }
  while (!stack.empty()) {
    const int k = stack.back();
    stack.pop_back();
    each_of_unit(k, [&](int m) {
      for (int v : g.nodes[m].outputs)
        for (int u : users.of(v))
          if (ord[u] < b && desc[u] != cur) {
            each_of_unit(u, [&](int q) { desc[q] = cur; });
            stack.push_back(u);
          }
    });
  }
  std::vector<int> before, after;
  for (int p = a; p <= b; ++p) {
    const int u = unit_at[p];
    if (u < 0 || group[u] == gid) continue;
    (desc[u] == cur ? after : before).push_back(u);
  }
  int p = a;
  auto place = [&](int u) {
    each_of_unit(u, [&](int m) { ord[m] = p; });
    unit_at[p++] = u;
  };
  for (int u : before) place(u);
  place(mem[0]);
  for (int u : after) place(u);
  for (; p <= b; ++p) unit_at[p] = -1;
}

bool Fuser::build(int gid) {
  const std::vector<int>& mem = members[gid];
  // Nodes fused by earlier build() calls have indices from n on.
  auto inside = [&](int k) { return k >= 0 && k < n && group[k] == gid; };
  interp::Composite c;
  std::vector<int> ext_in, ext_out, inlined;
  // val[v]: the fused value of variable v (kUnset: none yet); reset on return.
  std::vector<int> seen;
  struct Reset {
    std::vector<int32_t>& val;
    std::vector<int>& seen;
    ~Reset() {
      for (int v : seen) val[v] = kUnset;
    }
  } reset{val, seen};
  auto has = [&](int v) { return val[v] != kUnset; };
  auto set = [&](int v, int32_t x) {
    if (!has(v)) seen.push_back(v);
    val[v] = x;
  };
  for (int k : mem)
    for (int v : g.nodes[k].inputs) {
      const int p = e.producer(v);
      if (inside(p) || has(v)) continue;
      if (inline_constant(v)) {
        set(v, -1);  // numbered below, after the inputs
        inlined.push_back(v);
        continue;
      }
      set(v, static_cast<int32_t>(ext_in.size()));
      ext_in.push_back(v);
      c.inputs.push_back(g.vars[v].dtype);
    }
  if (ext_in.empty()) return false;  // constants only (fold is off): an Elemwise needs an operand
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
    set(v, static_cast<int32_t>(ext_in.size() + c.constants.size()));
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
      if (v < ni) return val[nd.inputs[v]];
      if (v < ni + nc) return const_base + (v - ni);
      return node_base + (v - ni - nc);
    };
    for (const interp::ScalarNode& s : cc.nodes) {
      interp::ScalarNode m{s.op, s.dtype, {}};
      for (int32_t a : s.inputs) m.inputs.push_back(map(a));
      c.nodes.push_back(std::move(m));
    }
    for (size_t o = 0; o < nd.outputs.size(); ++o) set(nd.outputs[o], map(cc.outputs[o]));
    const_base += nc;
  }
  for (int k : mem)
    for (int v : g.nodes[k].outputs) {
      bool ext = e.is_graph_output(v);
      for (int u : users.of(v)) ext = ext || !inside(u);
      if (!ext) continue;
      ext_out.push_back(v);
      c.outputs.push_back(val[v]);
    }
  if (ext_out.empty() || !c.validate().empty()) return false;  // nothing used, or a bug: keep the nodes
  NodeSpec fused;
  fused.op = "Elemwise";
  fused.inputs = ext_in;
  fused.outputs = ext_out;
  fused.attrs = json{{"scalar_op", composite_to_json(c)}};
  for (int k : mem) e.remove(k);
  e.add_node(std::move(fused), mem.back());
  return true;
}

int Fuser::run() {
  users = e.users();
  std::vector<BranchNode> bn(n);
  for (int k = 0; k < n; ++k)
    if (!e.removed(k)) bn[k] = {&g.nodes[k].inputs, &g.nodes[k].outputs, is_op(g.nodes[k], TensorOp::IfElse)};
  branch = branch_contexts(bn, g.vars.size(), g.outputs).ctx;
  cand.assign(n, 0);
  comp.resize(n);
  group.assign(n, -1);
  in_g.assign(n, 0);
  tried.assign(n, 0);
  anc.assign(n, 0);
  desc.assign(n, 0);
  in_ref.assign(g.vars.size(), 0);
  ext_users.assign(g.vars.size(), 0);
  val.assign(g.vars.size(), kUnset);
  ord.resize(n);
  unit_at.resize(n);
  for (int k = 0; k < n; ++k) ord[k] = unit_at[k] = k;
  for (int k = 0; k < n; ++k) {
    const NodeSpec& nd = g.nodes[k];
    if (e.removed(k) || !is_op(nd, TensorOp::Elemwise) || nd.outputs.empty() || nd.inputs.empty()) continue;
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
      NodeContext ctx(g, k, TensorOp::Elemwise);
      comp[k] = read_composite(ctx, *so, ins, outs);
    } catch (const std::exception&) {
      continue;  // the loader reports it
    }
    cand[k] = 1;
  }
  // Array work first, then one-element work: a scalar group grown first
  // from the cost's end takes in conditions and coefficients that array
  // groups read, and its reads of array sums then order those array groups
  // apart (a logp's loop and its gradient's could not fuse).
  for (const bool scalar : {false, true})
    for (int k = n - 1; k >= 0; --k)
      if (cand[k] && group[k] < 0 && one_element(g.vars[g.nodes[k].outputs[0]]) == scalar)
        grow(k, static_cast<int>(members.size()));
  int fused = 0;
  for (size_t gid = 0; gid < members.size(); ++gid)
    if (build(static_cast<int>(gid))) fused += static_cast<int>(members[gid].size()) - 1;
  if (fused) e.commit();
  return fused;
}

}  // namespace

int fuse_elementwise(Editor& e) { return Fuser(e).run(); }

}  // namespace ember::passes
