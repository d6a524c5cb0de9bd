// PyTensor's algebraic canonicalizer (AlgebraicCanonizer), its two halves:
// a tree of Add, Sub and Neg, or of Mul, TrueDiv and Neg, is flattened into
// the terms added and subtracted (factors multiplied and divided); a term on
// both sides cancels, and the scalar constants (and, for products, the signs)
// fold into one.
//
//   cancel_terms: gammaln((y + a - 1) - y + 1) -> gammaln(a), the binomial
//     coefficient of PyMC's NegativeBinomial: parameter work once its fill
//     sinks, and its gradient's psi(a) too.
//   fold_factors: -0.5 * x * 2 / s -> -(x / s), the power rule's and the
//     chain rule's leftovers in every Normal's gradient.
//
// Not bit-exact (x + y - y is not x in floating point; constants multiply
// first), so on graphs being differentiated only.
#include <cmath>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

struct Flat {
  std::vector<int> plus, minus;  // terms added / subtracted; factors multiplied / divided
  double constant = 0;
  int constants = 0, negs = 0;  // scalar constants and (for products) negations met
  std::vector<int> shapers;     // fills looked through: fill(x, t) is t shaped by x
};

// The one value of a one-element constant.
bool scalar_value(const passes::Editor& e, int v, double& x) {
  if (!e.is_constant(v) || !passes::one_element(e.g.vars[v])) return false;
  const Tensor t = e.constant(v);
  dtype_dispatch(t.dtype, [&](auto z) { x = static_cast<double>(t.at<decltype(z)>(0)); });
  return true;
}

class Flattener {
 public:
  Flattener(passes::Editor& e, DType dt, bool additive)
      : e(e), dt(dt), additive(additive), main(additive ? "Add" : "Mul"), inverse(additive ? "Sub" : "TrueDiv") {}

  Flat run(int v) {
    Flat f;
    f.constant = additive ? 0 : 1;
    collect(v, false, true, f);
    return f;
  }

 private:
  // v's terms, `inverted` (subtracted, or divided by); `root` looks through
  // v's own node whatever the budget.
  void collect(int v, bool inverted, bool root, Flat& f) {
    double c;
    if (scalar_value(e, v, c)) {
      if (additive) f.constant += inverted ? -c : c;
      else f.constant = inverted ? f.constant / c : f.constant * c;
      ++f.constants;
      return;
    }
    const int p = e.producer(v);
    // Through shared terms too, as PyTensor does: n = y + a - 1 read by
    // gammaln(n + 1) and gammaln(n - y + 1). A budget bounds the expansion
    // of a deep shared chain.
    const std::string op = p >= 0 && (root || ++looked <= kMaxLooks) ? passes::elemwise_scalar_op(e.node(p)) : "";
    const bool ours = op == main || op == inverse || op == "Neg" || op == "Second";
    if (!ours || e.g.vars[v].dtype != dt || e.node(p).outputs.size() != 1) {
      (inverted ? f.minus : f.plus).push_back(v);
      return;
    }
    const std::vector<int> ins = e.node(p).inputs;
    if (op == "Second") {
      f.shapers.push_back(ins[0]);
      return collect(ins[1], inverted, false, f);
    }
    if (op == "Neg") {
      if (additive) return collect(ins[0], !inverted, false, f);
      ++f.negs;
      f.constant = -f.constant;
      return collect(ins[0], inverted, false, f);
    }
    for (size_t i = 0; i < ins.size(); ++i) collect(ins[i], inverted != (op == inverse && i == 1), false, f);
  }

  static constexpr int kMaxLooks = 32;
  passes::Editor& e;
  DType dt;
  bool additive;
  const char *main, *inverse;
  int looked = 0;
};

// Each subtracted (divided) term cancels the first added (multiplied) one on
// the same variable; the variables cancelled.
std::vector<int> cancel(Flat& f) {
  std::vector<int> cancelled;
  for (int& m : f.minus) {
    for (int& p : f.plus) {
      if (p < 0 || p != m) continue;
      cancelled.push_back(p);
      p = m = -1;
      break;
    }
  }
  std::erase(f.plus, -1);
  std::erase(f.minus, -1);
  return cancelled;
}

// r, given want's broadcast pattern by fills of the shapers (PyTensor's
// fill: the cancelled terms still shape the result); -1 when they cannot.
int shaped(Builder& b, int r, const Shape& want, const std::vector<int>& shapers, DType dt) {
  for (int x : shapers) {
    if (passes::same_broadcast_pattern(b.e.g.vars[r].static_shape, want)) break;
    r = b.elem("Second", {x, r}, dt);
  }
  return passes::same_broadcast_pattern(b.e.g.vars[r].static_shape, want) ? r : -1;
}

// The rewrite of one node of the group, or -1.
template <class Build>
int canonize(passes::Editor& e, Builder& b, const NodeSpec& node, bool additive, Build&& build) {
  const std::string op = passes::elemwise_scalar_op(node);
  const bool ours = additive ? op == "Add" || op == "Sub" : op == "Mul" || op == "TrueDiv" || op == "Neg";
  if (!ours || node.outputs.size() != 1) return -1;
  const int out = node.outputs[0];
  const DType dt = e.g.vars[out].dtype;
  if (dt != DType::Float64 && dt != DType::Float32) return -1;
  Flat f = Flattener(e, dt, additive).run(out);
  std::vector<int> shapers = cancel(f);
  const Shape want = e.g.vars[out].static_shape;
  auto combine = [&](const std::vector<int>& t, const char* s) { return t.size() == 1 ? b.cast(t[0], dt) : b.elem(s, t, dt); };
  const int r = build(f, !shapers.empty(), want, dt, combine);
  if (r < 0) return -1;
  shapers.insert(shapers.end(), f.shapers.begin(), f.shapers.end());
  return shaped(b, r, want, shapers, dt);
}

}  // namespace

int cancel_terms(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    return canonize(e, b, node, true, [&](Flat& f, bool cancelled, const Shape& want, DType dt, auto combine) {
      if (!cancelled && f.constants < 2) return -1;
      if (f.constant != 0 || (f.plus.empty() && f.minus.empty())) f.plus.push_back(b.constant(f.constant, dt, want.ndim));
      int r = f.plus.empty() ? -1 : combine(f.plus, "Add");
      if (!f.minus.empty()) {
        const int n = combine(f.minus, "Add");
        r = r < 0 ? b.elem("Neg", {n}, dt) : b.elem("Sub", {r, n}, dt);
      }
      return r;
    });
  });
}

int fold_factors(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    return canonize(e, b, node, false, [&](Flat& f, bool cancelled, const Shape& want, DType dt, auto combine) {
      const bool unit = f.constants && std::abs(f.constant) == 1 && !f.plus.empty();  // x * 1
      if (!cancelled && !unit && f.constants + f.negs < 2) return -1;
      // 0 * x is nan where x is inf: a zero constant stays where it is.
      if (!std::isfinite(f.constant) || f.constant == 0) return -1;
      const double mag = std::abs(f.constant);
      if (mag != 1 || f.plus.empty()) f.plus.insert(f.plus.begin(), b.constant(mag, dt, want.ndim));
      int r = combine(f.plus, "Mul");
      if (!f.minus.empty()) r = b.elem("TrueDiv", {r, combine(f.minus, "Mul")}, dt);
      if (f.constant < 0) r = b.elem("Neg", {r}, dt);
      return r;
    });
  });
}

}  // namespace ember::grad
