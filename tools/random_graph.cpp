#include "tools/random_graph.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace ember::fuzz {

using interp::Composite;
using interp::OpKind;
using interp::ScalarConst;
using interp::ScalarNode;
using interp::ScalarOp;
using nlohmann::json;

namespace {

template <class T> T pick(Rng& rng, std::initializer_list<T> xs) {
  std::uniform_int_distribution<size_t> u(0, xs.size() - 1);
  return xs.begin()[u(rng)];
}
bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
int irange(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

DType random_dtype(Rng& rng) {
  // Floats dominate real graphs; every dtype still appears.
  static constexpr DType kW[] = {DType::Float64, DType::Float64, DType::Float64, DType::Float64, DType::Float32,
                                 DType::Float32, DType::Int64,   DType::Int32,   DType::Int16,   DType::Int8,
                                 DType::UInt8,   DType::Bool,    DType::Bool,    DType::UInt16,  DType::UInt32};
  return kW[irange(rng, 0, static_cast<int>(std::size(kW)) - 1)];
}
DType random_float_dtype(Rng& rng) { return chance(rng, 0.7) ? DType::Float64 : DType::Float32; }
DType random_int_dtype(Rng& rng) {
  return pick(rng, {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8, DType::UInt16,
                    DType::UInt32, DType::Bool});
}

// Points where functions change branch, overflow, or have poles.
constexpr double kSpecial[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 5e-324, -5e-324, 2.2250738585072009e-308,
    DBL_MIN, -DBL_MIN, DBL_MAX, -DBL_MAX, 1e300, -1e300, 1e-300, 1e-17, 1e-8, -1e-8,
    1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3, -3, 0.25, 0.75, 0.9999999999999999, 1.0000000000000002,
    -37, 18, 33.3, -0.6931471805599453,                  // softplus, log1mexp thresholds
    709.782712893384, 709.79, -745.1332191019411, -745.14, 710.4758600739439,  // exp, sinh overflow
    88.72283905206835, -103.97207708, 1024, -1074, -1075,                      // float32 exp, exp2 edges
    3.141592653589793, 1.5707963267948966, -1.5707963267948966, 1e22, 2.0 * 1e300,
    9007199254740992.0, 9223372036854775808.0, -9223372036854775808.0, 2147483648.0,
    171.6243769563027, 171.7, -170.5, -0.0000001, -4, -10, -100,           // gamma, gammaln poles
    6, 8, 30, 700, 0.9999, -0.9999, 1.9999, 0.0001,                         // erfinv, erfcinv, Bessel
    26.5, -26.5, 5.8, 40, 1e5, -1e5, 1e10, 1e15,
};

double random_wide(Rng& rng) {
  // Random sign, random binade across the whole range, random mantissa.
  const int e = irange(rng, -1074, 1023);
  double m = std::uniform_real_distribution<double>(1, 2)(rng);
  double v = std::ldexp(m, e);
  return chance(rng, 0.5) ? -v : v;
}

}  // namespace

double special_float(Rng& rng, DType dt) {
  double v;
  const int r = irange(rng, 0, 99);
  if (r < 45) v = kSpecial[irange(rng, 0, static_cast<int>(std::size(kSpecial)) - 1)];
  else if (r < 55) {
    v = kSpecial[irange(rng, 0, static_cast<int>(std::size(kSpecial)) - 1)];
    v = std::nextafter(v, chance(rng, 0.5) ? INFINITY : -INFINITY);  // neighbours of special points
  } else if (r < 70) v = std::uniform_real_distribution<double>(-4, 4)(rng);
  else if (r < 80) v = irange(rng, -12, 12) * (chance(rng, 0.3) ? 0.5 : 1.0);
  else if (r < 95) v = random_wide(rng);
  else v = pick(rng, {double(FLT_MIN), double(FLT_TRUE_MIN), double(FLT_MAX), -double(FLT_MAX), 16777216.0,
                      88.7228393554687500, 3.4e38, 1e-45, 1e-38});
  if (dt == DType::Float32) v = static_cast<float>(v);
  return v;
}

int64_t special_int(Rng& rng, DType dt) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (dt) {
    case DType::Int32: lo = INT32_MIN; hi = INT32_MAX; break;
    case DType::Int16: lo = INT16_MIN; hi = INT16_MAX; break;
    case DType::Int8: lo = INT8_MIN; hi = INT8_MAX; break;
    case DType::UInt8: lo = 0; hi = 255; break;
    case DType::UInt16: lo = 0; hi = UINT16_MAX; break;
    case DType::UInt32: lo = 0; hi = UINT32_MAX; break;
    case DType::Bool: return irange(rng, 0, 1);
    default: break;
  }
  const int r = irange(rng, 0, 9);
  int64_t v;
  if (r < 3) v = pick<int64_t>(rng, {0, 1, -1, 2, -2, lo, hi, lo + 1, hi - 1});
  else if (r < 8) v = irange(rng, -20, 20);
  else v = std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  return std::clamp(v, lo, hi);
}

ScalarConst random_const(Rng& rng, DType dt) {
  ScalarConst c;
  c.dtype = dt;
  if (dtype_is_float(dt)) c.f = special_float(rng, dt);
  else c.i = special_int(rng, dt);
  return c;
}

Array random_values(Rng& rng, DType dt, int64_t n, bool broadcast) {
  Shape s;
  s.ndim = 1;
  s.dims[0] = n;
  Array a = Array::empty(dt, s);
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    T* p = a.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (broadcast && i > 0) {
        p[i] = p[0];
        continue;
      }
      if constexpr (std::is_floating_point_v<T>) p[i] = static_cast<T>(special_float(rng, dt));
      else if constexpr (std::is_same_v<T, bool>) p[i] = special_int(rng, dt) != 0;
      else p[i] = static_cast<T>(special_int(rng, dt));
    }
  });
  return a;
}

namespace {

// Appends `nnodes` random nodes (any op of scalar_ops.def, respecting the
// type rules) to c.
void add_random_nodes(Rng& rng, Composite& c, int nnodes) {
  auto pick_value = [&](auto&& ok) -> int32_t {
    // Prefer recent values (deep chains), then any earlier value.
    const int32_t nv = c.num_values();
    for (int tries = 0; tries < 16; ++tries) {
      int32_t v = chance(rng, 0.5) ? nv - 1 - irange(rng, 0, std::min<int32_t>(3, nv - 1)) : irange(rng, 0, nv - 1);
      if (ok(c.value_dtype(v))) return v;
    }
    for (int32_t v = nv - 1; v >= 0; --v)
      if (ok(c.value_dtype(v))) return v;
    return -1;
  };
  auto any = [](DType) { return true; };
  auto non_float = [](DType t) { return !dtype_is_float(t); };

  for (int k = 0; k < nnodes; ++k) {
    const auto& info = interp::kScalarOps[irange(rng, 0, interp::kNumScalarOps - 1)];
    ScalarNode n{info.op, DType::Float64, {}};
    const int arity = info.arity >= 0 ? info.arity : irange(rng, 1, 4);
    switch (info.kind) {
      case OpKind::Same: {
        // Usually the first operand's dtype, as PyTensor's upcasting gives.
        const int32_t a = pick_value(any);
        n.dtype = chance(rng, 0.7) ? c.value_dtype(a) : random_dtype(rng);
        n.inputs.push_back(a);
        break;
      }
      case OpKind::Float: n.dtype = random_float_dtype(rng); break;
      case OpKind::Compare:
      case OpKind::Predicate: n.dtype = DType::Bool; break;
      case OpKind::Bitwise: {
        n.dtype = random_int_dtype(rng);
        if (pick_value(non_float) < 0) {  // make an integer operand first
          const int32_t src = pick_value(any);
          c.nodes.push_back(ScalarNode{ScalarOp::Cast, random_int_dtype(rng), {src}});
        }
        while (static_cast<int>(n.inputs.size()) < arity) n.inputs.push_back(pick_value(non_float));
        break;
      }
      case OpKind::Switch:
      case OpKind::Cast: n.dtype = random_dtype(rng); break;
    }
    while (static_cast<int>(n.inputs.size()) < arity) n.inputs.push_back(pick_value(any));
    c.nodes.push_back(std::move(n));
  }
}

// A value of dtype dt for a loop output: usually a node's, else any value's;
// if none has dt, a Cast node of a random value.
int32_t value_of_dtype(Rng& rng, Composite& c, DType dt) {
  std::vector<int32_t> nodes, others;
  for (int32_t v = 0; v < c.num_values(); ++v)
    if (c.value_dtype(v) == dt) (v >= c.first_node_value() ? nodes : others).push_back(v);
  if (!nodes.empty() && (others.empty() || chance(rng, 0.85))) return nodes[irange(rng, 0, int(nodes.size()) - 1)];
  if (!others.empty() && chance(rng, 0.7)) return others[irange(rng, 0, int(others.size()) - 1)];
  c.nodes.push_back(ScalarNode{ScalarOp::Cast, dt, {irange(rng, 0, c.num_values() - 1)}});
  return c.num_values() - 1;
}

}  // namespace

Composite random_composite(Rng& rng, const CompositeGenOptions& o) {
  Composite c;
  const int nin = irange(rng, 1, o.max_inputs);
  for (int k = 0; k < nin; ++k) c.inputs.push_back(random_dtype(rng));
  const int ncst = irange(rng, 0, o.max_constants);
  for (int k = 0; k < ncst; ++k) c.constants.push_back(random_const(rng, random_dtype(rng)));
  add_random_nodes(rng, c, irange(rng, 1, o.max_nodes));
  c.outputs.push_back(c.num_values() - 1);
  const int nout = irange(rng, 1, o.max_outputs);
  for (int k = 1; k < nout; ++k)
    c.outputs.push_back(chance(rng, 0.85) ? irange(rng, c.first_node_value(), c.num_values() - 1)
                                          : irange(rng, 0, c.num_values() - 1));
  return c;
}

interp::ScalarLoop random_loop(Rng& rng, const CompositeGenOptions& o) {
  interp::ScalarLoop l;
  l.n_steps = pick(rng, {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8});
  l.carried = irange(rng, 1, 3);
  l.until = chance(rng, 0.5);
  Composite& c = l.body;
  const int nconst_in = irange(rng, 0, 2);  // loop constants: inputs that are not carried
  for (int k = 0; k < l.carried + nconst_in; ++k) c.inputs.push_back(random_dtype(rng));
  const int ncst = irange(rng, 0, o.max_constants);
  for (int k = 0; k < ncst; ++k) c.constants.push_back(random_const(rng, random_dtype(rng)));
  add_random_nodes(rng, c, irange(rng, 0, std::max(1, o.max_nodes / 2)));
  for (int32_t j = 0; j < l.carried; ++j) c.outputs.push_back(value_of_dtype(rng, c, c.inputs[j]));
  if (l.until) {
    if (chance(rng, 0.6)) {
      // A comparison against a threshold, so loops often run a few steps.
      const int32_t a = chance(rng, 0.7) ? c.outputs[irange(rng, 0, l.carried - 1)] : irange(rng, 0, c.num_values() - 1);
      c.constants.push_back(random_const(rng, chance(rng, 0.5) ? c.value_dtype(a) : random_dtype(rng)));
      // The new constant is numbered after the inputs and old constants: shift node references.
      const int32_t cv = static_cast<int32_t>(c.inputs.size() + c.constants.size()) - 1;
      for (ScalarNode& n : c.nodes)
        for (int32_t& in : n.inputs)
          if (in >= cv) ++in;
      for (int32_t& out : c.outputs)
        if (out >= cv) ++out;
      const int32_t a2 = a >= cv ? a + 1 : a;
      const ScalarOp cmp = pick(rng, {ScalarOp::LT, ScalarOp::GT, ScalarOp::LE, ScalarOp::GE, ScalarOp::EQ, ScalarOp::NEQ});
      c.nodes.push_back(ScalarNode{cmp, DType::Bool, {a2, cv}});
      c.outputs.push_back(c.num_values() - 1);
    } else {
      c.outputs.push_back(value_of_dtype(rng, c, DType::Bool));
    }
  }
  return l;
}

Array random_steps(Rng& rng, DType dt, int64_t n, bool broadcast) {
  Array a = random_values(rng, dt, n, broadcast);
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T* p = a.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if (broadcast && i > 0) {
          p[i] = p[0];
          continue;
        }
        const int r = irange(rng, 0, 19);
        const int v = r < 2 ? irange(rng, -3, 0) : r < 17 ? irange(rng, 0, 9) : irange(rng, 10, 70);
        p[i] = static_cast<T>(std::is_signed_v<T> ? v : std::max(v, 0));
      }
    }
  });
  return a;
}

Composite single_op_composite(ScalarOp op, DType dt) {
  Composite c;
  const int arity = interp::op_info(op).arity < 0 ? 2 : interp::op_info(op).arity;
  ScalarNode n{op, dt, {}};
  for (int k = 0; k < arity; ++k) {
    c.inputs.push_back(dt);
    n.inputs.push_back(k);
  }
  c.nodes.push_back(n);
  c.outputs.push_back(arity);
  return c;
}

json value_json(DType dt, const void* p) {
  return dtype_dispatch(dt, [&](auto z) -> json {
    using T = decltype(z);
    T v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::is_same_v<T, bool>) return v;
    else if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return static_cast<double>(v);
    } else return static_cast<int64_t>(v);
  });
}

json composite_json(const Composite& c) {
  json j = {{"op", "Composite"}, {"inputs", json::array()}, {"constants", json::array()},
            {"nodes", json::array()}, {"outputs", c.outputs}};
  for (DType t : c.inputs) j["inputs"].push_back(std::string(dtype_name(t)));
  for (const ScalarConst& k : c.constants) {
    json v;
    if (dtype_is_float(k.dtype)) v = value_json(DType::Float64, &k.f);
    else if (k.dtype == DType::Bool) v = k.i != 0;
    else v = k.i;
    j["constants"].push_back({{"dtype", std::string(dtype_name(k.dtype))}, {"value", v}});
  }
  for (const ScalarNode& n : c.nodes)
    j["nodes"].push_back({{"op", std::string(interp::op_info(n.op).name)},
                          {"inputs", n.inputs},
                          {"dtype", std::string(dtype_name(n.dtype))}});
  return j;
}

namespace {

// One Elemwise node applying scalar_op to `inputs` (n elements each; see
// elemwise_graph), giving outputs of the dtypes `outs`.
json one_node_graph(const json& scalar_op, const std::vector<DType>& outs_dt, const std::vector<Array>& inputs,
                    const std::vector<bool>& one, bool zero_d) {
  const int64_t n = inputs.empty() ? 1 : inputs[0].size();
  auto shape = [&](int64_t len) { return zero_d ? json::array() : json::array({len}); };
  json vars = json::array(), consts = json::array(), outs = json::array(), node_in = json::array(),
       node_out = json::array();
  for (size_t k = 0; k < inputs.size(); ++k) {
    const bool single = k < one.size() && one[k];
    const Array& a = inputs[k];
    vars.push_back({{"name", "x" + std::to_string(k)}, {"dtype", std::string(dtype_name(a.t.dtype))},
                    {"shape", shape(single ? 1 : n)}});
    json data = json::array();
    const size_t es = dtype_size(a.t.dtype);
    for (int64_t i = 0; i < (single ? 1 : a.size()); ++i) data.push_back(value_json(a.t.dtype, static_cast<char*>(a.t.data) + i * es));
    consts.push_back({{"var", static_cast<int>(k)}, {"data", data}});
    node_in.push_back(static_cast<int>(k));
  }
  for (size_t k = 0; k < outs_dt.size(); ++k) {
    const int v = static_cast<int>(vars.size());
    vars.push_back({{"name", "y" + std::to_string(k)}, {"dtype", std::string(dtype_name(outs_dt[k]))}, {"shape", shape(n)}});
    outs.push_back(v);
    node_out.push_back(v);
  }
  return {{"format", "ember-graph"},
          {"version", 1},
          {"name", "fuzz case"},
          {"variables", vars},
          {"inputs", json::array()},
          {"outputs", outs},
          {"constants", consts},
          {"nodes", {{{"op", "Elemwise"}, {"inputs", node_in}, {"outputs", node_out},
                      {"attrs", {{"scalar_op", scalar_op}}}}}}};
}

std::vector<DType> output_dtypes(const Composite& c) {
  std::vector<DType> r;
  for (int32_t o : c.outputs) r.push_back(c.value_dtype(o));
  return r;
}

}  // namespace

json elemwise_graph(const Composite& c, const std::vector<Array>& inputs, const std::vector<bool>& one,
                    bool zero_d) {
  return one_node_graph(composite_json(c), output_dtypes(c), inputs, one, zero_d);
}

json loop_json(const interp::ScalarLoop& l) {
  json j = composite_json(l.body);
  j["op"] = "ScalarLoop";
  j["carried"] = l.carried;
  j["until"] = l.until;
  return j;
}

json loop_graph(const interp::ScalarLoop& l, const std::vector<Array>& inputs, const std::vector<bool>& one,
                bool zero_d) {
  return one_node_graph(loop_json(l), output_dtypes(l.body), inputs, one, zero_d);
}

json scan_graph(const Composite& c, const std::vector<Array>& inputs) {
  json g = elemwise_graph(c, inputs);
  const std::vector<DType> outs = output_dtypes(c);
  const int64_t n = inputs.empty() ? 1 : inputs[0].size();
  json inner_vars = json::array(), inner_in = json::array(), inner_out = json::array();
  for (DType t : c.inputs) {
    inner_in.push_back({{"var", static_cast<int>(inner_vars.size())}});
    inner_vars.push_back({{"dtype", std::string(dtype_name(t))}, {"shape", json::array()}});
  }
  for (DType t : outs) {
    inner_out.push_back(static_cast<int>(inner_vars.size()));
    inner_vars.push_back({{"dtype", std::string(dtype_name(t))}, {"shape", json::array()}});
  }
  json node_in = json::array();
  for (const json& i : inner_in) node_in.push_back(i["var"]);
  const json inner = {{"format", "ember-graph"}, {"version", 1}, {"variables", inner_vars}, {"inputs", inner_in},
                      {"outputs", inner_out}, {"constants", json::array()},
                      {"nodes", {{{"op", "Elemwise"}, {"inputs", node_in}, {"outputs", inner_out},
                                  {"attrs", {{"scalar_op", composite_json(c)}}}}}}};
  // Outer: n_steps and one length per output, as constants; the sequences
  // are elemwise_graph's input constants.
  json& node = g["nodes"][0];
  const int steps = static_cast<int>(g["variables"].size());
  g["variables"].push_back({{"dtype", "int64"}, {"shape", json::array()}});
  g["constants"].push_back({{"var", steps}, {"data", {n}}});
  json scan_in = json::array({steps});
  for (const json& v : node["inputs"]) scan_in.push_back(v);
  for (size_t k = 0; k < outs.size(); ++k) scan_in.push_back(steps);
  node = {{"op", "Scan"}, {"inputs", scan_in}, {"outputs", node["outputs"]},
          {"attrs", {{"n_seqs", static_cast<int>(inputs.size())}, {"n_nit_sot", static_cast<int>(outs.size())},
                     {"inner", inner}}}};
  return g;
}

std::string random_tensor_graph(Rng& rng) {
  // Variables carry static shapes; dims of size 1 broadcast in Elemwise.
  struct V { int id; std::vector<int64_t> shape; };
  json vars = json::array(), nodes = json::array(), inputs = json::array(), outs = json::array();
  std::vector<V> pool;
  auto add_var = [&](const std::vector<int64_t>& shape, const std::string& name = "") {
    json v = {{"dtype", "float64"}, {"shape", shape}};
    if (!name.empty()) v["name"] = name;
    vars.push_back(v);
    pool.push_back({static_cast<int>(vars.size()) - 1, shape});
    return pool.back();
  };
  const int nin = irange(rng, 1, 3);
  const int rank = irange(rng, 0, 2);
  for (int k = 0; k < nin; ++k) {
    std::vector<int64_t> s;
    for (int d = 0; d < rank; ++d) s.push_back(chance(rng, 0.3) ? 1 : irange(rng, 2, 4));
    inputs.push_back({{"var", add_var(s, "x" + std::to_string(k)).id}});
  }
  const int nnodes = irange(rng, 1, 6);
  for (int k = 0; k < nnodes; ++k) {
    const V a = pool[irange(rng, 0, static_cast<int>(pool.size()) - 1)];
    const int kind = irange(rng, 0, 3);
    if (kind == 0 && !a.shape.empty()) {  // Sum over one axis or all
      std::vector<int64_t> s;
      json axis;
      if (chance(rng, 0.5)) {
        const int ax = irange(rng, 0, static_cast<int>(a.shape.size()) - 1);
        axis = json::array({ax});
        for (size_t d = 0; d < a.shape.size(); ++d)
          if (static_cast<int>(d) != ax) s.push_back(a.shape[d]);
      } else {
        axis = nullptr;
      }
      const V o = add_var(s);
      nodes.push_back({{"op", "Sum"}, {"inputs", {a.id}}, {"outputs", {o.id}}, {"attrs", {{"axis", axis}}}});
    } else if (kind == 1) {  // DimShuffle: reverse the axes, add a broadcast axis in front
      json order = json::array({"x"});
      std::vector<int64_t> s = {1};
      for (int d = static_cast<int>(a.shape.size()) - 1; d >= 0; --d) {
        order.push_back(d);
        s.push_back(a.shape[d]);
      }
      const V o = add_var(s);
      nodes.push_back({{"op", "DimShuffle"}, {"inputs", {a.id}}, {"outputs", {o.id}}, {"attrs", {{"new_order", order}}}});
    } else {  // Elemwise with a same-rank partner, broadcasting where dims are 1
      const char* un[] = {"Exp", "Log1p", "Sqr", "Neg", "Sigmoid", "Softplus", "Tanh", "Abs"};
      const char* bin[] = {"Add", "Mul", "Sub", "TrueDiv", "ScalarMaximum", "Pow"};
      std::vector<const V*> mates;
      for (const V& b : pool)
        if (b.shape.size() == a.shape.size()) {
          bool ok = true;
          for (size_t d = 0; d < a.shape.size(); ++d)
            ok &= a.shape[d] == b.shape[d] || a.shape[d] == 1 || b.shape[d] == 1;
          if (ok) mates.push_back(&b);
        }
      if (kind == 2 || mates.empty()) {
        const V o = add_var(a.shape);
        nodes.push_back({{"op", "Elemwise"}, {"inputs", {a.id}}, {"outputs", {o.id}},
                         {"attrs", {{"scalar_op", {{"op", un[irange(rng, 0, 7)]}}}}}});
      } else {
        const V b = *mates[irange(rng, 0, static_cast<int>(mates.size()) - 1)];
        std::vector<int64_t> s(a.shape.size());
        for (size_t d = 0; d < s.size(); ++d) s[d] = std::max(a.shape[d], b.shape[d]);
        const V o = add_var(s);
        nodes.push_back({{"op", "Elemwise"}, {"inputs", {a.id, b.id}}, {"outputs", {o.id}},
                         {"attrs", {{"scalar_op", {{"op", bin[irange(rng, 0, 5)]}}}}}});
      }
    }
  }
  outs.push_back(pool.back().id);
  if (pool.size() > 2 && chance(rng, 0.5)) outs.push_back(pool[pool.size() - 2].id);
  json g = {{"format", "ember-graph"}, {"version", 1}, {"variables", vars}, {"inputs", inputs},
            {"outputs", outs},         {"constants", json::array()},       {"nodes", nodes}};
  return g.dump();
}

}  // namespace ember::fuzz
