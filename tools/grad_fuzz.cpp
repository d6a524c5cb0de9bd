#include "tools/grad_fuzz.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <sstream>

#include "engine/program/grad/adjoints.hpp"
#include "interp/vm.hpp"

namespace ember::fuzz {

using interp::Composite;
using interp::OpKind;
using interp::ScalarConst;
using interp::ScalarNode;
using interp::ScalarOp;
using nlohmann::json;

namespace {

bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
int irange(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
double uniform(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

int arity_of(ScalarOp op) { return interp::op_info(op).arity; }
// The derivative column picks the ops and their constant operands.
bool undefined(ScalarOp op, int k) { return grad::derivative_rule(op, k) == "undefined"; }

// Float ops, Switch, and ops whose undefined operands can be constants
// (PolyGamma's order); not Mod (no rule).
std::vector<ScalarOp> grad_ops() {
  std::vector<ScalarOp> ops;
  for (const auto& info : interp::kScalarOps) {
    const OpKind k = info.kind;
    if (k != OpKind::Same && k != OpKind::Float && k != OpKind::Switch) continue;
    const int a = info.arity < 0 ? 1 : info.arity;
    bool any_defined = false;
    for (int i = 0; i < a; ++i) any_defined = any_defined || !undefined(info.op, i);
    if (any_defined) ops.push_back(info.op);
  }
  return ops;
}

// A constant for an operand without a rule: in the op's domain.
double const_for(Rng& rng, ScalarOp op) {
  if (op == ScalarOp::PolyGamma) return irange(rng, 0, 3);
  const double xs[] = {0.5, 1.5, 2.0, 3.5};
  return xs[irange(rng, 0, 3)];
}

ScalarConst f64(double x) {
  ScalarConst c;
  c.f = x;
  return c;
}

std::pair<double, std::vector<double>> call(const Program& p, const std::vector<double>& x) {
  Array a = Array::of<double>(Shape{1, {static_cast<int64_t>(x.size())}}, x);
  std::vector<Tensor> t{a.t};
  const std::vector<Array> out = p.call(std::span<const Tensor>(t.data(), t.size()));
  std::vector<double> g(out.at(1).size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = out[1].t.at<double>(static_cast<int64_t>(i));
  return {out[0].t.at<double>(0), g};
}

}  // namespace

void GradResult::add(const GradResult& r) {
  if (ok && !r.ok) message = r.message;
  ok = ok && r.ok;
  checked += r.checked;
  nonfinite += r.nonfinite;
  not_smooth += r.not_smooth;
  excused += r.excused;
}

GradCase random_grad_case(Rng& rng, const CompositeGenOptions& go) {
  static const std::vector<ScalarOp> kOps = grad_ops();
  GradCase gc;
  Composite& c = gc.c;
  const int nin = irange(rng, 1, go.max_inputs);
  c.inputs.assign(nin, DType::Float64);
  std::vector<ScalarOp> plan(irange(rng, 1, go.max_nodes));
  for (ScalarOp& op : plan) op = kOps[irange(rng, 0, static_cast<int>(kOps.size()) - 1)];
  const double nice[] = {0.5, 2.0, -1.0, 1.5, 3.0, 0.25, -2.5, 1.0};
  const int ncst = irange(rng, 0, go.max_constants);
  for (int k = 0; k < ncst; ++k) c.constants.push_back(f64(nice[irange(rng, 0, 7)]));
  // The operands without a rule: constants, numbered before every node.
  std::vector<std::vector<int32_t>> fixed(plan.size());
  for (size_t p = 0; p < plan.size(); ++p) {
    const int a = arity_of(plan[p]);
    for (int k = 0; k < a; ++k) {
      fixed[p].push_back(-1);
      if (a > 0 && undefined(plan[p], k)) {
        c.constants.push_back(f64(const_for(rng, plan[p])));
        fixed[p].back() = nin + static_cast<int32_t>(c.constants.size()) - 1;
      }
    }
  }
  auto pick = [&] {  // a float64 value, recent ones preferred
    const int32_t nv = c.num_values();
    for (;;) {
      const int32_t v = chance(rng, 0.5) ? nv - 1 - irange(rng, 0, std::min<int32_t>(3, nv - 1)) : irange(rng, 0, nv - 1);
      if (c.value_dtype(v) == DType::Float64) return v;
    }
  };
  for (size_t p = 0; p < plan.size(); ++p) {
    const ScalarOp op = plan[p];
    ScalarNode n{op, DType::Float64, {}};
    if (op == ScalarOp::Switch) {
      const ScalarOp cmp = std::array{ScalarOp::LT, ScalarOp::GT, ScalarOp::LE, ScalarOp::GE}[irange(rng, 0, 3)];
      const int32_t a = pick(), b = pick();
      c.nodes.push_back(ScalarNode{cmp, DType::Bool, {a, b}});
      n.inputs = {c.num_values() - 1, pick(), pick()};
    } else {
      const int a = arity_of(op) < 0 ? irange(rng, 1, 3) : arity_of(op);
      for (int k = 0; k < a; ++k) n.inputs.push_back(arity_of(op) > 0 && fixed[p][k] >= 0 ? fixed[p][k] : pick());
      // max(x, x) gives both operands the gradient (as PyTensor's rule): not a
      // derivative, so the operands differ.
      if ((op == ScalarOp::Maximum || op == ScalarOp::Minimum) && n.inputs[0] == n.inputs[1]) {
        for (int t = 0; t < 8 && n.inputs[0] == n.inputs[1]; ++t) n.inputs[1] = pick();
        if (n.inputs[0] == n.inputs[1]) n.op = ScalarOp::Add;
      }
    }
    c.nodes.push_back(std::move(n));
  }
  c.outputs.push_back(c.num_values() - 1);
  const int nout = irange(rng, 1, go.max_outputs);
  for (int k = 1; k < nout; ++k) {
    int32_t v;
    do v = chance(rng, 0.85) ? irange(rng, c.first_node_value(), c.num_values() - 1) : irange(rng, 0, nin - 1);
    while (c.value_dtype(v) != DType::Float64);
    c.outputs.push_back(v);
  }
  bool wide = false;
  for (int k = 0; k < nin; ++k) {
    gc.sizes.push_back(chance(rng, 0.3) ? 1 : 3);
    wide = wide || gc.sizes.back() > 1;
  }
  gc.n = wide ? 3 : 1;
  for (size_t j = 0; j < c.outputs.size() * gc.n; ++j)
    gc.weights.push_back((chance(rng, 0.5) ? -1 : 1) * uniform(rng, 0.5, 1.5));
  return gc;
}

json grad_graph(const GradCase& gc) {
  json vars = json::array(), inputs = json::array(), constants = json::array(), nodes = json::array(),
       wrt = json::array();
  auto var = [&](json shape) {
    vars.push_back({{"dtype", "float64"}, {"shape", shape}});
    return static_cast<int>(vars.size()) - 1;
  };
  std::vector<int> ins, outs;
  for (size_t k = 0; k < gc.sizes.size(); ++k) {
    ins.push_back(var({gc.sizes[k]}));
    inputs.push_back({{"var", ins.back()}});
    wrt.push_back({{"input", k}, {"shape", {gc.sizes[k]}}});
  }
  for (size_t j = 0; j < gc.c.outputs.size(); ++j) outs.push_back(var({gc.n}));
  nodes.push_back({{"op", "Elemwise"}, {"inputs", ins}, {"outputs", outs},
                   {"attrs", {{"scalar_op", composite_json(gc.c)}}}});
  std::vector<int> sums;
  for (size_t j = 0; j < outs.size(); ++j) {
    const int w = var({gc.n}), m = var({gc.n}), s = var(json::array());
    constants.push_back({{"var", w}, {"data", std::vector<double>(gc.weights.begin() + j * gc.n,
                                                                  gc.weights.begin() + (j + 1) * gc.n)}});
    nodes.push_back({{"op", "Elemwise"}, {"inputs", {outs[j], w}}, {"outputs", {m}},
                     {"attrs", {{"scalar_op", {{"op", "Mul"}}}}}});
    nodes.push_back({{"op", "Sum"}, {"inputs", {m}}, {"outputs", {s}}, {"attrs", {{"axis", nullptr}}}});
    sums.push_back(s);
  }
  int cost = sums[0];
  if (sums.size() > 1) {
    cost = var(json::array());
    nodes.push_back({{"op", "Elemwise"}, {"inputs", sums}, {"outputs", {cost}},
                     {"attrs", {{"scalar_op", {{"op", "Add"}}}}}});
  }
  return {{"format", "ember-graph"}, {"version", 1}, {"variables", vars}, {"inputs", inputs},
          {"outputs", {cost}}, {"constants", constants}, {"nodes", nodes}, {"gradient", {{"wrt", wrt}}}};
}

namespace {

// Every float64 node value of gc's Composite at x (n per value, value-major).
std::vector<double> values_at(const GradCase& gc, const std::vector<double>& x) {
  Composite all = gc.c;
  all.outputs.clear();
  for (int32_t v = all.first_node_value(); v < all.num_values(); ++v)
    if (all.value_dtype(v) == DType::Float64) all.outputs.push_back(v);
  std::vector<double> vals(static_cast<size_t>(all.num_values() * gc.n), 0.0);
  std::vector<interp::StridedPtr> in, out;
  int64_t at = 0;
  for (size_t k = 0; k < gc.sizes.size(); ++k) {
    in.push_back({const_cast<double*>(x.data() + at), gc.sizes[k] == 1 ? 0 : 1});
    for (int64_t i = 0; i < gc.n; ++i) vals[k * gc.n + i] = x[at + (gc.sizes[k] == 1 ? 0 : i)];
    at += gc.sizes[k];
  }
  for (size_t j = 0; j < all.constants.size(); ++j)
    for (int64_t i = 0; i < gc.n; ++i) vals[(gc.sizes.size() + j) * gc.n + i] = all.constants[j].f;
  for (int32_t v : all.outputs) out.push_back({vals.data() + v * gc.n, 1});
  if (!out.empty()) interp::Interpreted::compile(all)->run(gc.n, in.data(), out.data());
  return vals;
}

// Where the op's rule is infinite but its value finite.
bool singular(ScalarOp op, const double* x) {
  switch (op) {
    case ScalarOp::ArcSin:
    case ScalarOp::ArcCos: return std::fabs(x[0]) == 1;
    case ScalarOp::ArcCosh: return x[0] == 1;
    case ScalarOp::Sqrt:
    case ScalarOp::XlogX: return x[0] == 0;
    case ScalarOp::XlogY0: return x[1] == 0;
    case ScalarOp::Pow: return x[0] == 0;
    default: return false;
  }
}

bool rounding(ScalarOp op) {
  return op == ScalarOp::Floor || op == ScalarOp::Ceil || op == ScalarOp::Trunc || op == ScalarOp::RoundHalfToEven ||
         op == ScalarOp::RoundHalfAwayFromZero || op == ScalarOp::IntDiv || op == ScalarOp::Sign;
}

}  // namespace

Excuse excuse_at(const GradCase& gc, const std::vector<double>& x, size_t i, double h) {
  const std::vector<double> v0 = values_at(gc, x);
  std::vector<double> a = x, b = x;
  a[i] += h;
  b[i] -= h;
  const std::vector<double> va = values_at(gc, a), vb = values_at(gc, b);
  const int64_t n = gc.n;
  const int32_t first = gc.c.first_node_value();
  Excuse e;
  for (int32_t v = first; v < gc.c.num_values(); ++v) {
    const ScalarNode& s = gc.c.nodes[v - first];
    for (int64_t k = 0; k < n; ++k) {
      const size_t at = static_cast<size_t>(v * n + k);
      if (s.dtype == DType::Float64 && !std::isfinite(v0[at])) e.nonfinite_inside = true;
      if ((s.op == ScalarOp::Maximum || s.op == ScalarOp::Minimum) &&
          v0[s.inputs[0] * n + k] == v0[s.inputs[1] * n + k])
        e.tie = true;
      if (rounding(s.op) && !(v0[at] == va[at] && v0[at] == vb[at])) e.rounding_moves = true;
      double args[3] = {0, 0, 0};
      for (size_t j = 0; j < s.inputs.size() && j < 3; ++j) args[j] = v0[s.inputs[j] * n + k];
      if (singular(s.op, args)) e.singular = true;
    }
  }
  return e;
}

GradResult check_gradient_at(const Program& p, const std::vector<double>& x, const ExcuseFn& why) {
  GradResult r;
  const auto [f0, g] = call(p, x);
  if (g.size() != x.size()) {
    r.ok = false;
    r.message = "gradient has " + std::to_string(g.size()) + " entries, point " + std::to_string(x.size());
    return r;
  }
  if (!std::isfinite(f0)) {
    r.nonfinite += static_cast<int>(x.size());
    return r;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    // Steps of 2^-8, 2^-9, 2^-10 times x's binade; the steps taken are the
    // differences of the points actually evaluated.
    const double h = std::ldexp(1.0, std::ilogb(std::max(1.0, std::fabs(x[i]))) - 8);
    double fp[3], fm[3], hp[3], hm[3], F = std::fabs(f0);
    bool finite = true;
    for (int k = 0; k < 3; ++k) {
      std::vector<double> a = x, b = x;
      a[i] = x[i] + std::ldexp(h, -k);
      b[i] = x[i] - std::ldexp(h, -k);
      hp[k] = a[i] - x[i];
      hm[k] = x[i] - b[i];
      fp[k] = call(p, a).first;
      fm[k] = call(p, b).first;
      finite = finite && std::isfinite(fp[k]) && std::isfinite(fm[k]);
      F = std::max({F, std::fabs(fp[k]), std::fabs(fm[k])});
    }
    if (!finite) {
      ++r.nonfinite;
      continue;
    }
    double D[3];
    for (int k = 0; k < 3; ++k) D[k] = (fp[k] - fm[k]) / (hp[k] + hm[k]);
    const double R1 = (4 * D[1] - D[0]) / 3, R2 = (4 * D[2] - D[1]) / 3;
    const double noise = 8 * DBL_EPSILON * F / hp[2];  // the cost's rounding, through the smallest step
    // A kink: one-sided slopes that differ by as much at h/4 as at h/2.
    const double gap4 = std::fabs((fp[2] - f0) / hp[2] - (f0 - fm[2]) / hm[2]);
    const double gap2 = std::fabs((fp[1] - f0) / hp[1] - (f0 - fm[1]) / hm[1]);
    const double trunc = std::fabs(R1 - R2);
    // A staircase finer than h looks smooth at h, h/2 and h/4: a much
    // smaller step sees its flat treads or one riser.
    std::vector<double> a = x, b = x;
    a[i] = x[i] + std::ldexp(h, -18);
    b[i] = x[i] - std::ldexp(h, -18);
    const double fa = call(p, a).first, fb = call(p, b).first;
    const double Df = (fa - fb) / ((a[i] - x[i]) + (x[i] - b[i]));
    const double fine_noise = 8 * DBL_EPSILON * std::max({F, std::fabs(fa), std::fabs(fb)}) / (a[i] - x[i]);
    if ((gap4 > 50 * noise + 1e-8 * std::fabs(R2) && gap4 > 0.75 * gap2) || trunc > 1e-4 * std::fabs(R2) + 50 * noise ||
        !(std::fabs(Df - R2) <= 1e-3 * std::fabs(R2) + 10 * fine_noise + 10 * trunc)) {
      ++r.not_smooth;
      continue;
    }
    const double tol = 1e-6 * std::max(std::fabs(g[i]), std::fabs(R2)) + 1e-12 * (1 + F) + 10 * trunc + 20 * noise;
    if (!(std::fabs(g[i] - R2) <= tol)) {
      const bool flat = D[0] == 0 && D[1] == 0 && D[2] == 0 && !std::isfinite(g[i]);
      const Excuse e = why ? why(x, i, h) : Excuse{};
      if (flat || e.tie || e.rounding_moves || ((e.nonfinite_inside || e.singular) && !std::isfinite(g[i]))) {
        ++r.excused;
        continue;
      }
      if (r.ok) {
        std::ostringstream m;
        m.precision(17);
        m << "gradient entry " << i << " at x = " << x[i] << ": engine " << g[i] << ", differences " << R2
          << " (steps " << D[0] << " " << D[1] << " " << D[2] << ", tolerance " << tol << ")";
        r.message = m.str();
      }
      r.ok = false;
    }
    ++r.checked;
  }
  return r;
}

GradResult run_grad_case(const GradCase& gc, Rng& rng, int points) {
  GradResult r;
  std::shared_ptr<const Program> p;
  try {
    p = Program::from_json(grad_graph(gc).dump());
  } catch (const LoadError& e) {
    r.ok = false;
    r.message = std::string("load: ") + e.what();
    return r;
  }
  int64_t len = 0;
  for (int64_t s : gc.sizes) len += s;
  for (int k = 0; k < points; ++k) {
    std::vector<double> x(static_cast<size_t>(len));
    for (double& v : x) v = chance(rng, 0.6) ? uniform(rng, -3, 3) : uniform(rng, 0.05, 4);
    GradResult one = check_gradient_at(*p, x, [&](const std::vector<double>& y, size_t i, double h) {
      return excuse_at(gc, y, i, h);
    });
    if (!one.ok) {
      std::ostringstream m;
      m.precision(17);
      m << one.message << "; point";
      for (double v : x) m << " " << v;
      one.message = m.str();
    }
    r.add(one);
  }
  return r;
}

}  // namespace ember::fuzz
