// The multiplicative half of PyTensor's canonicalize (local_mul_canonizer):
// a product of factors through Mul, TrueDiv and Neg folds its scalar
// constants and signs into one constant, and a factor divided by itself
// goes. The power rule and the chain rule leave -0.5 * 2 * x and
// -(c * x) / s in every Normal's gradient; folded, the kernel computes
// -x / s. Not bit-exact (the constants are multiplied first), so on graphs
// being differentiated only.
#include <cmath>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {

struct Product {
  std::vector<int> num, den;
  double constant = 1;  // numerator constants over denominator constants
  int constants = 0, negs = 0;
  std::vector<int> shapers;  // fills looked through
};

bool scalar_value(const passes::Editor& e, int v, double& x) {
  if (!e.is_constant(v) || !passes::one_element(e.g.vars[v])) return false;
  const Tensor t = e.constant(v);
  dtype_dispatch(t.dtype, [&](auto z) { x = static_cast<double>(t.at<decltype(z)>(0)); });
  return true;
}

class Collector {
 public:
  Collector(passes::Editor& e, DType dt) : e(e), dt(dt) {}

  void collect(int v, bool den, bool root, Product& p) {
    double c;
    if (scalar_value(e, v, c)) {
      if (den) p.constant /= c;
      else p.constant *= c;
      ++p.constants;
      return;
    }
    const int k = e.producer(v);
    const std::string op = k >= 0 && (root || ++looked <= kMaxLooks) ? passes::elemwise_scalar_op(e.node(k)) : "";
    if (op == "Second" && e.g.vars[v].dtype == dt) {
      p.shapers.push_back(e.node(k).inputs[0]);
      return collect(e.node(k).inputs[1], den, false, p);
    }
    if (e.g.vars[v].dtype != dt || (op != "Mul" && op != "TrueDiv" && op != "Neg") || e.node(k).outputs.size() != 1) {
      (den ? p.den : p.num).push_back(v);
      return;
    }
    const std::vector<int> ins = e.node(k).inputs;
    if (op == "Neg") {
      ++p.negs;
      p.constant = -p.constant;
      return collect(ins[0], den, false, p);
    }
    for (size_t i = 0; i < ins.size(); ++i) collect(ins[i], den != (op == "TrueDiv" && i == 1), false, p);
  }

 private:
  static constexpr int kMaxLooks = 32;
  passes::Editor& e;
  DType dt;
  int looked = 0;
};

}  // namespace

int fold_factors(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    const std::string op = passes::elemwise_scalar_op(node);
    if ((op != "Mul" && op != "TrueDiv" && op != "Neg") || node.outputs.size() != 1) return -1;
    const int out = node.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    if (dt != DType::Float64 && dt != DType::Float32) return -1;
    Product p;
    Collector(e, dt).collect(out, false, true, p);
    // A factor over itself goes (x / x is 1 but where x is 0, inf or nan,
    // as PyTensor's canonicalizer has it).
    std::vector<int> cancelled;
    for (int& d : p.den) {
      for (int& n : p.num) {
        if (n < 0 || n != d) continue;
        cancelled.push_back(n);
        n = d = -1;
        break;
      }
    }
    std::erase(p.num, -1);
    std::erase(p.den, -1);
    const bool unit = p.constants && std::abs(p.constant) == 1 && !p.num.empty();  // x * 1
    if (cancelled.empty() && !unit && p.constants + p.negs < 2) return -1;
    // 0 * x is nan where x is inf: a zero constant stays where it is.
    if (!std::isfinite(p.constant) || p.constant == 0) return -1;
    const Shape want = e.g.vars[out].static_shape;
    auto product = [&](const std::vector<int>& f) { return f.size() == 1 ? b.cast(f[0], dt) : b.elem("Mul", f, dt); };
    const double mag = std::abs(p.constant);
    std::vector<int> num = p.num;
    if (mag != 1 || num.empty()) num.insert(num.begin(), b.constant(mag, dt, want.ndim));
    int r = product(num);
    if (!p.den.empty()) r = b.elem("TrueDiv", {r, product(p.den)}, dt);
    if (p.constant < 0) r = b.elem("Neg", {r}, dt);
    cancelled.insert(cancelled.end(), p.shapers.begin(), p.shapers.end());
    for (int x : cancelled) {
      if (passes::same_broadcast_pattern(e.g.vars[r].static_shape, want)) break;
      r = b.elem("Second", {x, r}, dt);
    }
    return passes::same_broadcast_pattern(e.g.vars[r].static_shape, want) ? r : -1;
  });
}

}  // namespace ember::grad
