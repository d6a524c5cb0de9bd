// The executor: broadcasting, call-boundary checks, buffer reuse, shared
// inputs, many threads on one program, and a hierarchical model's logp+grad.
#include <atomic>
#include <cstring>
#include <new>
#include <thread>

#include <catch2/catch.hpp>

#include "engine/c_api.hpp"
#include "ember/ember.hpp"
#include "engine/program/program_impl.hpp"
#include "graph_builder.hpp"
#include "scan_graphs.hpp"
#include "test_util.hpp"

using namespace ember;
using Catch::Matchers::Contains;

// Counts heap allocations while `g_counting` is set.
static std::atomic<bool> g_counting{false};
static std::atomic<long> g_allocs{0};
void* operator new(size_t n) {
  if (g_counting) ++g_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a) {
  if (g_counting) ++g_allocs;
  if (void* p = std::aligned_alloc(static_cast<size_t>(a), (n + static_cast<size_t>(a) - 1) / static_cast<size_t>(a) * static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  if (g_counting) ++g_allocs;
  return std::aligned_alloc(static_cast<size_t>(a), (n + static_cast<size_t>(a) - 1) / static_cast<size_t>(a) * static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

const char* kAddGraph = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "a", "dtype": "float64", "shape": [null, 1]},
                {"name": "b", "dtype": "float64", "shape": [1, null]},
                {"name": "c", "dtype": "float64", "shape": [null, null]}],
  "inputs": [0, 1], "outputs": [2],
  "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Add"}}}]})";

// A chain of n element-wise ops: y = exp(exp(...exp(x)...)) scaled down.
std::string chain_graph(int n) {
  nlohmann::json vars = nlohmann::json::array(), nodes = nlohmann::json::array();
  vars.push_back({{"name", "x"}, {"dtype", "float64"}, {"shape", {nullptr}}});
  for (int k = 0; k < n; ++k) {
    vars.push_back({{"dtype", "float64"}, {"shape", {nullptr}}});
    nodes.push_back({{"op", "Elemwise"}, {"inputs", {k}}, {"outputs", {k + 1}},
                     {"attrs", {{"scalar_op", {{"op", k % 2 ? "Neg" : "Sqr"}}}}}});
  }
  return nlohmann::json{{"format", "ember-graph"}, {"version", 1}, {"variables", vars}, {"inputs", {0}},
                        {"outputs", {n}}, {"nodes", nodes}}
      .dump();
}

}  // namespace

TEST_CASE("elemwise_broadcasts_column_against_row") {
  auto p = Program::from_json(kAddGraph);
  Array a = Array::of<double>({2, {3, 1}}, {1, 2, 3});
  Array b = Array::of<double>({2, {1, 4}}, {10, 20, 30, 40});
  auto out = p->call({a.t, b.t});
  REQUIRE(out[0].t.shape == Shape{2, {3, 4}});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) CHECK(out[0].data<double>()[i * 4 + j] == (i + 1) + 10.0 * (j + 1));
}

TEST_CASE("elemwise_reads_strided_argument_views") {
  auto p = Program::from_json(kAddGraph);
  // a: every other element of a 6-vector, as a (3, 1) view
  Array base = Array::of<double>({1, {6}}, {1, -1, 2, -1, 3, -1});
  Tensor a = base.t;
  a.shape = Shape{2, {3, 1}};
  a.strides[0] = 2;
  a.strides[1] = 1;
  Array b = Array::of<double>({2, {1, 2}}, {100, 200});
  auto out = p->call({a, b.t});
  CHECK(out[0].data<double>()[0] == 101);
  CHECK(out[0].data<double>()[1] == 201);
  CHECK(out[0].data<double>()[4] == 103);
  CHECK(out[0].data<double>()[5] == 203);
}

TEST_CASE("elemwise_outer_products_of_transposed_views_run_as_rows_with_exact_values") {
  // (n, 3, 1) * (n, 1, 3) from transposed (3, n) arguments: short strided inner
  // dims and a long contiguous outer one, run as rows along it (and as a
  // packed run below that length); every element is one product either way.
  for (int64_t n : {5, 63, 64, 200}) {
    INFO("n = " << n);
    test::GraphBuilder b;
    const int a = b.input("float64", {3, n});
    const int c = b.input("float64", {3, n});
    const int at = b.node("DimShuffle", {a}, "float64", {n, 3, 1}, {{"new_order", {1, 0, "x"}}});
    const int ct = b.node("DimShuffle", {c}, "float64", {n, 1, 3}, {{"new_order", {1, "x", 0}}});
    b.outputs = {b.ew("Mul", {at, ct}, "float64", {n, 3, 3})};
    auto p = Program::from_json(b.str(), test::unpassed());
    std::vector<double> av(3 * n), cv(3 * n);
    for (int64_t i = 0; i < 3 * n; ++i) av[i] = 0.5 + i, cv[i] = 1.0 / (1.0 + i);
    auto out = p->call({Array::of<double>({2, {3, n}}, av).t, Array::of<double>({2, {3, n}}, cv).t});
    const double* y = out[0].data<double>();
    bool all = true;
    for (int64_t r = 0; r < n; ++r)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) all = all && y[(r * 3 + i) * 3 + j] == av[i * n + r] * cv[j * n + r];
    CHECK(all);
  }
}

TEST_CASE("call_rejects_wrong_argument_count_dtype_and_rank_naming_the_argument") {
  auto p = Program::from_json(kAddGraph);
  Array a = Array::of<double>({2, {3, 1}}, {1, 2, 3});
  Array f32 = Array::of<float>({2, {1, 2}}, {1, 2});
  Array r1 = Array::of<double>({1, {2}}, {1, 2});
  CHECK_THROWS_WITH(p->call({a.t}), Contains("expected 2 arguments, got 1"));
  CHECK_THROWS_WITH(p->call({a.t, f32.t}), Contains("argument 1 ('b'): dtype float32"));
  CHECK_THROWS_WITH(p->call({a.t, r1.t}), Contains("argument 1 ('b'): 1 dims"));
  Array wrong_static = Array::of<double>({2, {3, 2}}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH(p->call({wrong_static.t, r1.t}), Contains("does not match the static shape"));
}

TEST_CASE("elemwise_rejects_shapes_that_do_not_broadcast_at_call") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "a", "dtype": "float64", "shape": [null]},
                  {"name": "b", "dtype": "float64", "shape": [null]},
                  {"name": "c", "dtype": "float64", "shape": [null]}],
    "inputs": [0, 1], "outputs": [2],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Mul"}}}]})";
  auto p = Program::from_json(g);
  Array a = Array::of<double>({1, {3}}, {1, 2, 3});
  Array b = Array::of<double>({1, {4}}, {1, 2, 3, 4});
  CHECK_THROWS_WITH(p->call({a.t, b.t}), Contains("node 0 (Elemwise): input shapes do not broadcast"));
}

TEST_CASE("buffer_plan_reuses_dead_buffers_in_a_chain") {
  auto p = Program::from_json(chain_graph(20));
  CHECK(p->impl().num_slots <= 3);
  Array x = Array::of<double>({1, {4}}, {0.5, -0.5, 0.25, 2});
  auto out = p->call({x.t});
  // ten rounds of sqr then neg: x -> -(x^2) -> x^4 ... ends at -(x^(2^10))
  for (int i = 0; i < 4; ++i) {
    double v = x.data<double>()[i];
    for (int k = 0; k < 20; ++k) v = k % 2 ? -v : v * v;
    CHECK(out[0].data<double>()[i] == v);
  }
}

// Heap allocations of 10 calls on one workspace after two warm-up calls.
static long allocs_of_steady_calls(const Program& p, const std::vector<Tensor>& args) {
  auto ws = p.make_workspace();
  p.run(*ws, args);
  p.run(*ws, args);
  g_allocs = 0;
  g_counting = true;
  for (int r = 0; r < 10; ++r) p.run(*ws, args);
  g_counting = false;
  return g_allocs;
}

TEST_CASE("repeated_calls_with_same_shapes_allocate_nothing") {
  Array x = Array::of<double>({1, {1000}}, std::vector<double>(1000, 0.999));
  CHECK(allocs_of_steady_calls(*Program::from_json(chain_graph(12)), {x.t}) == 0);
}

TEST_CASE("scan_steps_allocate_nothing_after_the_first_call") {
  auto p = Program::from_json(test::scan_graph());
  Array n = Array::of<int64_t>({0, {}}, {200}), a = Array::of<double>({0, {}}, {0.5});
  Array x = Array::of<double>({1, {200}}, std::vector<double>(200, 1.0));
  Array init = Array::of<double>({1, {201}}, std::vector<double>(201, 0.0));
  CHECK(allocs_of_steady_calls(*p, {n.t, x.t, init.t, a.t}) == 0);
}

TEST_CASE("shared_input_rebinds_without_reloading") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [2]},
                  {"name": "data", "dtype": "float64", "shape": [2]},
                  {"name": "y", "dtype": "float64", "shape": [2]}],
    "inputs": [{"var": 0}, {"var": 1, "shared": true}], "outputs": [2],
    "constants": [{"var": 1, "data": [1, 2]}],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Mul"}}}]})";
  auto p = Program::from_json(g);
  REQUIRE(p->args().size() == 1);
  REQUIRE(p->shared().size() == 1);
  Array x = Array::of<double>({1, {2}}, {3, 4});
  auto out = p->call({x.t});
  CHECK(out[0].data<double>()[1] == 8);
  Array d = Array::of<double>({1, {2}}, {10, 100});
  p->set_shared("data", d.t);
  out = p->call({x.t});
  CHECK(out[0].data<double>()[0] == 30);
  CHECK(out[0].data<double>()[1] == 400);
  CHECK_THROWS_WITH(p->set_shared("nope", d.t), Contains("no shared input named 'nope'"));
}

TEST_CASE("hierarchical_model_logp_and_grad_match_numpy") {
  auto p = Program::load(test::data_path("hierarchical_logp.json"));
  auto pts = test::read_json(test::data_path("hierarchical_expected.json"));
  for (const auto& pt : pts) {
    std::vector<double> x = pt["x"].get<std::vector<double>>();
    Array xa = Array::of<double>({1, {static_cast<int64_t>(x.size())}}, x);
    auto out = p->call({xa.t});
    CHECK(test::close(out[0].data<double>()[0], pt["logp"].get<double>(), 1e-12));
    auto g = pt["grad"].get<std::vector<double>>();
    REQUIRE(out[1].size() == static_cast<int64_t>(g.size()));
    for (size_t i = 0; i < g.size(); ++i) CHECK(test::close(out[1].data<double>()[i], g[i], 1e-12));
  }
}

TEST_CASE("eight_threads_calling_one_program_get_identical_bits") {
  auto p = Program::load(test::data_path("hierarchical_logp.json"));
  auto pts = test::read_json(test::data_path("hierarchical_expected.json"));
  std::vector<Array> xs, ref;
  for (const auto& pt : pts) {
    auto x = pt["x"].get<std::vector<double>>();
    xs.push_back(Array::of<double>({1, {static_cast<int64_t>(x.size())}}, x));
    auto out = p->call({xs.back().t});
    ref.push_back(out[1]);
    ref.push_back(out[0]);
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      auto ws = p->make_workspace();
      for (int r = 0; r < 200; ++r) {
        const size_t k = (r + t) % xs.size();
        std::vector<Tensor> args{xs[k].t};
        const auto& out = p->run(*ws, args);
        if (std::memcmp(out[1].data, ref[2 * k].t.data, ref[2 * k].size() * 8) != 0 ||
            std::memcmp(out[0].data, ref[2 * k + 1].t.data, 8) != 0)
          ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}

TEST_CASE("c_abi_repeated_logp_calls_allocate_nothing") {
  ember_program* c = wrap_for_c_abi(Program::load(test::data_path("hierarchical_logp.json")));
  auto pts = test::read_json(test::data_path("hierarchical_expected.json"));
  auto x = pts[0]["x"].get<std::vector<double>>();
  std::vector<double> grad(x.size());
  double logp = 0;
  for (int r = 0; r < 2; ++r) REQUIRE(ember_logp(x.size(), x.data(), grad.data(), &logp, c) == 0);
  g_allocs = 0;
  g_counting = true;
  int bad = 0;
  for (int r = 0; r < 20; ++r) bad += ember_logp(x.size(), x.data(), grad.data(), &logp, c) != 0;
  g_counting = false;
  CHECK(bad == 0);
  CHECK(g_allocs == 0);
  CHECK(test::close(logp, pts[0]["logp"].get<double>(), 1e-12));
  ember_program_free(c);
}

TEST_CASE("elemwise_flat_run_and_loop_nest_give_the_same_values") {
  // (3, 1) with a one-element (1, 1): one flat run; a strided (3, 1) view
  // or a zero-length input take the loop nest / the empty path.
  auto p = Program::from_json(kAddGraph);
  Array a = Array::of<double>({2, {3, 1}}, {1, 2, 3});
  Array b = Array::of<double>({2, {1, 1}}, {0.5});
  auto out = p->call({a.t, b.t});
  REQUIRE(out[0].t.shape == Shape{2, {3, 1}});
  CHECK(out[0].data<double>()[0] == 1.5);
  CHECK(out[0].data<double>()[1] == 2.5);
  CHECK(out[0].data<double>()[2] == 3.5);
  Array base = Array::of<double>({1, {6}}, {7, -1, 8, -1, 9, -1});
  Tensor v = base.t;
  v.shape = Shape{2, {3, 1}};
  v.strides[0] = 2;
  v.strides[1] = 1;
  out = p->call({v, b.t});
  CHECK(out[0].data<double>()[0] == 7.5);
  CHECK(out[0].data<double>()[1] == 8.5);
  CHECK(out[0].data<double>()[2] == 9.5);
  Array empty = Array::empty(DType::Float64, Shape{2, {0, 1}});
  out = p->call({empty.t, b.t});
  CHECK(out[0].t.shape == Shape{2, {0, 1}});
}

TEST_CASE("join_axis_0_of_contiguous_and_strided_pieces") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "a", "dtype": "float64", "shape": [null]},
                  {"name": "b", "dtype": "float64", "shape": [1]},
                  {"name": "c", "dtype": "float64", "shape": [null]},
                  {"name": "j", "dtype": "float64", "shape": [null]}],
    "inputs": [0, 1, 2], "outputs": [3],
    "nodes": [{"op": "Join", "inputs": [0, 1, 2], "outputs": [3], "attrs": {"axis": 0}}]})";
  auto p = Program::from_json(g);
  Array a = Array::of<double>({1, {2}}, {1, 2});
  Array b = Array::of<double>({1, {1}}, {3});
  Array base = Array::of<double>({1, {6}}, {4, -1, 5, -1, 6, -1});
  Tensor c = base.t;  // every other element: not contiguous
  c.shape = Shape{1, {3}};
  c.strides[0] = 2;
  auto out = p->call({a.t, b.t, c});
  REQUIRE(out[0].t.shape == Shape{1, {6}});
  for (int k = 0; k < 6; ++k) CHECK(out[0].data<double>()[k] == k + 1);
}
