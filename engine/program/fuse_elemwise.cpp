#include "engine/program/fuse_elemwise.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "engine/ops/elemwise.hpp"
#include "engine/program/lazy_branches.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/config.hpp"

namespace ember {

bool fusion_enabled() { return config().fuse != "0"; }

namespace {

bool one_element(const VarSpec& v) {
  for (int d = 0; d < v.static_shape.ndim; ++d)
    if (v.static_shape.dims[d] != 1) return false;
  return true;
}

// Pair: All/Any of a MakeVector of one-element bools (PyTensor's check that
// every parameter is in its domain): an And/Or chain; the MakeVector (Deferred)
// runs with it.
// Pack: a Join (axis 0) or MakeVector of one-element values (a Join's output
// (n,) or (n, 1, ..., 1)); its Composite
// outputs write the elements of one tensor.
enum class Kind { None, Elemwise, Reshape1, Pick, Pair, Deferred, Pack };

// A Subtensor with literal indices that selects one element of an input of
// fully known static shape: the element's coordinates, else empty.
std::optional<std::vector<int64_t>> pick_coords(const ProgramImpl& p, const Step& st) {
  if (st.op != TensorOp::Subtensor || st.in.size() != 1 || st.out.size() != 1) return std::nullopt;
  const VarSpec& x = p.graph.vars[st.in[0]];
  if (x.static_shape.ndim == 0 || x.dtype != p.graph.vars[st.out[0]].dtype) return std::nullopt;
  if (passes::static_size(x.static_shape) < 0) return std::nullopt;
  const auto& attrs = p.graph.nodes[st.node].attrs;
  if (!attrs.contains("idx_list")) return std::nullopt;
  Shape out;
  const auto sel = passes::literal_selection(attrs["idx_list"], x.static_shape, out);
  if (!sel || sel->size() != 1) return std::nullopt;
  std::vector<int64_t> coord(x.static_shape.ndim);
  passes::unflat_index(x.static_shape, (*sel)[0], coord.data());
  return coord;
}

Kind kind_of(const ProgramImpl& p, const Step& st) {
  auto all_one = [&] {
    for (int v : st.in) if (!one_element(p.graph.vars[v])) return false;
    for (int v : st.out) if (!one_element(p.graph.vars[v])) return false;
    return true;
  };
  if (auto* ew = dynamic_cast<const ElemwiseKernel*>(st.kernel); ew && all_one()) return Kind::Elemwise;
  if (st.op == TensorOp::Subtensor && st.out.size() == 1 && one_element(p.graph.vars[st.out[0]]) && pick_coords(p, st))
    return Kind::Pick;
  // A DimShuffle of one element to one element moves no data: the same value.
  if (st.op == TensorOp::DimShuffle && st.in.size() == 1 && st.out.size() == 1 && all_one() &&
      p.graph.vars[st.in[0]].dtype == p.graph.vars[st.out[0]].dtype)
    return Kind::Reshape1;
  if ((st.op == TensorOp::Join || st.op == TensorOp::MakeVector) && st.out.size() == 1 && st.in.size() >= 2) {
    const VarSpec& o = p.graph.vars[st.out[0]];
    const bool join = st.op == TensorOp::Join;
    // (n,) or, for a Join, (n, 1, ..., 1): the same n contiguous elements.
    if (o.static_shape.ndim < 1 || (!join && o.static_shape.ndim != 1) ||
        o.static_shape.dims[0] != static_cast<int64_t>(st.in.size()))
      return Kind::None;
    for (int d = 1; d < o.static_shape.ndim; ++d)
      if (o.static_shape.dims[d] != 1) return Kind::None;
    if (join) {
      const auto& attrs = p.graph.nodes[st.node].attrs;
      if (!attrs.contains("axis") || !attrs["axis"].is_number_integer()) return Kind::None;
      const int64_t axis = attrs["axis"].get<int64_t>();
      if (axis != 0 && axis != -1) return Kind::None;
    }
    for (int v : st.in) {
      const VarSpec& x = p.graph.vars[v];
      if (x.dtype != o.dtype || !one_element(x) || x.static_shape.ndim != (join ? o.static_shape.ndim : 0))
        return Kind::None;
    }
    return Kind::Pack;
  }
  return Kind::None;
}

// Reorders the schedule so that every fusion candidate runs as early as its
// inputs allow: a list schedule that takes the first ready candidate, else
// the first ready step, in the old order. PyTensor's order puts a model's
// one-element steps next to the vector steps that read them (per group of
// observations, say), and each such interleaving would close a group and
// start a new fused node. The other steps keep their relative order (the
// first of them not yet placed is always ready); values do not change.
bool hoist_candidates(ProgramImpl& p, std::vector<Kind>& kind, const std::vector<int>& producer) {
  const int n = static_cast<int>(p.steps.size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> next(n);
  for (int s = 0; s < n; ++s) {
    std::vector<int> from;
    for (int v : p.steps[s].in)
      if (const int q = producer[v]; q >= 0) from.push_back(q);
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    waiting[s] = static_cast<int>(from.size());
    for (int q : from) next[q].push_back(s);
  }
  auto candidate = [&](int s) { return kind[s] != Kind::None; };
  // Min-heaps of ready steps by old index.
  std::vector<int> ready_c, ready_o;
  auto push = [&](int s) {
    auto& h = candidate(s) ? ready_c : ready_o;
    h.push_back(s);
    std::push_heap(h.begin(), h.end(), std::greater<>());
  };
  for (int s = 0; s < n; ++s)
    if (waiting[s] == 0) push(s);
  std::vector<int> order;
  order.reserve(n);
  while (!ready_c.empty() || !ready_o.empty()) {
    auto& h = !ready_c.empty() ? ready_c : ready_o;
    std::pop_heap(h.begin(), h.end(), std::greater<>());
    const int s = h.back();
    h.pop_back();
    order.push_back(s);
    for (int u : next[s])
      if (--waiting[u] == 0) push(u);
  }
  if (static_cast<int>(order.size()) != n) return false;  // not a DAG: cannot happen for a loaded graph
  bool moved = false;
  for (int k = 0; k < n; ++k) moved = moved || order[k] != k;
  if (!moved) return false;
  std::vector<Step> steps;
  std::vector<std::unique_ptr<OpKernel>> kernels;
  std::vector<Kind> kinds;
  for (int s : order) {
    steps.push_back(std::move(p.steps[s]));
    kernels.push_back(std::move(p.kernels[s]));
    kinds.push_back(kind[s]);
  }
  p.steps = std::move(steps);
  p.kernels = std::move(kernels);
  kind = std::move(kinds);
  return true;
}

struct Group {
  int pos = 0;               // the fused node runs just before this step
  std::vector<int> members;  // step indices, in schedule order
  int elemwise = 0;
};

}  // namespace

int fuse_elemwise(ProgramImpl& p) {
  if (!p.options.fuse_elemwise) return 0;
  const Graph& g = p.graph;
  const int nsteps = static_cast<int>(p.steps.size());
  std::vector<Kind> kind(nsteps);
  for (int s = 0; s < nsteps; ++s) kind[s] = kind_of(p, p.steps[s]);
  std::vector<int> producer(g.vars.size(), -1);  // step index, -1: input or constant
  std::vector<std::vector<int>> users(g.vars.size());
  auto index = [&] {  // producer and users of each variable, by step index
    for (auto& u : users) u.clear();
    for (int s = 0; s < nsteps; ++s) {
      for (int v : p.steps[s].out) producer[v] = s;
      for (int v : p.steps[s].in) users[v].push_back(s);
    }
  };
  index();
  std::vector<char> is_output(g.vars.size(), 0);
  for (int v : g.outputs) is_output[v] = 1;
  for (int s = 0; s < nsteps; ++s) {
    const Step& st = p.steps[s];
    if ((st.op != TensorOp::All && st.op != TensorOp::Any) || st.in.size() != 1 || st.out.size() != 1) continue;
    const int w = st.in[0], m = producer[w];
    const VarSpec& o = g.vars[st.out[0]];
    if (m < 0 || p.steps[m].op != TensorOp::MakeVector || p.steps[m].in.empty() || is_output[w] ||
        users[w].size() != 1 || o.static_shape.ndim != 0 || o.dtype != DType::Bool ||
        g.vars[w].static_shape.ndim != 1)
      continue;
    bool ok = true;
    for (int v : p.steps[m].in) ok = ok && g.vars[v].dtype == DType::Bool && one_element(g.vars[v]);
    if (!ok) continue;
    kind[s] = Kind::Pair;
    kind[m] = Kind::Deferred;
  }
  if (hoist_candidates(p, kind, producer)) index();

  // Greedy, one open group at a time. The fused node runs before step `lo`:
  // after every producer of its inputs (steps, or earlier fused nodes), and
  // no later than `hi`, the first step outside the candidates that reads one
  // of its values. A candidate joins while lo <= hi still holds, else a new
  // group starts. Candidates that read the group's values run after `lo`
  // anyway (lo never passes a member), and scalar ops raise no run-time
  // errors whose order could show.
  std::vector<int> group_of(nsteps, -1);
  std::vector<int> pos(nsteps);  // where each step's outputs are made (fused: the node's position)
  for (int s = 0; s < nsteps; ++s) pos[s] = s;
  std::vector<std::vector<int>> fused_before(nsteps);  // step -> fused nodes (index in fused_steps)
  std::vector<Step> fused_steps;
  std::vector<std::unique_ptr<OpKernel>> fused_kernels;
  std::vector<char> drop(nsteps, 0);

  // Steps of different lazy IfElse contexts stay apart (lazy_branches.hpp).
  std::vector<BranchNode> bn(nsteps);
  for (int s = 0; s < nsteps; ++s) bn[s] = {&p.steps[s].in, &p.steps[s].out, p.steps[s].op == TensorOp::IfElse};
  const std::vector<int> bctx = branch_contexts(bn, g.vars.size(), g.outputs).ctx;  // empty: no IfElse
  auto ctx_of = [&](int s) { return bctx.empty() ? -1 : bctx[s]; };
  int gctx = -1;

  Group G;
  int gi = -1, hi = nsteps;
  auto in_group = [&](int s) { return s >= 0 && group_of[s] == gi; };
  std::vector<int32_t> val(g.vars.size(), -1);  // var -> fused value; reset after each group
  std::vector<int> touched;
  auto build = [&](const Group& G, Step& fused, std::unique_ptr<ElemwiseKernel>& kernel) -> bool {
    interp::Composite c;
    std::vector<int> ext_in, ext_out;
    std::vector<FusedInput> ext_kind;
    std::map<std::pair<int, std::vector<int64_t>>, int32_t> picked;
    std::map<int, std::vector<int32_t>> packed;  // Pack output var -> its elements' values
    std::vector<std::pair<int32_t, int32_t>> dst;  // per Composite output: node output, element
    auto add_input = [&](int v, FusedInput fi) {
      ext_in.push_back(v);
      ext_kind.push_back(std::move(fi));
      c.inputs.push_back(g.vars[v].dtype);
      return static_cast<int32_t>(ext_in.size()) - 1;
    };
    for (int s : G.members) {
      const Step& st = p.steps[s];
      if (kind[s] == Kind::Pick) {
        if (in_group(producer[st.in[0]])) continue;  // one element made here: an alias (below)
        std::vector<int64_t> coord = *pick_coords(p, st);
        auto key = std::make_pair(st.in[0], coord);
        auto it = picked.find(key);
        if (it == picked.end()) it = picked.emplace(key, add_input(st.in[0], FusedInput{true, coord})).first;
        val[st.out[0]] = it->second;
        touched.push_back(st.out[0]);
        continue;
      }
      for (int v : st.in)
        if (!in_group(producer[v]) && val[v] < 0) {
          val[v] = add_input(v, FusedInput{});
          touched.push_back(v);
        }
    }
    for (int s : G.members)
      if (kind[s] == Kind::Elemwise) {
        const auto& cc = static_cast<const ElemwiseKernel*>(p.steps[s].kernel)->composite();
        c.constants.insert(c.constants.end(), cc.constants.begin(), cc.constants.end());
      }
    const int32_t first_node = c.first_node_value();
    int32_t const_base = static_cast<int32_t>(ext_in.size());
    for (int s : G.members) {
      const Step& st = p.steps[s];
      if (kind[s] == Kind::Pick) {
        const int x = st.in[0];
        if (!in_group(producer[x])) continue;
        auto it = packed.find(x);
        val[st.out[0]] = it == packed.end() ? val[x] : it->second[(*pick_coords(p, st))[0]];
        touched.push_back(st.out[0]);
        continue;
      }
      if (kind[s] == Kind::Pack) {
        std::vector<int32_t>& elems = packed[st.out[0]];
        for (int v : st.in) elems.push_back(val[v]);
        continue;
      }
      if (kind[s] == Kind::Deferred) continue;  // its Pair reads its inputs
      if (kind[s] == Kind::Pair) {
        const Step& mv = p.steps[producer[st.in[0]]];
        int32_t acc = val[mv.in[0]];
        const auto op = st.op == TensorOp::All ? interp::ScalarOp::And : interp::ScalarOp::Or;
        for (size_t k = 1; k < mv.in.size(); ++k) {
          c.nodes.push_back(interp::ScalarNode{op, DType::Bool, {acc, val[mv.in[k]]}});
          acc = first_node + static_cast<int32_t>(c.nodes.size()) - 1;
        }
        val[st.out[0]] = acc;
        touched.push_back(st.out[0]);
        continue;
      }
      if (kind[s] == Kind::Reshape1) {
        val[st.out[0]] = val[st.in[0]];
        touched.push_back(st.out[0]);
        continue;
      }
      const auto& cc = static_cast<const ElemwiseKernel*>(st.kernel)->composite();
      const int32_t ni = static_cast<int32_t>(cc.inputs.size()), nc = static_cast<int32_t>(cc.constants.size());
      const int32_t node_base = first_node + static_cast<int32_t>(c.nodes.size());
      auto map = [&](int32_t v) -> int32_t {
        if (v < ni) return val[st.in[v]];
        if (v < ni + nc) return const_base + (v - ni);
        return node_base + (v - ni - nc);
      };
      for (const interp::ScalarNode& n : cc.nodes) {
        interp::ScalarNode m{n.op, n.dtype, {}};
        for (int32_t a : n.inputs) m.inputs.push_back(map(a));
        c.nodes.push_back(std::move(m));
      }
      for (size_t k = 0; k < st.out.size(); ++k) {
        val[st.out[k]] = map(cc.outputs[k]);
        touched.push_back(st.out[k]);
      }
      const_base += nc;
    }
    for (int s : G.members)
      for (int v : p.steps[s].out) {
        bool external = is_output[v];
        for (int u : users[v]) external = external || !in_group(u);
        if (!external) continue;
        const int32_t o = static_cast<int32_t>(ext_out.size());
        ext_out.push_back(v);
        if (auto it = packed.find(v); it != packed.end()) {
          for (size_t e = 0; e < it->second.size(); ++e) {
            c.outputs.push_back(it->second[e]);
            dst.emplace_back(o, static_cast<int32_t>(e));
          }
        } else {
          c.outputs.push_back(val[v]);
          dst.emplace_back(o, 0);
        }
      }
    for (int v : touched) val[v] = -1;
    if (ext_out.empty() || c.nodes.empty()) return false;  // nothing used or computed: leave the nodes
    if (!c.validate().empty()) return false;  // cannot happen for validated members; stay unfused
    std::shared_ptr<const interp::Interpreted> vm;
    try {
      // The bytecode has each math function's independent calls together
      // (one library call in JIT code); the kernel keeps c as built.
      interp::Composite grouped = c;
      interp::group_math_calls(grouped);
      vm = interp::Interpreted::compile(grouped);
    } catch (const std::exception&) {
      return false;
    }
    std::vector<Shape> shapes;
    for (int v : ext_out) shapes.push_back(g.vars[v].static_shape);
    auto k = std::make_unique<ElemwiseKernel>(std::move(c), std::move(vm), 0, p.options.parallel_threshold);
    if (packed.empty()) dst.clear();  // one Composite output per node output
    k->set_fused(std::move(shapes), std::move(ext_kind), std::move(dst));
    k->attach_tier();

    fused.node = p.steps[G.members[0]].node;
    fused.shown = p.steps[G.members[0]].shown;
    fused.op = TensorOp::Elemwise;
    fused.name = "Elemwise (fused: " + std::to_string(G.members.size()) + " nodes from node " +
                 std::to_string(fused.shown >= 0 ? fused.shown : fused.node) + ")";
    fused.kernel = k.get();
    fused.in = ext_in;
    fused.out = ext_out;
    kernel = std::move(k);
    return true;
  };

  auto close = [&]() {
    if (gi < 0 || G.members.empty() || G.elemwise == 0) return;
    Step st;
    std::unique_ptr<ElemwiseKernel> k;
    if (!build(G, st, k)) return;
    for (int s : G.members) drop[s] = 1, pos[s] = G.pos;
    fused_before[G.pos].push_back(static_cast<int>(fused_steps.size()));
    fused_steps.push_back(std::move(st));
    fused_kernels.push_back(std::move(k));
  };
  for (int s = 0; s < nsteps; ++s) {
    if (kind[s] == Kind::None || kind[s] == Kind::Deferred) continue;
    // A Pair reads its MakeVector's inputs; the MakeVector joins with it.
    const int mv = kind[s] == Kind::Pair ? producer[p.steps[s].in[0]] : -1;
    auto lo_of = [&] {
      int lo = 0;
      for (int v : p.steps[mv >= 0 ? mv : s].in)
        if (const int q = producer[v]; q >= 0 && !in_group(q)) lo = std::max(lo, pos[q] + 1);
      return lo;
    };
    int lo = lo_of();
    if (gi < 0 || std::max(lo, G.pos) > hi || ctx_of(s) != gctx) {
      close();  // may move the closed group's outputs to its position
      G = Group{0, {}, 0};
      gi = s;
      gctx = ctx_of(s);
      hi = nsteps;
      lo = lo_of();
    }
    G.pos = std::max(G.pos, lo);
    if (mv >= 0) group_of[mv] = gi, G.members.push_back(mv);
    group_of[s] = gi;
    G.members.push_back(s);
    G.elemwise += kind[s] == Kind::Elemwise || kind[s] == Kind::Pair;
    // Steps staying where they are bound the position; so do MakeVectors
    // deferred to their Pair (conservative: they stay if their Pair is not fused).
    for (int v : p.steps[s].out)
      for (int u : users[v])
        if (kind[u] == Kind::None || kind[u] == Kind::Deferred) hi = std::min(hi, u);
  }
  close();

  std::vector<Step> steps;
  std::vector<std::unique_ptr<OpKernel>> kernels;
  for (int s = 0; s < nsteps; ++s) {
    for (int f : fused_before[s]) {
      steps.push_back(std::move(fused_steps[f]));
      kernels.push_back(std::move(fused_kernels[f]));
    }
    if (drop[s]) continue;
    steps.push_back(std::move(p.steps[s]));
    kernels.push_back(std::move(p.kernels[s]));
  }
  const int removed = nsteps - static_cast<int>(steps.size());
  p.steps = std::move(steps);
  p.kernels = std::move(kernels);  // the replaced kernels are freed (and leave the tier manager) here
  return removed;
}

}  // namespace ember
