// The document's "gradient" directive (docs/graph-format.md): PyMC's logp
// graph over its value variables becomes nutpie's graph over one flat point.
//
//   1. stabilization (engine/program/passes/stabilize.cpp) and dce, fold,
//      cse and simplify on the forward graph; Subtensors of DimShuffles
//      lifted (subtensor_lift.cpp), cholesky(L @ L.T) -> L (cholesky_llt.cpp),
//      additive terms cancelled (canonize.cpp)
//   2. sums of joins split into sums of their pieces; parameter checks
//      (PyMC's CheckParameterValue, exported as CheckAndRaise
//      with "parameter_check") become switch(all(conds), logp, -inf), or go,
//      as PyMC's compile does with check_bounds true / false; stabilization
//      again; then the reverse-mode gradient of the one output with respect to the inputs
//      the directive lists
//   3. each such input is replaced by its slice of the flat point, reshaped
//      to its shape; the gradients are raveled and joined in that order
//   4. batched triangular solves of one matrix made one solve
//      (blockwise_core.cpp), fills sunk through element-wise ops (fill_sink.cpp), sums of
//      broadcasts become products (sum_broadcast.cpp), sums of outer
//      products matrix products (outer_sum.cpp), DimShuffles lifted
//      through element-wise ops (dimshuffle_lift.cpp), products' constants
//      folded (canonize.cpp), increments of zeros added to a gradient
//      made increments of it (inc_serialize.cpp), powers with constant
//      exponents become cheaper ops (specialize.cpp), and
//      stabilization again, on the gradient's forms
//   5. inputs: the point, then the other inputs; outputs: cost, gradient
#include <set>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"
#include "engine/program/grad/grad.hpp"
#include "engine/program/grad/reverse.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::grad {

namespace {

using nlohmann::json;

struct Wrt {
  int input = -1;  // position in g.inputs
  Shape shape;
};

struct Directive {
  std::vector<Wrt> wrt;
  std::string point = "_unconstrained_point";
  bool check_bounds = true;
};

Directive read_directive(const Graph& g) {
  const json& d = g.gradient;
  auto fail = [&](const std::string& field, const std::string& why) {
    throw LoadError(g.source + ": field 'gradient" + field + "': " + why);
  };
  if (!d.is_object()) fail("", "must be an object");
  Directive r;
  if (auto it = d.find("point"); it != d.end()) {
    if (!it->is_string()) fail(".point", "must be a string");
    r.point = it->get<std::string>();
  }
  if (auto it = d.find("check_bounds"); it != d.end()) {
    if (!it->is_boolean()) fail(".check_bounds", "must be true or false");
    r.check_bounds = it->get<bool>();
  }
  auto it = d.find("wrt");
  if (it == d.end() || !it->is_array()) fail(".wrt", "must be a list");
  std::set<int> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = ".wrt[" + std::to_string(i) + "]";
    const json& w = (*it)[i];
    if (!w.is_object() || !w.contains("input") || !w["input"].is_number_integer())
      fail(f, "must be {\"input\": k, \"shape\": [...]}");
    Wrt x;
    x.input = w["input"].get<int>();
    if (x.input < 0 || x.input >= static_cast<int>(g.inputs.size())) fail(f + ".input", "no such input");
    if (!seen.insert(x.input).second) fail(f + ".input", "listed twice");
    if (g.inputs[x.input].shared) fail(f + ".input", "is a shared input");
    const VarSpec& v = g.vars[g.inputs[x.input].var];
    if (v.dtype != DType::Float64 && v.dtype != DType::Float32) fail(f + ".input", "is not a float input");
    if (!w.contains("shape") || !w["shape"].is_array()) fail(f + ".shape", "must be a list of dims");
    const json& s = w["shape"];
    if (static_cast<int>(s.size()) != v.static_shape.ndim) fail(f + ".shape", "rank differs from the input's");
    x.shape.ndim = v.static_shape.ndim;
    for (int k = 0; k < x.shape.ndim; ++k) {
      if (!s[k].is_number_integer() || s[k].get<int64_t>() < 0 || s[k].get<int64_t>() > (int64_t(1) << 31))
        fail(f + ".shape", "dims must be integers in [0, 2^31]");
      x.shape.dims[k] = s[k].get<int64_t>();
      if (v.static_shape.dims[k] >= 0 && v.static_shape.dims[k] != x.shape.dims[k])
        fail(f + ".shape", "differs from the input's static shape");
    }
    r.wrt.push_back(x);
  }
  if (g.outputs.size() != 1) fail("", "needs a graph of one output (the cost)");
  const VarSpec& c = g.vars[g.outputs[0]];
  if (c.static_shape.ndim != 0 || (c.dtype != DType::Float64 && c.dtype != DType::Float32))
    fail("", "the cost must be a 0-d float");
  return r;
}

// A Sum over every axis of x, of at least one element (static), that is
// x's only reader: its node index, else -1.
int only_full_sum(passes::Editor& e, const passes::Users& u, int x) {
  const auto readers = u.of(x);
  if (readers.size() != 1 || e.is_graph_output(x)) return -1;
  const NodeSpec& s = e.node(readers[0]);
  if (s.op != "Sum" || e.g.vars[s.outputs[0]].dtype != e.g.vars[x].dtype) return -1;
  const Shape& xs = e.g.vars[x].static_shape;
  for (int d = 0; d < xs.ndim; ++d)
    if (xs.dims[d] < 1) return -1;
  if (static_cast<int>(reduce_axes(s.attrs, xs.ndim).size()) != xs.ndim) return -1;
  return readers[0];
}

// The conjuncts of a condition: through All of a MakeVector or of one element.
void collect_conditions(passes::Editor& e, int c, std::vector<int>& out) {
  const int p = e.producer(c);
  if (p >= 0 && e.node(p).op == "All" && e.g.vars[c].static_shape.ndim == 0) {
    const int a = e.node(p).inputs[0];
    const int q = e.producer(a);
    if (passes::one_element(e.g.vars[a])) return collect_conditions(e, a, out);
    if (q >= 0 && e.node(q).op == "MakeVector") {
      for (int m : std::vector<int>(e.node(q).inputs)) collect_conditions(e, m, out);
      return;
    }
  }
  out.push_back(c);
}

// PyMC's compile-time treatment of its parameter checks. A check whose
// value is only summed switches the sum (the same value: a sum of -infs is
// -inf), so the check and its gradient are scalar work, as PyTensor's
// rewrites leave them.
void parameter_checks(passes::Editor& e, bool check_bounds) {
  Builder b(e);
  const passes::Users users = e.users();
  const int n = e.num_nodes();
  for (int k = 0; k < n; ++k) {
    const NodeSpec node = e.node(k);
    if (node.op != "CheckAndRaise" || !node.attrs.value("parameter_check", false)) continue;
    const int x = node.inputs[0], out = node.outputs[0];
    if (!check_bounds) {
      e.replace(out, x);
      e.remove(k);
      continue;
    }
    if (!node.attrs.value("ninf", false)) continue;
    // PyMC's conditions: All(MakeVector(All(c1), ...)); one-element Alls go.
    std::vector<int> conds;
    for (size_t i = 1; i < node.inputs.size(); ++i) collect_conditions(e, node.inputs[i], conds);
    int cond = -1;
    for (int c : conds) {
      if (passes::one_element(e.g.vars[c]) && b.ndim(c) > 0) c = b.dimshuffle(c, {});
      if (b.ndim(c) > 0) {
        Shape s0;
        s0.ndim = 0;
        c = b.node("All", {c}, json{{"axis", nullptr}}, DType::Bool, s0);
      }
      c = b.cast(c, DType::Bool);
      cond = cond < 0 ? c : b.elem("AND", {cond, c}, DType::Bool);
    }
    if (cond < 0) {
      e.replace(out, x);
      e.remove(k);
      continue;
    }
    const int nd = b.ndim(x);
    if (const int sum = only_full_sum(e, users, out); sum >= 0) {
      const NodeSpec sn = e.node(sum);
      Shape s0;
      s0.ndim = 0;
      const int total = b.node("Sum", {x}, sn.attrs, b.dtype(x), s0);
      const int ninf = b.constant(-std::numeric_limits<double>::infinity(), b.dtype(x), 0);
      e.replace(sn.outputs[0], b.elem("Switch", {cond, total, ninf}, b.dtype(x)));
      e.remove(sum);
      e.remove(k);
      continue;
    }
    cond = b.dimshuffle(cond, std::vector<int>(nd, -1));
    const int ninf = b.constant(-std::numeric_limits<double>::infinity(), b.dtype(x), nd);
    e.replace(out, b.elem("Switch", {cond, x, ninf}, b.dtype(x)));
    e.remove(k);
  }
  e.commit();
}

}  // namespace

void derive(Graph& g, const Options& o, std::vector<int>* origin) {
  if (g.gradient.is_null()) return;
  const Directive d = read_directive(g);
  passes::Editor e(g);
  if (origin) {
    origin->resize(g.nodes.size());
    for (size_t k = 0; k < g.nodes.size(); ++k) (*origin)[k] = static_cast<int>(k);
    e.origin = origin;
  }
  passes::stabilize(e);  // before: stable forms differentiate into stable gradients
  // The forward graph simplified first, as PyTensor's canonicalize runs
  // before its gradient: constant conditions (a Switch on data > 0), shared
  // subexpressions and identities are not differentiated.
  passes::dead_code(e);
  passes::fold_constants(e, o);
  passes::common_subexpressions(e);
  passes::simplify(e);
  lift_subtensors(e);
  cholesky_of_llt(e);
  cancel_terms(e);
  // gammaln(fill(y, a)) -> fill(y, gammaln(a)): parameter work, once.
  if (sink_fills(e)) passes::dead_code(e);
  // After the simplification, which removes switches on constant conditions
  // (data > 0) between a check and the Sum it can switch, and after sums of
  // joins are split.
  split_joined_sums(e);
  parameter_checks(e, d.check_bounds);
  passes::stabilize(e);  // forms the simplification exposed (x * 1 inside a log1p, ...)

  Builder b(e);
  const int cost = g.outputs[0];
  std::vector<int> wrt;
  for (const Wrt& w : d.wrt) wrt.push_back(g.inputs[w.input].var);
  const std::vector<int> grads = reverse(b, cost, wrt, g.source);

  // The flat point and each input's slice of it.
  int64_t total = 0;
  for (const Wrt& w : d.wrt) total += w.shape.size();
  Shape ps;
  ps.ndim = 1;
  ps.dims[0] = total;
  VarSpec pv;
  pv.name = d.point;
  pv.dtype = DType::Float64;
  pv.static_shape = ps;
  const int point = e.add_var(pv);
  std::vector<int> raveled;
  int64_t start = 0;
  for (size_t i = 0; i < d.wrt.size(); ++i) {
    const Wrt& w = d.wrt[i];
    const int x = wrt[i];
    const int64_t len = w.shape.size();
    Shape s1;
    s1.ndim = 1;
    s1.dims[0] = len;
    const json idx = json::array({json{{"type", "slice"}, {"start", start}, {"stop", start + len}, {"step", nullptr}}});
    int v = b.node("Subtensor", {point}, json{{"idx_list", idx}}, DType::Float64, s1);
    if (w.shape.ndim != 1) v = b.reshape(v, w.shape);
    e.replace(x, b.cast(v, b.dtype(x)));
    start += len;

    int gi = grads[i] >= 0 ? grads[i] : b.zeros_like(x);
    gi = b.cast(gi, DType::Float64);
    if (w.shape.ndim != 1) gi = b.reshape(gi, s1);
    raveled.push_back(gi);
  }
  int joined;
  if (raveled.size() == 1) {
    joined = raveled[0];
  } else {
    joined = b.node("Join", raveled, json{{"axis", 0}}, DType::Float64, ps);
  }
  if (raveled.empty()) {
    Array a = Array::empty(DType::Float64, ps);
    joined = e.add_constant(DType::Float64, ps, a);
  }
  e.add_output(joined);  // the canonicalizations below keep its variable
  e.commit();
  unbatch_solves(e);
  sink_fills(e);
  // The forms the adjoints made (log of a rule's quotient, switches sunk into
  // products), before the sums see them: a sum of a switch on a scalar
  // condition switches the sum.
  passes::stabilize(e);
  sum_broadcasts(e);
  sum_outer_products(e);
  lift_dimshuffles(e);
  fold_factors(e);
  serialize_increments(e);
  passes::fold_constants(e, o);  // the power rule's exponents y - 1; lifted constants
  specialize_powers(e);

  std::vector<InputSpec> inputs{InputSpec{point, false}};
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    bool listed = false;
    for (const Wrt& w : d.wrt) listed = listed || w.input == static_cast<int>(k);
    if (!listed) inputs.push_back(g.inputs[k]);
  }
  g.inputs = std::move(inputs);
  if (g.vars[joined].name.empty()) g.vars[joined].name = "grad";
  g.outputs = {cost, joined};
  g.gradient = nullptr;
}

}  // namespace ember::grad
