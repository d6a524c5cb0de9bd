// The additive half of PyTensor's canonicalize (local_add_canonizer): a sum
// of terms through Add, Sub and Neg loses the terms that cancel and its
// scalar constants fold into one. PyMC's binomial coefficients make
// gammaln((y + a - 1) - y + 1); canonical, that is gammaln(a), a parameter's
// work, and its gradient's psi(a) too. Not bit-exact (x + y - y is not x in
// floating point), so on graphs being differentiated only.
#include <algorithm>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

struct Term {
  int var;
  bool negative;
};

struct Sum {
  std::vector<Term> terms;
  double constant = 0;
  int constants = 0;  // scalar constants met
  std::vector<int> shapers;  // fills looked through: fill(x, t) is t shaped by x
};

// The one scalar value of a one-element constant.
bool scalar_value(const passes::Editor& e, int v, double& x) {
  if (!e.is_constant(v) || !passes::one_element(e.g.vars[v])) return false;
  const Tensor t = e.constant(v);
  dtype_dispatch(t.dtype, [&](auto z) { x = static_cast<double>(t.at<decltype(z)>(0)); });
  return true;
}

class Collector {
 public:
  Collector(passes::Editor& e, DType dt) : e(e), dt(dt) {}

  // Terms of v with sign `negative`; `root` looks through v's own node.
  void collect(int v, bool negative, bool root, Sum& s) {
    double c;
    if (scalar_value(e, v, c)) {
      s.constant += negative ? -c : c;
      ++s.constants;
      return;
    }
    const int p = e.producer(v);
    // Through shared terms too, as PyTensor does: n = y + a - 1 read by
    // gammaln(n + 1) and gammaln(n - y + 1). A budget bounds the expansion
    // of a deep shared chain.
    const std::string op = p >= 0 && (root || ++looked <= kMaxLooks) ? passes::elemwise_scalar_op(e.node(p)) : "";
    if (op == "Second" && e.g.vars[v].dtype == dt) {
      s.shapers.push_back(e.node(p).inputs[0]);
      return collect(e.node(p).inputs[1], negative, false, s);
    }
    if (e.g.vars[v].dtype != dt || (op != "Add" && op != "Sub" && op != "Neg") || e.node(p).outputs.size() != 1) {
      s.terms.push_back({v, negative});
      return;
    }
    const std::vector<int> ins = e.node(p).inputs;
    if (op == "Neg") return collect(ins[0], !negative, false, s);
    for (size_t i = 0; i < ins.size(); ++i) collect(ins[i], negative != (op == "Sub" && i == 1), false, s);
  }

 private:
  static constexpr int kMaxLooks = 32;
  passes::Editor& e;
  DType dt;
  int looked = 0;
};

}  // namespace

int cancel_terms(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    const std::string op = passes::elemwise_scalar_op(node);
    if ((op != "Add" && op != "Sub") || node.outputs.size() != 1) return -1;
    const int out = node.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    if (dt != DType::Float64 && dt != DType::Float32) return -1;
    Sum s;
    Collector(e, dt).collect(out, false, true, s);
    // Each negative term cancels the first positive one on the same variable.
    std::vector<char> gone(s.terms.size(), 0);
    std::vector<int> cancelled;
    for (size_t i = 0; i < s.terms.size(); ++i) {
      if (gone[i]) continue;
      for (size_t j = 0; j < s.terms.size(); ++j) {
        if (j == i || gone[j] || s.terms[j].var != s.terms[i].var || s.terms[j].negative == s.terms[i].negative)
          continue;
        gone[i] = gone[j] = 1;
        cancelled.push_back(s.terms[i].var);
        break;
      }
    }
    if (cancelled.empty() && s.constants < 2) return -1;
    const Shape want = e.g.vars[out].static_shape;
    std::vector<int> pos, neg;
    for (size_t i = 0; i < s.terms.size(); ++i)
      if (!gone[i]) (s.terms[i].negative ? neg : pos).push_back(s.terms[i].var);
    if (s.constant != 0 || (pos.empty() && neg.empty())) pos.push_back(b.constant(s.constant, dt, want.ndim));
    auto add = [&](const std::vector<int>& t) { return t.size() == 1 ? b.cast(t[0], dt) : b.elem("Add", t, dt); };
    int r = pos.empty() ? -1 : add(pos);
    if (!neg.empty()) {
      const int n = add(neg);
      r = r < 0 ? b.elem("Neg", {n}, dt) : b.elem("Sub", {r, n}, dt);
    }
    // The cancelled terms and the fills' shapes still shape the result
    // (PyTensor's fill).
    cancelled.insert(cancelled.end(), s.shapers.begin(), s.shapers.end());
    for (int x : cancelled) {
      if (passes::same_broadcast_pattern(e.g.vars[r].static_shape, want)) break;
      r = b.elem("Second", {x, r}, dt);
    }
    return passes::same_broadcast_pattern(e.g.vars[r].static_shape, want) ? r : -1;
  });
}

}  // namespace ember::grad
