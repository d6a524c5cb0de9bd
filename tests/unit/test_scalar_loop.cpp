// Elemwise{ScalarLoop}: PyTensor's gradients that use it against mpmath and
// PyTensor's C backend (tests/gen/gen_fixtures_scalar_loop.py), the loop's
// semantics on hand-written loops with values worked out by hand, and
// load-time rejection of malformed loops.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "ops_fixture.hpp"
#include "test_util.hpp"

using namespace ember;
using namespace ember::test;
using Catch::Matchers::Contains;

namespace {

double elem(const Array& a, int64_t i) {
  return dtype_dispatch(a.t.dtype, [&](auto t) { return static_cast<double>(a.data<decltype(t)>()[i]); });
}

void check_close(const Array& got, const Array& want, double rtol, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = elem(got, i), w = elem(want, i);
    INFO("element " << i << ": got " << g << ", expected " << w);
    const bool ok = (std::isnan(g) && std::isnan(w)) || close(g, w, rtol) || std::abs(g - w) < 1e-300;
    CHECK(ok);
  }
}

// One Elemwise{ScalarLoop} node: inputs n_steps then the body's inputs, by
// default all vectors of unknown length; `shapes` gives each variable's
// static shape (inputs, then outputs) instead.
std::string loop_graph(const std::vector<std::string>& in_dtypes, const std::vector<std::string>& out_dtypes,
                       const std::string& scalar_op, const std::vector<std::string>& shapes = {}) {
  std::string vars, ins, outs, node_in, node_out;
  int v = 0;
  auto shape = [&](int k) { return k < static_cast<int>(shapes.size()) ? shapes[k] : std::string("[null]"); };
  for (const auto& d : in_dtypes) {
    vars += (v ? ", " : "") + std::string(R"({"dtype": ")") + d + R"(", "shape": )" + shape(v) + "}";
    ins += (v ? ", " : "") + std::to_string(v);
    ++v;
  }
  for (size_t k = 0; k < out_dtypes.size(); ++k, ++v) {
    vars += R"(, {"dtype": ")" + out_dtypes[k] + R"(", "shape": )" + shape(v) + "}";
    outs += (k ? ", " : "") + std::to_string(v);
  }
  return R"({"format": "ember-graph", "version": 1, "variables": [)" + vars + R"(],
    "inputs": [)" + ins + R"(], "outputs": [)" + outs + R"(],
    "nodes": [{"op": "Elemwise", "inputs": [)" + ins + R"(], "outputs": [)" + outs +
         R"(], "attrs": {"scalar_op": )" + scalar_op + "}}]}";
}

Array vec(std::vector<double> v) { return Array::of(Shape{1, {static_cast<int64_t>(v.size())}}, v); }
template <class T> Array vec_of(std::vector<T> v) { return Array::of(Shape{1, {static_cast<int64_t>(v.size())}}, v); }

// x' = x + c (float64), i' = i + 1 (int8): a for loop with a constant.
const char* kForLoop = R"({"op": "ScalarLoop", "carried": 2, "until": false,
  "inputs": ["float64", "int8", "float64"], "constants": [{"dtype": "int8", "value": 1}],
  "nodes": [{"op": "Add", "inputs": [0, 2], "dtype": "float64"},
            {"op": "Add", "inputs": [1, 3], "dtype": "int8"}],
  "outputs": [4, 5]})";

// s' = 2 s until s' >= lim.
const char* kWhileLoop = R"({"op": "ScalarLoop", "carried": 1, "until": true,
  "inputs": ["float64", "float64"], "constants": [{"dtype": "float64", "value": 2}],
  "nodes": [{"op": "Mul", "inputs": [0, 2], "dtype": "float64"},
            {"op": "GE", "inputs": [3, 1], "dtype": "bool"}],
  "outputs": [3, 4]})";

}  // namespace

TEST_CASE("scalar_loop_gradients_match_mpmath_and_pytensor") {
  const nlohmann::json fx = read_json(data_path("scalar_loop/grads.json"));
  REQUIRE(fx["cases"].size() >= 6);
  for (const auto& c : fx["cases"]) {
    const std::string name = c["name"].get<std::string>();
    INFO("case " << name);
    auto p = Program::from_json(c["graph"].dump());
    std::vector<Array> ins;
    for (const auto& a : c["inputs"]) ins.push_back(array_from_json(a));
    std::vector<Tensor> args;
    for (const Array& a : ins) args.push_back(a.t);
    auto out = p->call(std::span<const Tensor>(args));
    REQUIRE(out.size() == 1);
    check_close(out[0], array_from_json(c["mpmath"]), c["rtol_mpmath"].get<double>(), name + " vs mpmath");
    check_close(out[0], array_from_json(c["pytensor"]), c["rtol_pytensor"].get<double>(), name + " vs PyTensor");
  }
}

TEST_CASE("scalar_loop_for_runs_n_steps_and_wraps_small_ints") {
  auto p = Program::from_json(loop_graph({"int32", "float64", "int8", "float64"}, {"float64", "int8"}, kForLoop));
  // n_steps <= 0 runs nothing (PyTensor's C backend); 300 steps wrap int8.
  auto out = p->call({vec_of<int32_t>({0, 1, 5, 300, -3}).t, vec({1, 1, 1, 1, 1}).t,
                      vec_of<int8_t>({0, 0, 120, 0, 7}).t, vec({0.5, 0.5, 0.5, 0.25, 9}).t});
  const double x[] = {1, 1.5, 3.5, 76, 1};
  const int8_t i[] = {0, 1, 125, 44, 7};
  for (int k = 0; k < 5; ++k) {
    INFO("element " << k);
    CHECK(out[0].data<double>()[k] == x[k]);
    CHECK(out[1].data<int8_t>()[k] == i[k]);
  }
  // 120 + 10 wraps to -126.
  auto w = p->call({vec_of<int32_t>({10}).t, vec({0}).t, vec_of<int8_t>({120}).t, vec({1}).t});
  CHECK(w[1].data<int8_t>()[0] == -126);
}

TEST_CASE("scalar_loop_while_stops_at_condition_and_reports_it") {
  auto p = Program::from_json(loop_graph({"int64", "float64", "float64"}, {"float64", "bool"}, kWhileLoop));
  // From 1, doubling until >= 100 takes 7 steps (128). With 3 steps the
  // condition is still false; with 0 steps the loop reports true.
  auto out = p->call({vec_of<int64_t>({1000, 3, 0, 7, 6}).t, vec({1, 1, 1, 1, 1}).t, vec({100, 100, 100, 100, 100}).t});
  const double s[] = {128, 8, 1, 128, 64};
  const bool done[] = {true, false, true, true, false};
  for (int k = 0; k < 5; ++k) {
    INFO("element " << k);
    CHECK(out[0].data<double>()[k] == s[k]);
    CHECK(out[1].data<bool>()[k] == done[k]);
  }
}

TEST_CASE("scalar_loop_updates_all_carried_values_at_once") {
  // (a, b) -> (b, a + b): Fibonacci, F(10) = 55, F(11) = 89. And a swap whose
  // updates are the inputs themselves (outputs refer to input values).
  const char* fib = R"({"op": "ScalarLoop", "carried": 2,
    "inputs": ["float64", "float64"],
    "nodes": [{"op": "Add", "inputs": [0, 1], "dtype": "float64"}],
    "outputs": [1, 2]})";
  auto p = Program::from_json(loop_graph({"int16", "float64", "float64"}, {"float64", "float64"}, fib));
  auto out = p->call({vec_of<int16_t>({10, 1}).t, vec({0, 0}).t, vec({1, 1}).t});
  CHECK(out[0].data<double>()[0] == 55);
  CHECK(out[1].data<double>()[0] == 89);
  CHECK(out[0].data<double>()[1] == 1);
  CHECK(out[1].data<double>()[1] == 1);
  const char* swap = R"({"op": "ScalarLoop", "carried": 2, "until": false,
    "inputs": ["float32", "float32"], "nodes": [], "outputs": [1, 0]})";
  auto q = Program::from_json(loop_graph({"int8", "float32", "float32"}, {"float32", "float32"}, swap));
  auto s = q->call({vec_of<int8_t>({3, 4}).t, vec_of<float>({1.5f, 1.5f}).t, vec_of<float>({-2, -2}).t});
  CHECK(s[0].data<float>()[0] == -2);
  CHECK(s[1].data<float>()[0] == 1.5f);
  CHECK(s[0].data<float>()[1] == 1.5f);
  CHECK(s[1].data<float>()[1] == -2);
}

TEST_CASE("scalar_loop_broadcasts_n_steps_and_constants") {
  auto p = Program::from_json(loop_graph({"int32", "float64", "int8", "float64"}, {"float64", "int8"}, kForLoop));
  std::vector<double> x0(1000), c(1, 0.5);
  for (int k = 0; k < 1000; ++k) x0[k] = k;
  std::vector<int8_t> i0(1000, 0);
  auto out = p->call({vec_of<int32_t>({4}).t, vec(x0).t, vec_of<int8_t>(i0).t, vec(c).t});
  REQUIRE(out[0].size() == 1000);
  for (int k = 0; k < 1000; k += 37) CHECK(out[0].data<double>()[k] == k + 2.0);
  CHECK(out[1].data<int8_t>()[999] == 4);
}

TEST_CASE("scalar_loop_large_inputs_split_across_threads_give_the_same_values") {
  // Above the parallel threshold (2^16) the Elemwise driver runs chunks on
  // several threads, each with its own loop scratch.
  auto p = Program::from_json(loop_graph({"int64", "float64", "float64"}, {"float64", "bool"}, kWhileLoop));
  const int64_t n = 300000;
  std::vector<int64_t> steps(n);
  std::vector<double> s0(n), lim(n);
  for (int64_t k = 0; k < n; ++k) {
    steps[k] = k % 13;
    s0[k] = 1 + k % 3;
    lim[k] = 1 << (k % 11);
  }
  auto out = p->call({vec_of<int64_t>(steps).t, vec(s0).t, vec(lim).t});
  REQUIRE(out[1].size() == n);
  for (int64_t k = 0; k < n; ++k) {
    double s = s0[k];
    bool done = true;
    for (int64_t i = 0; i < steps[k]; ++i) {
      s *= 2;
      done = s >= lim[k];
      if (done) break;
    }
    if (out[0].data<double>()[k] != s || out[1].data<bool>()[k] != done) FAIL("element " << k);
  }
}

TEST_CASE("scalar_loop_malformed_entry_is_a_load_error_naming_the_node") {
  const std::vector<std::string> ins = {"int32", "float64", "int8", "float64"}, outs = {"float64", "int8"};
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string so = kForLoop;
    const auto at = so.find(from);
    REQUIRE(at != std::string::npos);
    return load_error(loop_graph(ins, outs, so.replace(at, from.size(), to)));
  };
  std::string msg = bad(R"("carried": 2,)", "");
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("attrs.scalar_op.carried"));
  msg = bad(R"("carried": 2,)", R"("carried": 9,)");
  CHECK_THAT(msg, Contains("attrs.scalar_op.carried"));
  msg = bad(R"("until": false)", R"("until": 1)");
  CHECK_THAT(msg, Contains("attrs.scalar_op.until"));
  // An update whose dtype differs from its carried value's.
  msg = bad(R"({"op": "Add", "inputs": [1, 3], "dtype": "int8"})", R"({"op": "Add", "inputs": [1, 3], "dtype": "int16"})");
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("outputs[1]"));
  // A body value used before it is defined.
  msg = bad(R"("inputs": [0, 2], "dtype": "float64")", R"("inputs": [0, 7], "dtype": "float64")");
  CHECK_THAT(msg, Contains("attrs.scalar_op"));
  CHECK_THAT(msg, Contains("scalar node 0"));
  // Until condition that is not bool, outputs that miss the condition.
  std::string so = kWhileLoop;
  so.replace(so.find(R"("dtype": "bool")"), 15, R"("dtype": "int8")");
  msg = load_error(loop_graph({"int64", "float64", "float64"}, {"float64", "bool"}, so));
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  msg = load_error(loop_graph({"int64", "float64", "float64"}, {"float64"}, kWhileLoop));
  CHECK_THAT(msg, Contains("field 'outputs'"));
  // A float trip count.
  msg = load_error(loop_graph({"float64", "float64", "int8", "float64"}, outs, kForLoop));
  CHECK_THAT(msg, Contains("field 'inputs[0]'"));
  CHECK_THAT(msg, Contains("n_steps"));
}

TEST_CASE("scalar_loop_output_static_shape_that_inputs_do_not_broadcast_to_is_a_load_error") {
  const std::vector<std::string> ins = {"int32", "float64", "int8", "float64"}, outs = {"float64", "int8"};
  // Inputs (1,), (3,), (1,), (3,) broadcast to (3,); an output declared (2,) would otherwise load.
  std::string msg = load_error(loop_graph(ins, outs, kForLoop, {"[1]", "[3]", "[1]", "[3]", "[3]", "[2]"}));
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("outputs[1]"));
  CHECK_THAT(msg, Contains("broadcast to 3 at dim 0"));
  // All inputs (1,): the outputs are (1,), never (4,).
  msg = load_error(loop_graph(ins, outs, kForLoop, {"[1]", "[1]", "[1]", "[1]", "[4]", "[1]"}));
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("outputs[0]"));
  // Known input sizes that cannot broadcast (n_steps (2,) against (3,)): named at the second.
  msg = load_error(loop_graph(ins, outs, kForLoop, {"[2]", "[3]", "[1]", "[1]", "[null]", "[null]"}));
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("inputs[1]"));
  CHECK_THAT(msg, Contains("does not broadcast with input 0"));
  // Shapes that do broadcast still load; an unknown dim next to a known 3 is 3.
  for (const auto& sh : std::vector<std::vector<std::string>>{{"[1]", "[3]", "[1]", "[3]", "[3]", "[3]"},
                                                              {"[null]", "[3]", "[1]", "[1]", "[3]", "[null]"},
                                                              {"[1]", "[1]", "[1]", "[1]", "[1]", "[1]"}})
    CHECK(load_error(loop_graph(ins, outs, kForLoop, sh)) == "(no error)");
  CHECK_THAT(load_error(loop_graph(ins, outs, kForLoop, {"[null]", "[3]", "[1]", "[1]", "[5]", "[null]"})),
             Contains("broadcast to 3 at dim 0"));
}
