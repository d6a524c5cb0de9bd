// Load-time fusion of one-element Elemwise runs (engine/program/fuse_elemwise.cpp):
// where it fuses, where it must not, and that fused programs give the
// unfused programs' bits (EMBER_FUSE=0 turns fusion off).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "engine/ops/elemwise.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/config.hpp"
#include "interp/vm.hpp"
#include "graph_builder.hpp"
#include "test_util.hpp"

using namespace ember;
using nlohmann::json;

namespace {

// Sets EMBER_FUSE for one scope.
struct FuseEnv {
  explicit FuseEnv(bool on) {
    setenv("EMBER_FUSE", on ? "1" : "0", 1);
    config_reload_for_tests();
  }
  ~FuseEnv() {
    unsetenv("EMBER_FUSE");
    config_reload_for_tests();
  }
};

using Builder = test::GraphBuilder;

std::shared_ptr<const Program> load(const std::string& doc, bool fuse) {
  FuseEnv env(fuse);
  return Program::from_json(doc, test::unpassed());
}

size_t num_steps(const Program& p) { return p.impl().steps.size(); }

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.shape.ndim != b.shape.ndim || a.size() != b.size()) return false;
  for (int d = 0; d < a.shape.ndim; ++d)
    if (a.shape.dims[d] != b.shape.dims[d]) return false;
  return std::memcmp(a.data, b.data, a.size() * dtype_size(a.dtype)) == 0;
}

// Runs the document fused and unfused; outputs must agree bit for bit.
std::vector<Array> run_both(const std::string& doc, std::initializer_list<Tensor> args, size_t* fused_steps = nullptr,
                            size_t* plain_steps = nullptr) {
  auto f = load(doc, true), u = load(doc, false);
  if (fused_steps) *fused_steps = num_steps(*f);
  if (plain_steps) *plain_steps = num_steps(*u);
  auto a = f->call(args), b = u->call(args);
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("output " << k);
    CHECK(same_bits(a[k].t, b[k].t));
  }
  return a;
}

}  // namespace

TEST_CASE("fuse_chain_of_0d_elemwise_into_one_node") {
  Builder b;
  const int x = b.input("float64", json::array());
  const int c = b.constant("float64", json::array(), {2.0});
  int v = b.ew("Mul", {x, c}, "float64", json::array());  // 2x
  v = b.ew("Add", {v, c}, "float64", json::array());      // 2x + 2
  v = b.ew("Neg", {v}, "float64", json::array());         // -(2x + 2)
  v = b.ew("Sqr", {v}, "float64", json::array());         // (2x + 2)^2
  b.outputs.push_back(v);
  Array xa = Array::of<double>(Shape{}, {1.5});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t}, &fs, &ps);
  CHECK(ps == 4);
  CHECK(fs == 1);
  CHECK(out[0].data<double>()[0] == 25.0);
}

// Per-group parameter work (log(exp(x_g) + 1) for each group g): the fused
// node's bytecode has the independent calls of each function together, so
// one-element JIT code calls the library once for them; the kernel keeps the
// Composite as built, and the bits are the unfused program's.
TEST_CASE("fuse_puts_independent_math_calls_of_one_function_together") {
  Builder b;
  constexpr int kGroups = 6;
  const int x = b.input("float64", {kGroups});
  const int one = b.constant("float64", json::array(), {1.0});
  std::vector<int> outs;
  for (int g = 0; g < kGroups; ++g) {
    const int xg = b.node("Subtensor", {x}, "float64", json::array(), {{"idx_list", {{{"type", "index"}, {"value", g}}}}});
    const int e = b.ew("Exp", {xg}, "float64", json::array());
    b.outputs.push_back(b.ew("Log", {b.ew("Add", {e, one}, "float64", json::array())}, "float64", json::array()));
  }
  Array xa = Array::of<double>(Shape{1, {kGroups}}, {-3.0, -0.5, 0.0, 0.25, 2.0, 40.0});
  size_t fs = 0;
  run_both(b.str(), {xa.t}, &fs);
  CHECK(fs == 1);
  auto p = load(b.str(), true);
  const auto* k = dynamic_cast<const ElemwiseKernel*>(p->impl().steps[0].kernel);
  REQUIRE(k != nullptr);
  auto longest = [](const std::vector<interp::ScalarOp>& ops, interp::ScalarOp op) {
    int best = 0, cur = 0;
    for (interp::ScalarOp o : ops) best = std::max(best, cur = o == op ? cur + 1 : 0);
    return best;
  };
  std::vector<interp::ScalarOp> built, code;
  for (const auto& n : k->composite().nodes) built.push_back(n.op);
  for (const auto& n : k->interpreter().bytecode().source.nodes) code.push_back(n.op);
  CHECK(longest(built, interp::ScalarOp::Exp) == 1);
  CHECK(longest(code, interp::ScalarOp::Exp) == kGroups);
  CHECK(longest(code, interp::ScalarOp::Log) == kGroups);
}

// Elements picked from constants (a model's data) are set in a fused node's
// operand table once per workspace; only the picks of arguments are looked
// up per call. Two calls with different arguments give the unfused bits.
TEST_CASE("fuse_sets_constant_inputs_once_and_looks_up_arguments_each_call") {
  Builder b;
  const int x = b.input("float64", {3});
  const int y = b.constant("float64", {3}, {1.5, -2.0, 4.25});
  auto pick = [&](int v, int k) {
    return b.node("Subtensor", {v}, "float64", json::array(), {{"idx_list", {{{"type", "index"}, {"value", k}}}}});
  };
  for (int k = 0; k < 3; ++k) {
    const int d = b.ew("Sub", {pick(x, k), pick(y, k)}, "float64", json::array());
    b.outputs.push_back(b.ew("Mul", {d, d}, "float64", json::array()));
  }
  auto p = load(b.str(), true);
  REQUIRE(num_steps(*p) == 1);
  const Step& st = p->impl().steps[0];
  CHECK(st.fixed_in.size() == 3);  // y[0], y[1], y[2]
  CHECK(st.live_in.empty());
  REQUIRE(st.live_picks.size() == 1);  // x[0], x[1], x[2]: x's shape checked once a call
  CHECK(st.live_picks[0].last - st.live_picks[0].first == 3);
  CHECK(st.live_picks[0].need == 3);
  for (double shift : {0.0, 10.0}) {
    Array xa = Array::of<double>(Shape{1, {3}}, {0.5 + shift, 1.0 + shift, -3.0 + shift});
    auto out = run_both(b.str(), {xa.t});
    REQUIRE(out.size() == 3);
    CHECK(out[0].data<double>()[0] == (0.5 + shift - 1.5) * (0.5 + shift - 1.5));
    CHECK(out[2].data<double>()[0] == (-3.0 + shift - 4.25) * (-3.0 + shift - 4.25));
    auto same = p->call({xa.t});
    CHECK(same_bits(same[1].t, out[1].t));
  }
}

// Picks of one vector share its shape check; each reads its element through
// the vector's own stride, and a vector shorter than a pick fails the call.
TEST_CASE("fuse_reads_picks_of_a_strided_vector_and_rejects_a_short_one") {
  Builder b;
  const int x = b.input("float64", {nullptr});
  // Declared (4,) whatever x's length: a graph whose static shape may lie.
  const int v = b.ew("Neg", {x}, "float64", {4});
  auto pick = [&](int k) {
    return b.node("Subtensor", {v}, "float64", json::array(), {{"idx_list", {{{"type", "index"}, {"value", k}}}}});
  };
  const int a = b.ew("Mul", {pick(0), pick(3)}, "float64", json::array());
  b.outputs.push_back(b.ew("Sub", {a, pick(1)}, "float64", json::array()));
  auto p = load(b.str(), true);
  REQUIRE(num_steps(*p) == 2);  // the Neg, then the fused picks
  REQUIRE(p->impl().steps[1].live_picks.size() == 1);
  CHECK(p->impl().steps[1].live_picks[0].need == 4);
  // Every other element of an 8-element buffer: x = [1, 3, 5, 7].
  std::vector<double> buf{1, -1, 3, -1, 5, -1, 7, -1};
  Tensor xs;
  xs.dtype = DType::Float64;
  xs.shape = Shape{1, {4}};
  xs.strides[0] = 2;
  xs.data = buf.data();
  CHECK(p->call({xs})[0].data<double>()[0] == (-1.0) * (-7.0) - (-3.0));
  Array shorter = Array::of<double>(Shape{1, {3}}, {1.0, 2.0, 3.0});
  CHECK_THROWS_WITH(p->call({shorter.t}), Catch::Contains("too small for the element"));
}

TEST_CASE("fuse_absorbs_dimshuffle_between_0d_and_1_element") {
  Builder b;
  const int x = b.input("float64", json::array());
  const int y = b.input("float64", {1});
  int e = b.ew("Exp", {x}, "float64", json::array());
  int d = b.node("DimShuffle", {e}, "float64", {1}, {{"new_order", {"x"}}});
  int s = b.ew("Add", {d, y}, "float64", {1});
  int back = b.node("DimShuffle", {s}, "float64", json::array(), {{"new_order", json::array()}});
  int r = b.ew("Log", {back}, "float64", json::array());
  b.outputs = {r, s};
  Array xa = Array::of<double>(Shape{}, {0.0}), ya = Array::of<double>(Shape{1, {1}}, {3.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
  CHECK(ps == 5);
  CHECK(fs == 1);
  CHECK(out[0].t.ndim() == 0);
  CHECK(out[0].data<double>()[0] == std::log(4.0));
  REQUIRE(out[1].t.ndim() == 1);
  CHECK(out[1].t.dim(0) == 1);
  CHECK(out[1].data<double>()[0] == 4.0);
}

TEST_CASE("fuse_keeps_values_used_by_other_nodes_and_graph_outputs") {
  // t = x + 1 feeds a Sum (not Elemwise) and is a graph output; u = t * t
  // has two clients inside the run; the last value is an output.
  Builder b;
  const int x = b.input("float64", json::array());
  const int one = b.constant("float64", json::array(), {1.0});
  const int t = b.ew("Add", {x, one}, "float64", json::array());
  const int u = b.ew("Mul", {t, t}, "float64", json::array());
  const int w = b.ew("Sub", {u, one}, "float64", json::array());
  const int z = b.ew("Add", {u, w}, "float64", json::array());
  const int mv = b.node("Sum", {t}, "float64", json::array(), {{"axis", nullptr}});
  b.outputs = {z, t, mv};
  Array xa = Array::of<double>(Shape{}, {2.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t}, &fs, &ps);
  CHECK(ps == 5);
  CHECK(fs == 2);  // the fused node and the Sum
  CHECK(out[0].data<double>()[0] == 17.0);
  CHECK(out[1].data<double>()[0] == 3.0);
  CHECK(out[2].data<double>()[0] == 3.0);
  // The fused node outputs t (Sum, graph output) and z, not u or w.
  auto p = load(b.str(), true);
  const Step& st = p->impl().steps[0];
  CHECK(st.out == std::vector<int>{t, z});
}

TEST_CASE("fuse_leaves_shapes_not_statically_one_element") {
  Builder b;
  const int x = b.input("float64", {nullptr});
  const int y = b.input("float64", {3});
  int v = b.ew("Exp", {x}, "float64", {nullptr});
  v = b.ew("Neg", {v}, "float64", {nullptr});
  int w = b.ew("Exp", {y}, "float64", {3});
  w = b.ew("Neg", {w}, "float64", {3});
  b.outputs = {v, w};
  Array xa = Array::of<double>(Shape{1, {1}}, {1.0}), ya = Array::of<double>(Shape{1, {3}}, {0.0, 1.0, 2.0});
  size_t fs = 0, ps = 0;
  run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
  CHECK(ps == 4);
  CHECK(fs == 4);
}

TEST_CASE("fuse_runs_after_inputs_from_later_non_elemwise_nodes") {
  // c = a2 + Sum(v) needs the Sum, which comes after a and a2: the fused node
  // runs after the Sum (nothing else reads a or a2 before it).
  Builder b;
  const int x = b.input("float64", json::array());
  const int v = b.input("float64", {3});
  const int a = b.ew("Exp", {x}, "float64", json::array());
  const int a2 = b.ew("Neg", {a}, "float64", json::array());
  const int s = b.node("Sum", {v}, "float64", json::array(), {{"axis", nullptr}});
  const int c = b.ew("Add", {a2, s}, "float64", json::array());
  const int d = b.ew("Mul", {c, a}, "float64", json::array());
  b.outputs = {d};
  Array xa = Array::of<double>(Shape{}, {0.0}), va = Array::of<double>(Shape{1, {3}}, {1.0, 2.0, 3.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t, va.t}, &fs, &ps);
  CHECK(ps == 5);
  CHECK(fs == 2);
  CHECK(out[0].data<double>()[0] == 5.0);
}

TEST_CASE("fuse_splits_where_a_value_is_read_before_a_later_input_exists") {
  // a2 feeds a MakeVector whose Sum feeds c: a and a2 must run before the
  // MakeVector, c after the Sum, so two fused nodes.
  Builder b;
  const int x = b.input("float64", json::array());
  const int a = b.ew("Exp", {x}, "float64", json::array());
  const int a2 = b.ew("Neg", {a}, "float64", json::array());
  const int mv = b.node("MakeVector", {a2}, "float64", {1});
  const int s = b.node("Sum", {mv}, "float64", json::array(), {{"axis", nullptr}});
  const int c = b.ew("Add", {a, s}, "float64", json::array());
  const int d = b.ew("Add", {c, a}, "float64", json::array());
  b.outputs = {d};
  Array xa = Array::of<double>(Shape{}, {0.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t}, &fs, &ps);
  CHECK(ps == 6);
  CHECK(fs == 4);
  CHECK(out[0].data<double>()[0] == 1.0);
}

TEST_CASE("fuse_gathers_one_element_steps_interleaved_with_vector_steps") {
  // Per group g (as a model with groups of observations): f_g = exp(x_g)
  // scales the vector v, its Sum s_g makes r_g = log(s_g), and t adds the
  // r_g. In this order the forward f_g and the backward r_g alternate with
  // vector steps; the fused schedule runs every f_g first and every r_g
  // together after the last Sum: two fused nodes, not one per group.
  Builder b;
  const int v = b.input("float64", {4});
  std::vector<int> r;
  for (int g = 0; g < 3; ++g) {
    const int x = b.input("float64", json::array());
    const int f = b.ew("Exp", {x}, "float64", json::array());
    const int f2 = b.ew("Neg", {f}, "float64", json::array());
    const int fd = b.node("DimShuffle", {f2}, "float64", {1}, {{"new_order", {"x"}}});
    const int w = b.ew("Mul", {v, fd}, "float64", {4});
    const int s = b.node("Sum", {w}, "float64", json::array(), {{"axis", nullptr}});
    const int a = b.ew("Abs", {s}, "float64", json::array());
    r.push_back(b.ew("Log", {a}, "float64", json::array()));
  }
  const int t1 = b.ew("Add", {r[0], r[1]}, "float64", json::array());
  const int t = b.ew("Add", {t1, r[2]}, "float64", json::array());
  b.outputs = {t};
  Array va = Array::of<double>(Shape{1, {4}}, {1.0, 2.0, 3.0, 4.0});
  Array x0 = Array::of<double>(Shape{}, {0.5}), x1 = Array::of<double>(Shape{}, {-1.0}),
        x2 = Array::of<double>(Shape{}, {2.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {va.t, x0.t, x1.t, x2.t}, &fs, &ps);
  CHECK(ps == 3 * 7 + 2);
  CHECK(fs == 2 + 3);  // two fused nodes, and per group its Mul (its Sum runs inside: fuse_reduce.cpp)
  const double want = std::log(10 * std::exp(0.5)) + std::log(10 * std::exp(-1.0)) + std::log(10 * std::exp(2.0));
  CHECK(std::abs(out[0].data<double>()[0] - want) < 1e-12);
}

TEST_CASE("fuse_keeps_each_scalar_ops_dtype") {
  // int8 wraps, float32 rounds per op: fusing must not widen either.
  Builder b;
  const int x = b.input("int8", json::array());
  const int f = b.input("float32", json::array());
  const int c = b.constant("int8", json::array(), {100});
  const int s = b.ew("Add", {x, c}, "int8", json::array());  // 100 + 100 wraps to -56
  const int sf = b.ew("Cast", {s}, "float32", json::array());
  const int g = b.ew("Mul", {f, f}, "float32", json::array());
  const int h = b.ew("Add", {g, sf}, "float32", json::array());
  const int d = b.ew("Cast", {h}, "float64", json::array());
  b.outputs = {d, s};
  Array xa = Array::of<int8_t>(Shape{}, {100}), fa = Array::of<float>(Shape{}, {1.1f});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t, fa.t}, &fs, &ps);
  CHECK(fs == 1);
  CHECK(out[1].data<int8_t>()[0] == -56);
  const float g32 = 1.1f * 1.1f;
  CHECK(out[0].data<double>()[0] == static_cast<double>(g32 + -56.0f));
}

TEST_CASE("fuse_off_with_ember_fuse_0") {
  Builder b;
  const int x = b.input("float64", json::array());
  int v = b.ew("Exp", {x}, "float64", json::array());
  v = b.ew("Neg", {v}, "float64", json::array());
  b.outputs = {v};
  CHECK(num_steps(*load(b.str(), false)) == 2);
  CHECK(num_steps(*load(b.str(), true)) == 1);
}

TEST_CASE("fuse_off_with_options_fuse_elemwise_false") {
  Builder b;
  const int x = b.input("float64", json::array());
  int v = b.ew("Exp", {x}, "float64", json::array());
  v = b.ew("Neg", {v}, "float64", json::array());
  b.outputs = {v};
  FuseEnv env(true);
  Options off;
  off.fuse_elemwise = false;
  auto u = Program::from_json(b.str(), test::unpassed(off)), f = Program::from_json(b.str(), test::unpassed());
  CHECK(num_steps(*u) == 2);
  CHECK(num_steps(*f) == 1);
  Array xa = Array::of<double>(Shape{}, {0.0});
  CHECK(u->call({xa.t})[0].data<double>()[0] == -1.0);
  CHECK(f->call({xa.t})[0].data<double>()[0] == -1.0);
  {
    FuseEnv env0(false);  // the environment still turns it off when the option is on
    CHECK(num_steps(*Program::from_json(b.str(), test::unpassed())) == 2);
  }
}

TEST_CASE("fuse_outputs_are_per_workspace_and_fresh_each_call") {
  // Two fused nodes around a Sum: the second reads the first's outputs.
  // Each workspace keeps its own values; a later call sees new inputs.
  Builder b;
  const int x = b.input("float64", {1});
  const int one = b.constant("float64", json::array(), {1.0});
  const int xs = b.node("DimShuffle", {x}, "float64", json::array(), {{"new_order", json::array()}});
  const int t = b.ew("Add", {xs, one}, "float64", json::array());  // x + 1
  const int u = b.ew("Mul", {t, t}, "float64", json::array());     // (x + 1)^2
  const int s = b.node("Sum", {t}, "float64", json::array(), {{"axis", nullptr}});
  const int w = b.ew("Add", {u, s}, "float64", json::array());     // (x + 1)^2 + x + 1
  const int z = b.ew("Mul", {w, t}, "float64", json::array());     // w (x + 1)
  b.outputs = {z, u};
  FuseEnv env(true);
  auto p = Program::from_json(b.str(), test::unpassed());
  CHECK(num_steps(*p) == 3);
  auto expect = [](double v) { return ((v + 1) * (v + 1) + (v + 1)) * (v + 1); };
  WorkspacePtr w1 = p->make_workspace(), w2 = p->make_workspace();
  Array a = Array::of<double>(Shape{1, {1}}, {2.0}), c = Array::of<double>(Shape{1, {1}}, {-3.0});
  const auto& r1 = p->run(*w1, std::vector<Tensor>{a.t});
  const auto& r2 = p->run(*w2, std::vector<Tensor>{c.t});
  CHECK(r1[0].at<double>(0) == expect(2.0));
  CHECK(r1[1].at<double>(0) == 9.0);
  CHECK(r2[0].at<double>(0) == expect(-3.0));
  CHECK(r2[1].at<double>(0) == 4.0);
  p->run(*w1, std::vector<Tensor>{c.t});
  CHECK(r1[0].at<double>(0) == expect(-3.0));
  CHECK(r2[0].at<double>(0) == expect(-3.0));
  p->run(*w2, std::vector<Tensor>{a.t});
  CHECK(r1[0].at<double>(0) == expect(-3.0));
  CHECK(r2[0].at<double>(0) == expect(2.0));
}

TEST_CASE("fuse_models_give_unfused_bits") {
  for (const char* name : {"eight_schools_centered", "eight_schools_noncentered", "radon", "logistic_glm",
                           "poisson_glm", "studentt_regression", "data_regression", "mvnormal_lkj", "seed_gamma",
                           "seed_lognormal", "seed_gamma_large", "seed_lognormal_large"}) {
    INFO(name);
    const auto ref = test::read_json(test::data_path(std::string("models/") + name + ".values.json"));
    const std::string path = test::data_path("models/" + ref["graph"].get<std::string>());
    std::shared_ptr<const Program> f, u;
    {
      FuseEnv on(true);
      f = Program::load(path, test::unpassed());
    }
    {
      FuseEnv off(false);
      u = Program::load(path, test::unpassed());
    }
    CHECK(num_steps(*f) <= num_steps(*u));
    const int64_t n = ref["n_dim"].get<int64_t>();
    for (size_t k = 0; k < ref["points"].size(); ++k) {
      INFO("point " << k);
      Array xa = Array::of<double>(Shape{1, {n}}, ref["points"][k].get<std::vector<double>>());
      auto a = f->call({xa.t}), b = u->call({xa.t});
      REQUIRE(a.size() == b.size());
      for (size_t o = 0; o < a.size(); ++o) CHECK(same_bits(a[o].t, b[o].t));
    }
  }
}

TEST_CASE("fuse_absorbs_subtensors_picking_one_element_by_literal_index") {
  // x[1], x[-1] (0-d) and x[2:3] (shape (1,)) of a static (4,) input feed a
  // scalar chain; x[1:] (3 elements) and y[0] of an unknown-length y do not.
  Builder b;
  const int x = b.input("float64", {4});
  const int y = b.input("float64", {nullptr});
  auto sub = [&](int in, json idx, json shape) { return b.node("Subtensor", {in}, "float64", shape, {{"idx_list", idx}}); };
  const int a = sub(x, {{{"type", "index"}, {"value", 1}}}, json::array());
  const int l = sub(x, {{{"type", "index"}, {"value", -1}}}, json::array());
  const int m = sub(x, {{{"type", "slice"}, {"start", 2}, {"stop", 3}, {"step", nullptr}}}, {1});
  const int rest = sub(x, {{{"type", "slice"}, {"start", 1}, {"stop", nullptr}, {"step", nullptr}}}, {3});
  const int y0 = sub(y, {{{"type", "index"}, {"value", 0}}}, json::array());
  const int s = b.ew("Sub", {a, l}, "float64", json::array());
  const int t = b.ew("Mul", {s, y0}, "float64", json::array());
  const int td = b.node("DimShuffle", {t}, "float64", {1}, {{"new_order", {"x"}}});
  const int u = b.ew("Add", {td, m}, "float64", {1});
  b.outputs = {u, rest};
  Array xa = Array::of<double>(Shape{1, {4}}, {10.0, 20.0, 30.0, 40.0});
  Array ya = Array::of<double>(Shape{1, {2}}, {0.5, 7.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
  CHECK(ps == 9);
  CHECK(fs == 3);  // x[1:], y[0], and the fused node
  CHECK(out[0].data<double>()[0] == 20.0);  // (20 - 40) * 0.5 + 30
  CHECK(out[1].data<double>()[2] == 40.0);
}

TEST_CASE("fuse_picked_element_from_strided_input_is_the_right_one") {
  // A transposed (view) matrix: the picked element must follow its strides.
  Builder b;
  const int x = b.input("float64", {2, 3});
  const int xt = b.node("DimShuffle", {x}, "float64", {3, 2}, {{"new_order", {1, 0}}});
  const int e = b.node("Subtensor", {xt}, "float64", json::array(),
                       {{"idx_list", {{{"type", "index"}, {"value", 2}}, {{"type", "index"}, {"value", 0}}}}});
  const int n = b.ew("Neg", {e}, "float64", json::array());
  const int r = b.ew("Exp", {n}, "float64", json::array());
  b.outputs = {r};
  Array xa = Array::of<double>(Shape{2, {2, 3}}, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t}, &fs, &ps);
  CHECK(ps == 4);
  CHECK(fs == 2);
  CHECK(out[0].data<double>()[0] == std::exp(-3.0));
}

TEST_CASE("fuse_absorbs_all_of_a_makevector_of_bools_only_when_that_is_its_only_use") {
  // ok = All([x > 0, y > 0]) picks x + y or -inf, PyTensor's domain check;
  // the second MakeVector is also a graph output, so its Any stays (the
  // MakeVector itself is packed: its elements are written by the fused node).
  Builder b;
  const int x = b.input("float64", json::array());
  const int y = b.input("float64", json::array());
  const int zero = b.constant("float64", json::array(), {0.0});
  const int ninf = b.constant("float64", json::array(), {"-inf"});
  const int gx = b.ew("GT", {x, zero}, "bool", json::array());
  const int gy = b.ew("GT", {y, zero}, "bool", json::array());
  const int mv = b.node("MakeVector", {gx, gy}, "bool", {2});
  const int ok = b.node("All", {mv}, "bool", json::array(), {{"axis", nullptr}});
  const int mv2 = b.node("MakeVector", {gx, gy}, "bool", {2});
  const int any = b.node("Any", {mv2}, "bool", json::array(), {{"axis", nullptr}});
  const int sum = b.ew("Add", {x, y}, "float64", json::array());
  const int r = b.ew("Switch", {ok, sum, ninf}, "float64", json::array());
  b.outputs = {r, any, mv2};
  size_t fs = 0, ps = 0;
  for (double yv : {2.0, -1.0}) {
    INFO("y = " << yv);
    Array xa = Array::of<double>(Shape{}, {1.0}), ya = Array::of<double>(Shape{}, {yv});
    auto out = run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
    CHECK(ps == 8);
    CHECK(fs == 2);  // the fused node and the Any
    CHECK(out[0].data<double>()[0] == (yv > 0 ? 3.0 : -INFINITY));
    CHECK(out[1].data<bool>()[0] == true);
  }
}

TEST_CASE("fuse_packs_join_and_makevector_of_one_element_values_into_one_output") {
  // j = Join(0, [a], [b], y) with a, b made in the run and y an input;
  // m = MakeVector(c, d); m[1] is read back inside the run.
  Builder b;
  const int x = b.input("float64", json::array());
  const int y = b.input("float64", {1});
  const int a = b.ew("Neg", {x}, "float64", json::array());
  const int ad = b.node("DimShuffle", {a}, "float64", {1}, {{"new_order", {"x"}}});
  const int bb = b.ew("Add", {ad, y}, "float64", {1});
  const int j = b.node("Join", {ad, bb, y}, "float64", {3}, {{"axis", 0}});
  const int c = b.ew("Sqr", {x}, "float64", json::array());
  const int m = b.node("MakeVector", {a, c}, "float64", {2});
  const int m1 = b.node("Subtensor", {m}, "float64", json::array(), {{"idx_list", {{{"type", "index"}, {"value", 1}}}}});
  const int r = b.ew("Add", {m1, x}, "float64", json::array());
  b.outputs = {j, m, r};
  Array xa = Array::of<double>(Shape{}, {3.0}), ya = Array::of<double>(Shape{1, {1}}, {0.5});
  size_t fs = 0, ps = 0;
  auto out = run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
  CHECK(ps == 8);
  CHECK(fs == 1);
  REQUIRE(out[0].size() == 3);
  CHECK(out[0].data<double>()[0] == -3.0);
  CHECK(out[0].data<double>()[1] == -2.5);
  CHECK(out[0].data<double>()[2] == 0.5);
  REQUIRE(out[1].size() == 2);
  CHECK(out[1].data<double>()[0] == -3.0);
  CHECK(out[1].data<double>()[1] == 9.0);
  CHECK(out[2].data<double>()[0] == 12.0);
}

TEST_CASE("fuse_random_graphs_give_unfused_bits") {
  // Random mixes of scalar chains, size-1 DimShuffles, element picks, packs
  // and vector nodes between them (Sum, broadcast Mul): the grouping must
  // keep every dependency, whatever the order.
  size_t removed = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    Builder b;
    std::vector<int> s0, s1, vec;  // 0-d, (1,), (3,) values
    s0.push_back(b.input("float64", json::array()));
    s1.push_back(b.input("float64", {1}));
    vec.push_back(b.input("float64", {3}));
    const char* un[] = {"Neg", "Tanh", "Sin", "Cos"};
    const char* bin[] = {"Add", "Mul", "Sub"};
    for (int k = 0; k < 30; ++k) {
      switch (rng() % 8) {
        case 0: s0.push_back(b.ew(un[pick(4)], {s0[pick(s0.size())]}, "float64", json::array())); break;
        case 1: s1.push_back(b.ew(un[pick(4)], {s1[pick(s1.size())]}, "float64", {1})); break;
        case 2: s0.push_back(b.ew(bin[pick(3)], {s0[pick(s0.size())], s0[pick(s0.size())]}, "float64", json::array())); break;
        case 3: s1.push_back(b.node("DimShuffle", {s0[pick(s0.size())]}, "float64", {1}, {{"new_order", {"x"}}})); break;
        case 4: s0.push_back(b.node("DimShuffle", {s1[pick(s1.size())]}, "float64", json::array(), {{"new_order", json::array()}})); break;
        case 5: vec.push_back(b.ew("Mul", {vec[pick(vec.size())], s1[pick(s1.size())]}, "float64", {3})); break;
        case 6: s0.push_back(b.node("Sum", {vec[pick(vec.size())]}, "float64", json::array(), {{"axis", nullptr}})); break;
        default:
          s0.push_back(b.node("Subtensor", {vec[pick(vec.size())]}, "float64", json::array(),
                              {{"idx_list", {{{"type", "index"}, {"value", static_cast<int>(pick(3))}}}}}));
      }
    }
    const int packed = b.node("MakeVector", {s0[pick(s0.size())], s0.back()}, "float64", {2});
    b.outputs = {s0.back(), s1.back(), vec.back(), packed, s0[pick(s0.size())]};
    Array x0 = Array::of<double>(Shape{}, {0.3}), x1 = Array::of<double>(Shape{1, {1}}, {-0.7});
    Array xv = Array::of<double>(Shape{1, {3}}, {0.1, 0.2, -0.4});
    size_t fs = 0, ps = 0;
    run_both(b.str(), {x0.t, x1.t, xv.t}, &fs, &ps);
    REQUIRE(fs <= ps);
    removed += ps - fs;
  }
  CHECK(removed >= 600);  // the pass did fuse (about 1300 of 60 x 31 nodes when written)
}
