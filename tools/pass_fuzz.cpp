#include "tools/pass_fuzz.hpp"

#include <cmath>
#include <cstring>

#include "tools/differential.hpp"

namespace ember::fuzz {

using nlohmann::json;

namespace {

bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
int irange(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

json number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

struct Gen {
  Rng& rng;
  explicit Gen(Rng& r) : rng(r) {}

  struct V {
    int id;
    DType dt;
    std::vector<int> sym;  // per dim: a symbol, or -1 (static 1)
  };
  int rank = 1;
  std::vector<int64_t> size;  // per symbol: run-time length
  std::vector<bool> known;    // per symbol: statically known
  json vars = json::array(), nodes = json::array(), inputs = json::array(), consts = json::array();
  std::vector<V> pool;
  std::vector<V> ins;

  json static_shape(const std::vector<int>& sym) const {
    json s = json::array();
    for (int x : sym) s.push_back(x < 0 ? json(1) : known[x] ? json(size[x]) : json(nullptr));
    return s;
  }
  Shape run_shape(const std::vector<int>& sym) const {
    Shape s;
    s.ndim = static_cast<int>(sym.size());
    for (int d = 0; d < s.ndim; ++d) s.dims[d] = sym[d] < 0 ? 1 : size[sym[d]];
    return s;
  }
  bool all_known(const std::vector<int>& sym) const {
    for (int x : sym)
      if (x >= 0 && !known[x]) return false;
    return true;
  }
  V var(DType dt, std::vector<int> sym, bool add = true) {
    vars.push_back({{"dtype", std::string(dtype_name(dt))}, {"shape", static_shape(sym)}});
    V v{static_cast<int>(vars.size()) - 1, dt, std::move(sym)};
    if (add) pool.push_back(v);
    return v;
  }
  // A constant of the given pattern (dims known or static 1) filled with
  // one value (often a neutral one) or varied values.
  V constant(DType dt, std::vector<int> sym) {
    V v = var(dt, sym);
    const int64_t n = run_shape(sym).size();
    static constexpr double kVals[] = {1, 0, -0.0, 2, -1, 0.5, 3, NAN, INFINITY, -INFINITY, 1.5, -2.5};
    const double one = kVals[irange(rng, 0, static_cast<int>(std::size(kVals)) - 1)];
    const bool uniform = chance(rng, 0.7);
    json data = json::array();
    for (int64_t i = 0; i < n; ++i) {
      double x = uniform ? one : kVals[irange(rng, 0, static_cast<int>(std::size(kVals)) - 1)];
      if (dt == DType::Bool) data.push_back(x != 0 && !std::isnan(x));
      else if (!dtype_is_float(dt)) data.push_back(std::isfinite(x) ? static_cast<int64_t>(x) : 1);
      else data.push_back(number(x));
    }
    consts.push_back({{"var", v.id}, {"data", data}});
    return v;
  }
  std::vector<int> scalar_sym() const { return std::vector<int>(rank, -1); }
  V int_scalar(int64_t x) {
    V v = var(DType::Int64, {}, false);
    consts.push_back({{"var", v.id}, {"data", {x}}});
    return v;
  }

  const V& any() { return pool[irange(rng, 0, static_cast<int>(pool.size()) - 1)]; }
  const V& any_of_rank(int r, bool floats) {
    for (int tries = 0; tries < 20; ++tries) {
      const V& v = any();
      if (static_cast<int>(v.sym.size()) == r && (!floats || dtype_is_float(v.dt))) return v;
    }
    return ins[0];
  }
  // An operand that broadcasts with a (same rank, equal symbols where both are not 1).
  const V* mate(const V& a, bool floats) {
    std::vector<const V*> ok;
    for (const V& b : pool) {
      if (b.sym.size() != a.sym.size() || (floats && !dtype_is_float(b.dt))) continue;
      bool fits = true;
      for (size_t d = 0; d < a.sym.size(); ++d) fits = fits && (a.sym[d] == b.sym[d] || a.sym[d] < 0 || b.sym[d] < 0);
      if (fits) ok.push_back(&b);
    }
    return ok.empty() ? nullptr : ok[irange(rng, 0, static_cast<int>(ok.size()) - 1)];
  }
  std::vector<int> bsym(const std::vector<const V*>& xs) {
    std::vector<int> s(xs[0]->sym.size(), -1);
    for (const V* x : xs)
      for (size_t d = 0; d < s.size(); ++d)
        if (x->sym[d] >= 0) s[d] = x->sym[d];
    return s;
  }
  void node(const std::string& op, const std::vector<int>& in, const std::vector<int>& out, json attrs) {
    nodes.push_back({{"op", op}, {"inputs", in}, {"outputs", out}, {"attrs", attrs}});
  }
  V elemwise(const char* op, std::vector<const V*> xs, DType out_dt) {
    std::vector<int> in;
    for (const V* x : xs) in.push_back(x->id);
    V o = var(out_dt, bsym(xs));
    node("Elemwise", in, {o.id}, {{"scalar_op", {{"op", op}}}});
    return o;
  }

  void step() {
    const int kind = irange(rng, 0, 21);
    const V a = any_of_rank(rank, kind != 11);
    switch (kind) {
      case 0: case 1: {  // unary
        static const char* un[] = {"Neg", "Exp", "Log", "Sqr", "Sqrt", "Identity", "Abs", "Sigmoid", "Log1p"};
        elemwise(un[irange(rng, 0, 8)], {&a}, a.dt);
        break;
      }
      case 2: case 3: case 4: {  // binary
        static const char* bin[] = {"Add", "Mul", "Sub", "TrueDiv", "Pow", "Second", "ScalarMaximum", "Mul", "Add"};
        const V* b = mate(a, true);
        if (!b) break;
        const char* op = bin[irange(rng, 0, 8)];
        if (chance(rng, 0.5)) elemwise(op, {&a, b}, DType::Float64);
        else elemwise(op, {b, &a}, DType::Float64);
        break;
      }
      case 5: {  // a neutral or special constant operand
        std::vector<int> s = scalar_sym();
        if (chance(rng, 0.3) && all_known(a.sym)) s = a.sym;
        const V c = constant(chance(rng, 0.2) ? DType::Int8 : DType::Float64, s);
        static const char* bin[] = {"Add", "Mul", "Sub", "TrueDiv", "Pow", "Second", "Switch"};
        const char* op = bin[irange(rng, 0, 6)];
        if (std::strcmp(op, "Switch") == 0) {
          const V cond = constant(DType::Bool, scalar_sym());
          elemwise(op, {&cond, &a, &c}, DType::Float64);
        } else if (chance(rng, 0.7)) {
          elemwise(op, {&a, &c}, DType::Float64);
        } else {
          elemwise(op, {&c, &a}, DType::Float64);
        }
        break;
      }
      case 6: {  // variadic
        const V* b = mate(a, true);
        const V* c = b ? mate(*b, true) : nullptr;
        if (!b || !c) break;
        std::vector<const V*> xs = {&a, b, c};
        bool ok = true;
        for (size_t d = 0; d < a.sym.size(); ++d)
          ok = ok && (a.sym[d] < 0 || c->sym[d] < 0 || a.sym[d] == c->sym[d]);
        if (ok) elemwise(chance(rng, 0.5) ? "Add" : "Mul", xs, DType::Float64);
        break;
      }
      case 7: {  // neg(neg x)
        const V n1 = elemwise("Neg", {&a}, a.dt);
        elemwise("Neg", {&n1}, a.dt);
        break;
      }
      case 8: {  // switch on a comparison
        const V* mb = mate(a, true);
        if (!mb) break;
        const V b = *mb;  // a copy: elemwise() grows the pool
        const V cond = elemwise("GT", {&a, &b}, DType::Bool);
        elemwise("Switch", {&cond, &a, &b}, DType::Float64);
        break;
      }
      case 9: {  // DimShuffle chain: out and back, or a transpose
        if (rank == 0) break;
        json order = json::array();
        std::vector<int> s;
        if (rank == 2 && chance(rng, 0.5)) {
          order = {1, 0};
          s = {a.sym[1], a.sym[0]};
        } else {
          order.push_back("x");
          s.push_back(-1);
          for (int d = 0; d < rank; ++d) {
            order.push_back(d);
            s.push_back(a.sym[d]);
          }
        }
        V t = var(a.dt, s, false);
        node("DimShuffle", {a.id}, {t.id}, {{"new_order", order}});
        // back to rank `rank`
        json back = json::array();
        std::vector<int> s2;
        if (order.size() == 2 && order[0] == 1) {
          back = {1, 0};
          s2 = {s[1], s[0]};
        } else {
          for (int d = 1; d <= rank; ++d) {
            back.push_back(d);
            s2.push_back(s[d]);
          }
        }
        V u = var(a.dt, s2);
        node("DimShuffle", {t.id}, {u.id}, {{"new_order", back}});
        break;
      }
      case 10: {  // identity views
        static const char* ops[] = {"DeepCopyOp", "ViewOp", "SpecifyShape", "Subtensor", "Reshape"};
        const int which = irange(rng, 0, 4);
        if ((which == 3 && rank == 0) || (which == 4 && !all_known(a.sym))) break;
        V o = var(a.dt, a.sym);
        json attrs = json::object();
        std::vector<int> in = {a.id};
        if (which == 2) {
          attrs["shape"] = json::array();
          for (int d = 0; d < rank; ++d) attrs["shape"].push_back(nullptr);
        } else if (which == 3) {
          attrs["idx_list"] = {{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", nullptr}}};
        } else if (which == 4) {
          V sh = var(DType::Int64, {}, false);
          vars.back()["shape"] = {rank};
          json d = json::array();
          for (int x : a.sym) d.push_back(x < 0 ? 1 : size[x]);
          consts.push_back({{"var", sh.id}, {"data", d}});
          in.push_back(sh.id);
          attrs["ndim"] = rank;
        }
        node(ops[which], in, {o.id}, attrs);
        break;
      }
      case 11: {  // duplicate an earlier node (CSE)
        if (nodes.empty()) break;
        json n = nodes[irange(rng, 0, static_cast<int>(nodes.size()) - 1)];
        json outs = json::array();
        for (const json& o : n["outputs"]) {
          vars.push_back(vars[o.get<int>()]);
          const int id = static_cast<int>(vars.size()) - 1;
          outs.push_back(id);
          for (const V& p : pool)
            if (p.id == o.get<int>()) {
              pool.push_back(V{id, p.dt, p.sym});
              break;
            }
        }
        n["outputs"] = outs;
        nodes.push_back(n);
        break;
      }
      case 12: {  // Sum to 0-d, broadcast back
        V s = var(DType::Float64, {}, false);
        node("Sum", {a.id}, {s.id}, {{"axis", nullptr}});
        json order = json::array();
        for (int d = 0; d < rank; ++d) order.push_back("x");
        V b = var(DType::Float64, scalar_sym());
        node("DimShuffle", {s.id}, {b.id}, {{"new_order", order}});
        break;
      }
      case 13: {  // constants only (folding)
        const V c1 = constant(DType::Float64, scalar_sym());
        const V c2 = constant(chance(rng, 0.5) ? DType::Int8 : DType::Float64, scalar_sym());
        elemwise(chance(rng, 0.5) ? "Sub" : "Mul", {&c1, &c2}, DType::Float64);
        break;
      }
      case 14: {  // Cast round trip
        const V f = elemwise("Cast", {&a}, DType::Float32);
        elemwise("Cast", {&f}, DType::Float64);
        break;
      }
      case 15: {  // a dead chain
        V d = var(a.dt, a.sym, false);
        node("Elemwise", {a.id}, {d.id}, {{"scalar_op", {{"op", "Exp"}}}});
        break;
      }
      case 16: {  // Alloc of a one-element value to a's shape, used by a Mul
        if (!all_known(a.sym) || rank == 0) break;
        const V one = constant(DType::Float64, scalar_sym());
        std::vector<int> in = {one.id};
        for (int x : a.sym) in.push_back(int_scalar(x < 0 ? 1 : size[x]).id);
        V al = var(DType::Float64, a.sym);
        node("Alloc", in, {al.id}, json::object());
        elemwise("Mul", {&a, &al}, DType::Float64);
        break;
      }
      default: {  // a chain of element-wise ops
        V cur = a;
        const int len = irange(rng, 2, 6);
        for (int k = 0; k < len; ++k) {
          const V* b = mate(cur, true);
          static const char* ops[] = {"Add", "Mul", "Sub", "Exp", "Neg", "TrueDiv", "Log1p"};
          const char* op = ops[irange(rng, 0, 6)];
          if (!b || std::strcmp(op, "Exp") == 0 || std::strcmp(op, "Neg") == 0 || std::strcmp(op, "Log1p") == 0)
            cur = elemwise(op[0] == 'E' || op[0] == 'N' || op[0] == 'L' ? op : "Neg", {&cur}, DType::Float64);
          else
            cur = elemwise(op, {&cur, b}, DType::Float64);
        }
        break;
      }
    }
  }

  PassCase make() {
    rank = irange(rng, 0, 2);
    for (int d = 0; d < rank; ++d) {
      size.push_back(irange(rng, 2, 5));
      known.push_back(chance(rng, 0.6));
    }
    const int nin = irange(rng, 1, 3);
    PassCase c;
    for (int k = 0; k < nin; ++k) {
      std::vector<int> s;
      for (int d = 0; d < rank; ++d) s.push_back(chance(rng, 0.25) ? -1 : d);
      V v = var(DType::Float64, s);
      vars.back()["name"] = std::string(1, 'x').append(std::to_string(k));  // not "x" + s: a GCC 12 -Wrestrict false positive
      inputs.push_back({{"var", v.id}});
      ins.push_back(v);
      const Shape rs = run_shape(s);
      Array a = random_values(rng, DType::Float64, std::max<int64_t>(rs.size(), 1));
      a.t = Tensor::contiguous(DType::Float64, rs, a.t.data);
      c.args.push_back(a);
    }
    const int nsteps = irange(rng, 1, 14);
    for (int k = 0; k < nsteps; ++k) step();
    json outs = json::array();
    outs.push_back(pool.back().id);
    const int extra = irange(rng, 0, 2);
    for (int k = 0; k < extra; ++k) outs.push_back(any().id);
    json g = {{"format", "ember-graph"}, {"version", 1}, {"variables", vars}, {"inputs", inputs},
              {"outputs", outs}, {"constants", consts}, {"nodes", nodes}};
    c.graph = g.dump();
    return c;
  }
};

Options with(const Options::Passes& p) {
  Options o;
  o.passes = p;
  return o;
}

// Empty when equal, else what differs.
std::string compare(const std::vector<Array>& x, const std::vector<Array>& y) {
  if (x.size() != y.size()) return "output counts differ";
  for (size_t k = 0; k < x.size(); ++k) {
    const Tensor &a = x[k].t, &b = y[k].t;
    if (a.dtype != b.dtype || a.shape.str() != b.shape.str())
      return "output " + std::to_string(k) + " is " + std::string(dtype_name(b.dtype)) + " " + b.shape.str() +
             ", without passes " + std::string(dtype_name(a.dtype)) + " " + a.shape.str();
    const size_t es = dtype_size(a.dtype);
    for (int64_t i = 0; i < a.size(); ++i)
      if (!same_value(a.dtype, static_cast<char*>(a.data) + i * es, static_cast<char*>(b.data) + i * es))
        return "output " + std::to_string(k) + " element " + std::to_string(i) + " differs";
  }
  return "";
}

// Runs c with passes p; empty optional for a call error.
std::optional<std::vector<Array>> run(const PassCase& c, const Options::Passes& p, std::string* err) {
  auto prog = Program::from_json(c.graph, with(p));
  std::vector<Tensor> views;
  for (const Array& a : c.args) views.push_back(a.t);
  try {
    return prog->call(std::span<const Tensor>(views.data(), views.size()));
  } catch (const CallError& e) {
    if (err) *err = e.what();
    return std::nullopt;
  }
}

}  // namespace

PassCase random_pass_case(Rng& rng) { return Gen(rng).make(); }

PassResult check_pass_case(const PassCase& c, const Options::Passes& on) {
  PassResult r;
  const Options::Passes off{false, false, false, false, false, false};
  std::string e0, e1;
  std::optional<std::vector<Array>> want, got;
  try {
    want = run(c, off, &e0);
  } catch (const LoadError& e) {
    r.ok = false;
    r.message = std::string("the generated graph does not load: ") + e.what();
    return r;
  }
  try {
    got = run(c, on, &e1);
  } catch (const LoadError& e) {
    r.ok = false;
    r.message = std::string("loads without passes but not with them: ") + e.what();
    return r;
  }
  if (!want) return r;  // the graph fails its call either way or not: only results are compared
  if (!got) {
    r.ok = false;
    r.message = "runs without passes, fails with them: " + e1;
    return r;
  }
  const std::string diff = compare(*want, *got);
  if (diff.empty()) return r;
  r.ok = false;
  r.message = diff + "; alone reproducing it:";
  const char* names[] = {"dce", "fold", "cse", "simplify", "fuse", "scalarize"};
  for (int k = 0; k < 6; ++k) {
    Options::Passes one = off;
    bool* flags[] = {&one.dce, &one.fold, &one.cse, &one.simplify, &one.fuse, &one.scalarize};
    *flags[k] = true;
    std::optional<std::vector<Array>> x;
    try {
      x = run(c, one, nullptr);
    } catch (const LoadError&) {
      r.message += std::string(" ") + names[k] + "(load error)";
      continue;
    }
    if (!x || !compare(*want, *x).empty()) r.message += std::string(" ") + names[k];
  }
  return r;
}

}  // namespace ember::fuzz
