// Numerical stabilization, after PyTensor's `stabilize` rewrites: forms that
// overflow, underflow or cancel in floating point become the scalar ops made
// for them (docs/passes.md lists what is ported and what is not):
//
//   log(1 + x), log(x + 1) -> log1p(x); log(1 - x) -> log1p(-x)
//   exp(x) - 1, -1 + exp(x) -> expm1(x)
//   log(sigmoid(x)) -> -softplus(-x); log(1 - sigmoid(x)), log1p(-sigmoid(x))
//     -> -softplus(x); 1 - sigmoid(x) -> sigmoid(-x) (not in z * (1 - z))
//   log(1 + exp(x)), log1p(exp(x)) -> softplus(x)
//   log(1 - exp(x)), log1p(-exp(x)), log(-expm1(x)) -> log1mexp(x)
//   1 / (1 + exp(x)) -> sigmoid(-x); exp(x) / (1 + exp(x)) -> sigmoid(x)
//   1 - erf(x) -> erfc(x); 1 + erf(x) -> erfc(-x); erf(x) - 1 -> -erfc(x);
//     1 - erfc(x) -> erf(x); erfc(x) - 1 -> -erf(x)
//   log(erfc(x)) -> log(erfcx(x)) - x^2 where x > 0
//   log(exp(x) + exp(y)) -> m + log(exp(x - m) + exp(y - m)), m = max(x, y)
//   log(exp(x) - exp(y)) -> x + log1mexp(y - x)
//   log(sum(exp(x), axes)) -> m + log(sum(exp(x - m), axes)), m = max(x, axes)
//   log(softmax(x)) -> log_softmax(x); log(exp(x) / y) -> x - log(y); both
//     also through Subtensor, advanced indexing and DimShuffle
//   a * switch(c, 0, y) -> switch(c, 0, a * y) (and with 0 the other branch)
//   -switch(c, 0, y) -> switch(c, 0, -y)
//
// Unlike the other passes these change bits: the result is the accurate
// value where the original was inf, nan or cancelled, and within a few ulp
// of it elsewhere. Matches are single-op Elemwise nodes computing in the
// rewritten node's dtype; the constant is exactly 1 (or -1), every element.
// A rewrite that drops an operand is made only when the operand kept has the
// output's broadcast pattern (the dropped 1 may not shape the output). The
// matched nodes stay for their other users; dce removes the rest. The nodes
// a rewrite adds are not matched again (log(erfc) builds a log(erfc)).
#include <algorithm>
#include <cmath>

#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"

namespace ember::passes {

namespace {

using nlohmann::json;

class Stabilizer {
 public:
  explicit Stabilizer(Editor& ed) : e(ed), g(ed.g) {}
  int run();

 private:
  Editor& e;
  Graph& g;
  int rewrites = 0;
  Users users;                 // of the nodes there before
  int at = 0;                  // the node rewritten: new nodes take its place
  DType dt = DType::Float64;   // its output's dtype, the one new nodes compute in
  Shape os;                    // its output's static shape

  const VarSpec& var(int v) const { return g.vars[v]; }
  // Some reader of v is a product with y among its factors.
  bool multiplied_by(int v, int y) const {
    if (v + 1 >= static_cast<int>(users.off.size())) return false;
    for (const int r : users.of(v)) {
      if (e.removed(r) || elemwise_scalar_op(g.nodes[r]) != "Mul") continue;
      for (const int i : g.nodes[r].inputs)
        if (e.resolve(i) == y) return true;
    }
    return false;
  }
  bool kept_shapes_output(int x) const { return same_broadcast_pattern(var(x).static_shape, os); }

  // The resolved inputs of the single-op Elemwise `s` defining v in dtype dt
  // (empty when v is not one).
  std::vector<int> def(int v, const char* s) const {
    const int p = e.producer(v);
    if (p < 0 || e.removed(p) || var(v).dtype != dt) return {};
    const NodeSpec& n = g.nodes[p];
    if (n.outputs.size() != 1 || elemwise_scalar_op(n) != s) return {};
    std::vector<int> in;
    for (int i : n.inputs) in.push_back(e.resolve(i));
    return in;
  }
  // The operand of a unary `s` defining v, or -1.
  int arg(int v, const char* s) const {
    const std::vector<int> in = def(v, s);
    return in.size() == 1 ? in[0] : -1;
  }

  // v = c + y or c - y with a constant c of 1 or -1 in every element:
  // c and y's sign; y is -1 when v is neither.
  struct AffineOne {
    int c = 0, y = -1;
    bool minus = false;
  };
  AffineOne affine_one(int v) const {
    AffineOne r;
    for (const char* s : {"Add", "Sub"}) {
      const std::vector<int> in = def(v, s);
      if (in.size() != 2) continue;
      const bool sub = s[0] == 'S';
      for (int i = 0; i < 2; ++i) {
        const int c = in[i], y = in[1 - i];
        if (sub && i == 1 && constant_all(e, c, 1.0)) return {-1, y, false};  // y - 1
        if (sub && i == 1) continue;
        if (constant_all(e, c, 1.0)) return {1, y, sub};
        if (!sub && constant_all(e, c, -1.0)) return {-1, y, false};
      }
    }
    return r;
  }

  // A new node of one output, in the rewritten node's place.
  int node(const char* op, std::vector<int> in, json attrs, DType dtype, const Shape& shape) {
    VarSpec v;
    v.dtype = dtype;
    v.static_shape = shape;
    const int out = e.add_var(v);
    NodeSpec n;
    n.op = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    e.add_node(std::move(n), at);
    return out;
  }
  // A new single-op Elemwise whose static shape broadcasts its inputs'.
  int ew(const char* s, std::vector<int> in, std::optional<DType> dtype = std::nullopt) {
    Shape shape;
    shape.ndim = var(in[0]).static_shape.ndim;
    for (int d = 0; d < shape.ndim; ++d) {
      int64_t n = 1;
      for (int i : in) {
        const int64_t m = var(i).static_shape.dims[d];
        if (m != 1 && (n == 1 || n < 0)) n = m;
      }
      shape.dims[d] = n;
    }
    return node("Elemwise", std::move(in), json{{"scalar_op", json{{"op", s}}}}, dtype ? *dtype : dt, shape);
  }
  int constant(double x, int like) { return e.scalar_constant(dt, x, var(like).static_shape.ndim); }
  int neg(int x) {
    const int y = arg(x, "Neg");
    return y >= 0 ? y : ew("Neg", {x});
  }

  int log1p_special(int x, bool minus);
  int log_of(int u);
  int log_normalized(int u);
  int log_through_index(int u);
  int affine(int o);
  int divide(const std::string& s, const std::vector<int>& in);
  int log_erfc(int x);
  int log_sum_exp(int u);
  int log_add_exp(int x, int y);
  int log_diff_exp(int x, int y);
  int mul_switch_sink(const std::vector<int>& in);
  int div_switch_sink(const std::vector<int>& in);
  int neg_switch_sink(int x);
  template <class F>
  int into_zero_switch(int x, F&& op);
};

// log1p(x), or log1p(-x) when `minus`, in a form made for it; -1 if none.
int Stabilizer::log1p_special(int x, bool minus) {
  if (const int y = arg(x, "Neg"); y >= 0) return log1p_special(y, !minus);
  if (const int y = arg(x, "Exp"); y >= 0) return ew(minus ? "Log1mexp" : "Softplus", {y});
  if (const int y = arg(x, "Sigmoid"); y >= 0 && minus) {
    const int sp = ew("Softplus", {y});
    return ew("Neg", {sp});
  }
  return -1;
}

// log(u) in a stable form, or -1.
int Stabilizer::log_of(int u) {
  if (const AffineOne a = affine_one(u); a.y >= 0 && a.c == 1 && kept_shapes_output(a.y)) {
    if (const int r = log1p_special(a.y, a.minus); r >= 0) return r;
    return ew("Log1p", {a.minus ? neg(a.y) : a.y});
  }
  if (const int x = arg(u, "Sigmoid"); x >= 0) {
    const int sp = ew("Softplus", {neg(x)});
    return ew("Neg", {sp});
  }
  if (const int x = arg(u, "Neg"); x >= 0) {
    if (const int y = arg(x, "Expm1"); y >= 0) return ew("Log1mexp", {y});
  }
  if (const int x = arg(u, "Erfc"); x >= 0) return log_erfc(x);
  // log(exp(x)) -> x, as PyTensor's local_log_exp: exp overflows past 709.
  if (const int x = arg(u, "Exp"); x >= 0 && var(x).dtype == dt) return x;
  // log(x ** y) -> y * log(x), as PyTensor's local_log_pow: the power
  // overflows or underflows where its log is finite.
  if (const std::vector<int> pw = def(u, "Pow"); pw.size() == 2 && var(pw[0]).dtype == dt && var(pw[1]).dtype == dt)
    return ew("Mul", {pw[1], ew("Log", {pw[0]})});
  for (const char* s : {"Add", "Sub"}) {
    const std::vector<int> in = def(u, s);
    if (in.size() != 2) continue;
    const int x = arg(in[0], "Exp"), y = arg(in[1], "Exp");
    if (x < 0 || y < 0) continue;
    return s[0] == 'A' ? log_add_exp(x, y) : log_diff_exp(x, y);
  }
  if (const int r = log_sum_exp(u); r >= 0) return r;
  if (const int r = log_normalized(u); r >= 0) return r;
  return log_through_index(u);
}

// log(sum(exp(x), axes)) -> m + log(sum(exp(x - m'), axes)), m = max(x, axes),
// m' = m with the axes kept and 0 where m is infinite, as PyTensor's
// local_log_sum_exp: a mixture's naive logsumexp over components whose logps
// are all below -745 underflows to log(0).
int Stabilizer::log_sum_exp(int u) {
  const int p = e.producer(u);
  if (p < 0 || e.removed(p) || !is_op(g.nodes[p], TensorOp::Sum) || g.nodes[p].outputs.size() != 1) return -1;
  const NodeSpec sum = g.nodes[p];  // a copy: nodes are added below
  const int x = arg(e.resolve(sum.inputs[0]), "Exp");
  if (x < 0 || var(x).dtype != dt || var(u).dtype != dt) return -1;
  const int nd = var(x).static_shape.ndim;
  std::vector<bool> summed(nd, false);
  auto it = sum.attrs.find("axis");
  if (it == sum.attrs.end() || it->is_null()) {
    summed.assign(nd, true);
  } else {
    for (const auto& a : it->is_array() ? *it : json::array({*it})) {
      if (!a.is_number_integer()) return -1;
      const int ax = a.get<int>() < 0 ? a.get<int>() + nd : a.get<int>();
      if (ax < 0 || ax >= nd) return -1;
      summed[ax] = true;
    }
  }
  const Shape rs = var(u).static_shape;
  json axis_only{{"axis", it == sum.attrs.end() ? json() : *it}};
  const int m = node("Max", {x}, axis_only, dt, rs);
  json keep = json::array();
  Shape ks;
  ks.ndim = nd;
  for (int d = 0, k = 0; d < nd; ++d) {
    keep.push_back(summed[d] ? json("x") : json(k++));
    ks.dims[d] = summed[d] ? 1 : var(x).static_shape.dims[d];
  }
  const int mk = node("DimShuffle", {m}, json{{"new_order", keep}}, dt, ks);
  const int inf = ew("IsInf", {mk}, DType::Bool);
  const int safe = ew("Switch", {inf, constant(0.0, mk), mk});
  const int shifted = ew("Exp", {ew("Sub", {x, safe})});
  const int total = node("Sum", {shifted}, axis_only, dt, rs);
  return ew("Add", {m, ew("Log", {total})});
}

// log of a normalized exponential, whose entries underflow to 0 where their
// logs are finite: log(softmax(x)) -> log_softmax(x), and log(exp(x) / y) ->
// x - log(y), the exact identity (PyTensor makes a Softmax of exp(x) /
// sum(exp(x)), local_softmax_stabilize, then a LogSoftmax). -1 if neither.
int Stabilizer::log_normalized(int u) {
  if (const std::vector<int> q = def(u, "TrueDiv"); q.size() == 2) {
    const int x = arg(q[0], "Exp");
    if (x >= 0 && var(x).dtype == dt) {
      const int l = ew("Log", {q[1]});
      return ew("Sub", {x, l});
    }
  }
  if (const int p = e.producer(u); p >= 0 && is_op(g.nodes[p], TensorOp::Softmax) &&
                                   g.nodes[p].inputs.size() == 1 && g.nodes[p].outputs.size() == 1 &&
                                   var(u).dtype == dt) {
    VarSpec v = var(u);
    v.name.clear();
    NodeSpec n;
    n.op = "LogSoftmax";
    n.inputs = {e.resolve(g.nodes[p].inputs[0])};
    n.attrs = g.nodes[p].attrs;
    const int out = e.add_var(v);
    n.outputs = {out};
    e.add_node(std::move(n), at);
    return out;
  }
  return -1;
}

// log(index(v)) -> index(log(v)) through a chain of Subtensor, advanced
// indexing and DimShuffle nodes when log(v) is log_normalized, as PyTensor's
// local_logsoftmax lifts them: the same entries, each log taken where it is
// accurate. Only then: elsewhere the log of all of v may cost more than of
// the entries selected.
int Stabilizer::log_through_index(int u) {
  std::vector<int> chain;
  int v = u;
  for (int p = e.producer(v); p >= 0 && !e.removed(p); p = e.producer(v)) {
    const NodeSpec& n = g.nodes[p];
    const std::optional<TensorOp> op = find_tensor_op(n.op);
    const bool index = op == TensorOp::Subtensor || op == TensorOp::AdvancedSubtensor ||
                       op == TensorOp::AdvancedSubtensor1 || op == TensorOp::DimShuffle;
    if (!index || n.inputs.empty() || n.outputs.size() != 1 || var(v).dtype != dt) break;
    chain.push_back(p);
    v = e.resolve(n.inputs[0]);
  }
  if (chain.empty() || var(v).dtype != dt) return -1;
  int r = log_normalized(v);
  if (r < 0) return -1;
  for (auto k = chain.rbegin(); k != chain.rend(); ++k) {
    NodeSpec n = g.nodes[*k];  // a copy: add_node may move the node list
    for (int& i : n.inputs) i = e.resolve(i);
    n.inputs[0] = r;
    VarSpec out = var(n.outputs[0]);
    out.name.clear();
    r = e.add_var(out);
    n.outputs = {r};
    e.add_node(std::move(n), at);
  }
  return r;
}

// The Add or Sub defining o, c +- y with c = +-1: exp, erf, erfc and sigmoid
// forms of y that cancel.
int Stabilizer::affine(int o) {
  const AffineOne a = affine_one(o);
  if (a.y < 0 || !kept_shapes_output(a.y)) return -1;
  if (a.c == -1) {  // y - 1
    if (const int x = arg(a.y, "Exp"); x >= 0) return ew("Expm1", {x});
    if (const int x = arg(a.y, "Erf"); x >= 0) {
      const int erfc = ew("Erfc", {x});
      return ew("Neg", {erfc});
    }
    if (const int x = arg(a.y, "Erfc"); x >= 0) {  // erfc(x) - 1 = -erf(x)
      if (const int z = arg(x, "Neg"); z >= 0) return ew("Erf", {z});
      const int erf = ew("Erf", {x});
      return ew("Neg", {erf});
    }
    return -1;
  }
  if (!a.minus) {  // 1 + y
    if (const int x = arg(a.y, "Erf"); x >= 0) return ew("Erfc", {neg(x)});
    return -1;
  }
  // 1 - y
  if (const int x = arg(a.y, "Erf"); x >= 0) return ew("Erfc", {x});
  if (const int x = arg(a.y, "Erfc"); x >= 0) return ew("Erf", {x});
  // Not in z * (1 - z), sigmoid's derivative (PyTensor's form): its z
  // carries the same rounding, and a second sigmoid costs an exp.
  if (const int x = arg(a.y, "Sigmoid"); x >= 0 && !multiplied_by(o, a.y)) return ew("Sigmoid", {neg(x)});
  return -1;
}

// 1 / (1 + exp(x)) -> sigmoid(-x) (Reciprocal or TrueDiv by 1), and
// exp(x) / (1 + exp(x)) -> sigmoid(x): exp overflows where sigmoid is 0 or 1.
int Stabilizer::divide(const std::string& s, const std::vector<int>& in) {
  const int den = in.back();
  const AffineOne a = affine_one(den);
  if (a.y < 0 || a.c != 1 || a.minus) return -1;
  const int x = arg(a.y, "Exp");
  if (x < 0 || !kept_shapes_output(x)) return -1;
  if (s == "Reciprocal" || constant_all(e, in[0], 1.0)) {
    const int nx = neg(x);
    return ew("Sigmoid", {nx});
  }
  if (arg(in[0], "Exp") == x) return ew("Sigmoid", {x});
  return -1;
}

// log(erfc(x)): erfc underflows past x = 26.6, but erfc(x) = erfcx(x) exp(-x^2)
// and for x > 0 both log(erfcx(x)) and -x^2 are negative (no cancellation);
// for x <= 0, erfc(x) is in [1, 2] and its log is exact enough. Each branch
// reads x only where it is taken (0 elsewhere), so neither it nor its
// gradient sees the other branch's overflow: erfcx(-30) and log(erfc(30)).
int Stabilizer::log_erfc(int x) {
  const int zero = constant(0.0, x);
  const int pos = ew("GT", {x, zero}, DType::Bool);
  const int xp = ew("Switch", {pos, x, zero});
  const int xn = ew("Switch", {pos, zero, x});
  const int erfcx = ew("Erfcx", {xp});
  const int log_erfcx = ew("Log", {erfcx});
  const int sq = ew("Sqr", {xp});
  const int tail = ew("Sub", {log_erfcx, sq});
  const int erfc = ew("Erfc", {xn});
  const int body = ew("Log", {erfc});
  return ew("Switch", {pos, tail, body});
}

// log(exp(x) + exp(y)) = m + log(exp(x - m) + exp(y - m)) with m = max(x, y)
// (0 where that is infinite, so that -inf + -inf gives -inf, not nan). The
// gradient of m cancels, so ties need no care.
int Stabilizer::log_add_exp(int x, int y) {
  const int m = ew("ScalarMaximum", {x, y});
  const int inf = ew("IsInf", {m}, DType::Bool);
  const int zero = constant(0.0, m);
  const int m0 = ew("Switch", {inf, zero, m});
  const int dx = ew("Sub", {x, m0});
  const int ex = ew("Exp", {dx});
  const int dy = ew("Sub", {y, m0});
  const int ey = ew("Exp", {dy});
  const int sum = ew("Add", {ex, ey});
  const int l = ew("Log", {sum});
  return ew("Add", {m0, l});
}

// log(exp(x) - exp(y)) = x + log1mexp(y - x); y = -inf gives x (also for x = -inf).
int Stabilizer::log_diff_exp(int x, int y) {
  const int minus_inf = constant(-INFINITY, y);
  const int none = ew("EQ", {y, minus_inf}, DType::Bool);
  const int d = ew("Sub", {y, x});
  const int l = ew("Log1mexp", {d});
  const int sum = ew("Add", {x, l});
  return ew("Switch", {none, x, sum});
}

// x = switch(c, 0, y) (0 in either branch) -> switch(c, 0, op(y)); -1 when
// x is not one. Each sink below applies itself again inside op, so it also
// reaches a switch nested in the branch (a parameter check around a mask).
template <class F>
int Stabilizer::into_zero_switch(int x, F&& op) {
  const std::vector<int> sw = def(x, "Switch");
  if (sw.size() != 3) return -1;
  for (int branch = 1; branch <= 2; ++branch) {
    if (!constant_all(e, sw[branch], 0.0)) continue;
    const int y = op(sw[3 - branch]);
    return ew("Switch", branch == 1 ? std::vector<int>{sw[0], sw[1], y} : std::vector<int>{sw[0], y, sw[2]});
  }
  return -1;
}

// a * switch(c, 0, y) -> switch(c, 0, a * y): where the switch gives 0, an
// infinite a (or its gradient) would make nan of it. Operands and so the
// output's shape are the same; the constant 0 is the switch's own.
int Stabilizer::mul_switch_sink(const std::vector<int>& in) {
  for (size_t i = 0; i < in.size(); ++i) {
    const int r = into_zero_switch(in[i], [&](int y) {
      std::vector<int> factors = in;
      factors[i] = y;
      const int prod = mul_switch_sink(factors);
      return prod >= 0 ? prod : ew("Mul", std::move(factors));
    });
    if (r >= 0) return r;
  }
  return -1;
}

// switch(c, 0, y) / a -> switch(c, 0, y / a), as PyTensor's
// local_div_switch_sink: the gradient of an untaken branch stays 0 through
// the quotients of a derivative rule (d log(u) = du / u with u infinite).
int Stabilizer::div_switch_sink(const std::vector<int>& in) {
  return into_zero_switch(in[0], [&](int y) {
    const int q = div_switch_sink({y, in[1]});
    return q >= 0 ? q : ew("TrueDiv", {y, in[1]});
  });
}

// -switch(c, 0, y) -> switch(c, 0, -y) (PyTensor: neg to mul by -1, then
// local_mul_switch_sink): the untaken branch's 0 stays +0, and the switch
// keeps moving out through the quotients and products that follow it.
int Stabilizer::neg_switch_sink(int x) {
  return into_zero_switch(x, [&](int y) {
    const int ng = neg_switch_sink(y);
    return ng >= 0 ? ng : ew("Neg", {y});
  });
}

int Stabilizer::run() {
  // Only the nodes there before: the ones added are already stable.
  const int n0 = e.num_nodes();
  users = e.users();
  for (int k = 0; k < n0; ++k) {
    if (e.removed(k)) continue;
    const NodeSpec& n = e.node(k);
    const std::string s = elemwise_scalar_op(n);
    if (s.empty() || n.outputs.size() != 1 || n.inputs.empty()) continue;
    const int o = n.outputs[0];
    const std::vector<int> in = n.inputs;  // add_node may move n
    at = k;
    dt = var(o).dtype;
    os = var(o).static_shape;
    if (!dtype_is_float(dt)) continue;
    int r = -1;
    if (s == "Log" && in.size() == 1) r = log_of(in[0]);
    else if (s == "Log1p" && in.size() == 1) r = log1p_special(in[0], false);
    else if ((s == "Add" || s == "Sub") && in.size() == 2) r = affine(o);
    else if (s == "Mul" && in.size() >= 2) r = mul_switch_sink(in);
    else if (s == "Neg" && in.size() == 1) r = neg_switch_sink(in[0]);
    else if (s == "TrueDiv" && in.size() == 2 && (r = div_switch_sink(in)) >= 0) {}
    else if ((s == "TrueDiv" && in.size() == 2) || (s == "Reciprocal" && in.size() == 1)) r = divide(s, in);
    if (r < 0) continue;
    e.replace(o, r);
    e.remove(k);
    ++rewrites;
  }
  if (rewrites) e.commit();
  return rewrites;
}

}  // namespace

int stabilize(Editor& e) { return Stabilizer(e).run(); }

}  // namespace ember::passes
