// A switch on a constant mask computes the branch its few true entries take
// only at those entries: switch(m, A, B) with m a constant boolean vector of
// the output's length, true in at most a third of it (or false, for B), and
// a costly op among A's element-wise producers, becomes
// switch(m, zeros[idx] = A[idx], B), idx = nonzero(m). The gather then sinks
// into the element-wise node it reads, node by node, while every reader of
// that node gathers the same idx: A's graph runs on the masked entries only.
// A censored likelihood's survival function and its parameter derivatives
// run for the censored observations, not for all of them. Every selected
// element is the same scalar op on the same operands: the bits stay.
#include <map>
#include <set>
#include <vector>

#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

class Masker {
 public:
  explicit Masker(Editor& e) : e(e) {}
  int run();

 private:
  Editor& e;
  std::map<std::pair<int, bool>, int> idx_of_;  // (mask, polarity) -> its positions
  std::set<int> idx_vars_;
  int rewrites_ = 0;

  const VarSpec& var(int v) const { return e.g.vars[v]; }
  bool full(int v, int64_t n) const {
    const Shape& s = var(v).static_shape;
    return s.ndim == 1 && s.dims[0] == n;
  }
  // Whether an element-wise node of v's cone (full-length nodes, a few deep,
  // each looked at once) is costly.
  bool costly_cone(int v, int64_t n, int depth, std::set<int>& seen) const {
    const int p = e.producer(v);
    if (p < 0 || depth == 0 || !full(v, n) || !seen.insert(p).second) return false;
    const NodeSpec& node = e.g.nodes[p];
    if (!is_op(node, TensorOp::Elemwise)) return false;
    if (costly_elemwise(node)) return true;
    for (int u : node.inputs)
      if (costly_cone(e.resolve(u), n, depth - 1, seen)) return true;
    return false;
  }
  int positions(int mask, bool polarity, const Tensor& m);
  bool mask_switch(int k);
  int sink_round();
};

int Masker::positions(int mask, bool polarity, const Tensor& m) {
  auto [it, fresh] = idx_of_.try_emplace({mask, polarity}, -1);
  if (!fresh) return it->second;
  it->second = mask_positions(e, m, polarity);
  idx_vars_.insert(it->second);
  return it->second;
}

bool Masker::mask_switch(int k) {
  const NodeSpec& node = e.node(k);
  if (elemwise_scalar_op(node) != "Switch" || node.inputs.size() != 3 || node.outputs.size() != 1) return false;
  const int c = node.inputs[0], out = node.outputs[0];
  const Shape os = var(out).static_shape;
  if (os.ndim != 1 || os.dims[0] < 0 || !e.is_constant(c) || var(c).dtype != DType::Bool || !full(c, os.dims[0]))
    return false;
  const int64_t n = os.dims[0];
  const Tensor m = e.constant(c);
  int64_t t = 0;
  for (int64_t i = 0; i < n; ++i) t += m.at<bool>(i);
  // The branch the minority takes: A where m is true, B where it is false.
  const bool polarity = t * 3 <= n;
  const int64_t few = polarity ? t : n - t;
  if (few == 0 || few * 3 > n) return false;
  const int branch = polarity ? 1 : 2, a = node.inputs[branch];
  const DType dt = var(a).dtype;
  if (dt != DType::Float64 || dt != var(out).dtype || !full(a, n)) return false;
  std::set<int> seen;
  if (!costly_cone(a, n, 8, seen)) return false;
  const int idx = positions(c, polarity, m);
  const Shape fs = line_of(few);
  const int zeros = e.add_constant(dt, os, Array::of<double>(os, std::vector<double>(static_cast<size_t>(n), 0.0)));
  const int picked = e.add_op("AdvancedSubtensor1", {a, idx}, nlohmann::json::object(), dt, fs, k);
  const int scat = e.add_op("AdvancedIncSubtensor1", {zeros, picked, idx}, nlohmann::json{{"set_instead_of_inc", true}},
                            dt, os, k);
  e.g.nodes[k].inputs[branch] = scat;  // add_op may have moved the node
  return true;
}

// x[idx] -> f(u[idx], ...) for x = f(u, ...) element-wise when every reader of
// x gathers idx; returns the number of nodes sunk into.
int Masker::sink_round() {
  const Users users = e.users();
  std::set<int> dirty;  // variables given new readers this round: their users are stale
  int sunk = 0;
  const int n0 = e.num_nodes();
  for (int k = 0; k < n0; ++k) {
    if (e.removed(k)) continue;
    const NodeSpec& take = e.node(k);
    if (!is_op(take, TensorOp::AdvancedSubtensor1) || take.inputs.size() != 2 || !idx_vars_.count(take.inputs[1]))
      continue;
    const int x = take.inputs[0], idx = take.inputs[1];
    const int p = e.producer(x);
    if (p < 0 || e.removed(p) || e.is_graph_output(x) || dirty.count(x)) continue;
    const NodeSpec f = e.node(p);  // a copy: add_op below may move it
    if (!is_op(f, TensorOp::Elemwise) || f.outputs.size() != 1) continue;
    const int64_t n = var(x).static_shape.ndim == 1 ? var(x).static_shape.dims[0] : -1;
    if (n < 0) continue;
    bool ok = true;
    for (int r : users.of(x)) {
      const NodeSpec& u = e.g.nodes[r];
      if (e.removed(r)) continue;
      ok = ok && is_op(u, TensorOp::AdvancedSubtensor1) && u.inputs.size() == 2 && e.resolve(u.inputs[0]) == x &&
           e.resolve(u.inputs[1]) == idx;
    }
    for (int u : f.inputs) ok = ok && (one_element(var(u)) || full(u, n));
    if (!ok) continue;
    const int64_t few = var(idx).static_shape.dims[0];
    const Shape fs = line_of(few);
    NodeSpec g = f;
    for (int& u : g.inputs) {
      if (one_element(var(u))) continue;
      dirty.insert(u);
      u = e.add_op("AdvancedSubtensor1", {u, idx}, nlohmann::json::object(), var(u).dtype, fs, p);
    }
    g.outputs = {e.add_var(var(x).dtype, fs)};
    const int gout = g.outputs[0];
    e.add_node(std::move(g), p);
    for (int r : users.of(x)) {
      if (e.removed(r)) continue;
      e.replace(e.g.nodes[r].outputs[0], gout);
      e.remove(r);
    }
    e.remove(p);  // every reader of x now reads gout
    ++sunk;
  }
  if (sunk) e.commit();
  return sunk;
}

int Masker::run() {
  const int n0 = e.num_nodes();
  for (int k = 0; k < n0; ++k)
    if (!e.removed(k) && mask_switch(k)) ++rewrites_;
  if (!rewrites_) return 0;
  e.commit();
  for (int round = 0; round < 64 && sink_round() > 0; ++round) {}
  return rewrites_;
}

}  // namespace

int mask_branches(Editor& e) { return Masker(e).run(); }

}  // namespace ember::passes
