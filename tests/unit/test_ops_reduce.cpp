// CAReduce (Sum, Prod, Max, Min, All, Any) and CumOp against NumPy fixtures,
// strided inputs, summation order properties and load-time rejection.
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "interp/scalar_op.hpp"
#include "reduce_fixture.hpp"

using namespace ember;
using namespace ember::test;
using namespace ember::test::rfx;
using Catch::Matchers::Contains;

namespace {

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

}  // namespace

TEST_CASE("careduce_sum_matches_numpy_every_axis_and_dtype") { CHECK(run_cases("reduce.json", "Sum_") > 80); }
TEST_CASE("careduce_prod_matches_numpy_every_axis_and_dtype") { CHECK(run_cases("reduce.json", "Prod_") > 80); }
TEST_CASE("careduce_max_min_match_numpy_every_axis_and_dtype") {
  CHECK(run_cases("reduce.json", "Max_") > 80);
  CHECK(run_cases("reduce.json", "Min_") > 80);
}
TEST_CASE("careduce_all_any_match_numpy_every_axis_and_dtype") {
  CHECK(run_cases("reduce.json", "All_") > 80);
  CHECK(run_cases("reduce.json", "Any_") > 80);
}
TEST_CASE("careduce_generic_scalar_op_form_matches_named_ops") {
  CHECK(run_cases("reduce.json", "CAReduce_") > 100);
}
TEST_CASE("careduce_propagates_nan_and_infinities_like_numpy") { CHECK(run_cases("reduce.json", "nan_") == 12); }
TEST_CASE("careduce_float32_accumulates_in_float64_unless_acc_dtype") {
  CHECK(run_cases("reduce.json", "sum_float32_") == 1);
  CHECK(run_cases("reduce.json", "sum_acc_dtype_") == 1);
}
TEST_CASE("careduce_large_inputs_cross_leaf_and_chunk_sizes") {
  CHECK(run_cases("reduce.json", "sum_large_") == 7);
  CHECK(run_cases("reduce.json", "max_large_") == 7);
}
TEST_CASE("careduce_empty_reductions_give_identity_or_raise_like_numpy") {
  CHECK(run_cases("reduce.json", "sum_empty_") == 2);
  CHECK(run_cases("reduce.json", "prod_empty_") == 1);
  CHECK(run_cases("reduce.json", "all_empty_") == 1);
  CHECK(run_cases("reduce.json", "any_empty_") == 1);
  CHECK(run_cases("reduce.json", "max_empty_") == 2);
  CHECK(run_cases("reduce.json", "min_empty_") == 1);
}
TEST_CASE("careduce_reads_reversed_and_transposed_views") {
  // Every fixture again, each input passed as a scrambled strided view.
  CHECK(run_cases("reduce.json", "", scrambled_view) > 700);
}

TEST_CASE("careduce_reads_zero_stride_broadcast_views") {
  auto p = Program::from_json(reduce_graph("Sum", "float64", "[2, 3, 4]", "float64", "[2, 4]", R"({"axis": [1]})"));
  Array base = Array::of<double>({2, {2, 4}}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor v = base.t;
  v.shape = Shape{3, {2, 3, 4}};
  v.strides[0] = 4;
  v.strides[1] = 0;
  v.strides[2] = 1;
  auto out = p->call({v});
  for (int i = 0; i < 8; ++i) CHECK(out[0].data<double>()[i] == 3.0 * (i + 1));
}

TEST_CASE("careduce_sum_bits_do_not_depend_on_layout") {
  // Column loop (sum over axis 0 of x) and row loop (axis 1 of x^T stored
  // contiguously) follow the same tree: identical bits.
  const int64_t R = 1000, C = 131;
  std::mt19937_64 gen(7);
  std::normal_distribution<double> nd;
  std::vector<double> x(R * C), xt(R * C);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) xt[c * R + r] = x[r * C + c] = nd(gen) * 1e3;
  auto p0 = Program::from_json(reduce_graph("Sum", "float64", "[1000, 131]", "float64", "[131]", R"({"axis": [0]})"));
  auto p1 = Program::from_json(reduce_graph("Sum", "float64", "[131, 1000]", "float64", "[131]", R"({"axis": [1]})"));
  Array a = Array::of<double>({2, {R, C}}, x), at = Array::of<double>({2, {C, R}}, xt);
  auto y0 = p0->call({a.t});
  auto y1 = p1->call({at.t});
  for (int64_t c = 0; c < C; ++c) {
    CHECK(bits(y0[0].data<double>()[c]) == bits(y1[0].data<double>()[c]));
    long double s = 0;
    for (int64_t r = 0; r < R; ++r) s += x[r * C + c];
    CHECK(std::abs(y0[0].data<double>()[c] - static_cast<double>(s)) <= 1e-9);
  }
}

TEST_CASE("careduce_sum_bits_do_not_depend_on_thread_count") {
  const int64_t n = 4'000'000;
  std::mt19937_64 gen(11);
  std::normal_distribution<double> nd(0.5, 3.0);
  std::vector<double> x(n);
  long double exact = 0;  // compensated reference
  long double comp = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = nd(gen);
    const long double y = x[i] - comp, t = exact + y;
    comp = (t - exact) - y;
    exact = t;
  }
  auto p = Program::from_json(reduce_graph("Sum", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto pc = Program::from_json(reduce_graph("Sum", "float64", "[2000, 2000]", "float64", "[2000]", R"({"axis": [0]})"));
  Array a = Array::of<double>({1, {n}}, x);
  Tensor m = a.t;
  m.shape = Shape{2, {2000, 2000}};
  m.strides[0] = 2000;
  m.strides[1] = 1;
  auto run = [&] { return std::make_pair(p->call({a.t})[0].data<double>()[0], pc->call({m})); };
  std::pair<double, std::vector<Array>> r1, r2, r8;
  tbb::task_arena arena(8);
  arena.execute([&] { r8 = run(); });
  {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 1);
    r1 = run();
  }
  {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 2);
    r2 = run();
  }
  CHECK(bits(r1.first) == bits(r2.first));
  CHECK(bits(r1.first) == bits(r8.first));
  CHECK(std::abs(r1.first - static_cast<double>(exact)) <= 1e-12 * std::abs(static_cast<double>(exact)));
  for (int64_t c = 0; c < 2000; ++c) {
    CHECK(bits(r1.second[0].data<double>()[c]) == bits(r2.second[0].data<double>()[c]));
    CHECK(bits(r1.second[0].data<double>()[c]) == bits(r8.second[0].data<double>()[c]));
  }
}

// The order documented in engine/ops/reduce_tree.hpp, written out independently:
// chunks of 65536, each a pairwise tree (split at n/2 rounded down to a
// multiple of 8) over leaves of <= 128 summed in 8 lanes, then the chunk
// partials by the same tree.
namespace {
double ref_leaf(const double* a, int64_t n) {
  if (n < 8) {
    double r = a[0];
    for (int64_t i = 1; i < n; ++i) r = r + a[i];
    return r;
  }
  double l[8];
  for (int k = 0; k < 8; ++k) l[k] = a[k];
  int64_t i = 8;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) l[k] = l[k] + a[i + k];
  double r = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  for (; i < n; ++i) r = r + a[i];
  return r;
}
double ref_tree(const double* a, int64_t n) {
  if (n <= 128) return ref_leaf(a, n);
  const int64_t h = (n / 2) / 8 * 8;
  const double left = ref_tree(a, h);
  return left + ref_tree(a + h, n - h);
}
double ref_sum(const std::vector<double>& x) {
  std::vector<double> parts;
  for (size_t lo = 0; lo < x.size(); lo += 65536)
    parts.push_back(ref_tree(x.data() + lo, std::min<int64_t>(65536, int64_t(x.size() - lo))));
  return ref_tree(parts.data(), int64_t(parts.size()));
}
}  // namespace

TEST_CASE("careduce_contiguous_sum_bits_follow_the_documented_tree") {
  std::mt19937_64 gen(5);
  std::normal_distribution<double> nd(0.3, 100.0);
  auto p = Program::from_json(reduce_graph("Sum", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 300; ++n) sizes.push_back(n);
  for (int64_t n : {1000, 1023, 4099, 34464, 65535, 65536, 65537, 100000, 131072, 131081, 200003}) sizes.push_back(n);
  for (int64_t n : sizes) {
    std::vector<double> x(static_cast<size_t>(n));
    for (double& v : x) v = nd(gen);
    Array a = Array::of<double>({1, {n}}, x);
    const double got = p->call({a.t})[0].data<double>()[0];
    INFO("n = " << n);
    CHECK(bits(got) == bits(ref_sum(x)));
  }
}

TEST_CASE("careduce_runs_from_many_threads_at_once_with_equal_bits") {
  const int64_t n = 300'000;
  std::vector<double> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = std::sin(0.001 * static_cast<double>(i)) * 1e3;
  auto p = Program::from_json(reduce_graph("Sum", "float64", "[600, 500]", "float64", "[500]", R"({"axis": [0]})"));
  Array a = Array::of<double>({2, {600, 500}}, x);
  const std::vector<Array> ref = p->call({a.t});
  std::vector<int> same(4, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      auto ws = p->make_workspace();
      int ok = 1;
      for (int k = 0; k < 5; ++k) {
        const Tensor& y = p->run(*ws, {&a.t, 1})[0];
        ok &= std::memcmp(y.data, ref[0].t.data, 500 * sizeof(double)) == 0;
      }
      same[t] = ok;
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < 4; ++t) CHECK(same[t] == 1);
}

TEST_CASE("careduce_rejects_axis_out_of_range_with_node_index") {
  const std::string g = reduce_graph("Sum", "float64", "[2, 3]", "float64", "[2]", R"({"axis": [2]})");
  CHECK_THROWS_AS(Program::from_json(g), LoadError);
  CHECK_THROWS_WITH(Program::from_json(g), Contains("node 0 (Sum)") && Contains("'axis'") && Contains("out of range"));
}

TEST_CASE("careduce_of_a_0d_input_takes_axis_0_or_minus_1_as_the_element") {
  // PyTensor treats a 0-d input as 1-d for the axis (normalize_reduce_axis):
  // Sum{axis=0} of a scalar (pm.CAR's logp) is the scalar.
  Array x = Array::of<double>({0, {}}, {-2.5});
  for (const char* op : {"Sum", "Prod", "Max", "Min"})
    for (const char* axis : {R"({"axis": [0]})", R"({"axis": [-1]})", R"({"axis": 0})"}) {
      INFO(op << " " << axis);
      auto p = Program::from_json(reduce_graph(op, "float64", "[]", "float64", "[]", axis));
      CHECK(p->call({x.t})[0].data<double>()[0] == -2.5);
    }
  Array i = Array::of<int32_t>({0, {}}, {7});
  auto sum = Program::from_json(reduce_graph("Sum", "int32", "[]", "int64", "[]", R"({"axis": [0]})"));
  CHECK(sum->call({i.t})[0].data<int64_t>()[0] == 7);
  Array b = Array::of<bool>({0, {}}, {true});
  auto all = Program::from_json(reduce_graph("All", "bool", "[]", "bool", "[]", R"({"axis": [0]})"));
  CHECK(all->call({b.t})[0].data<bool>()[0]);
  // As PyTensor: axis 1 is out of range, and 0 and -1 are one axis repeated.
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Sum", "float64", "[]", "float64", "[]", R"({"axis": [1]})")),
                    Contains("node 0 (Sum)") && Contains("'axis'") && Contains("out of range for an input of 0 dims"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Max", "float64", "[]", "float64", "[]", R"({"axis": [0, -1]})")),
                    Contains("node 0 (Max)") && Contains("repeated"));
}

TEST_CASE("careduce_rejects_repeated_axis_and_bad_axis_type") {
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Max", "float64", "[2, 3]", "float64", "[3]", R"({"axis": [0, -2]})")),
                    Contains("node 0 (Max)") && Contains("repeated"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Sum", "float64", "[2, 3]", "float64", "[3]", R"({"axis": "0"})")),
                    Contains("'axis'"));
}

TEST_CASE("careduce_rejects_wrong_output_rank_and_static_shape") {
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Sum", "float64", "[2, 3]", "float64", "[2, 3]", R"({"axis": [1]})")),
                    Contains("'outputs'") && Contains("leaves 1"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Sum", "float64", "[2, 3]", "float64", "[3]", R"({"axis": [1]})")),
                    Contains("'outputs'") && Contains("kept dim is 2"));
}

TEST_CASE("careduce_takes_the_scalar_ops_marked_reduce") {
  for (const interp::ScalarOpInfo& info : interp::kScalarOps) {
    const std::string dt = info.kind == interp::OpKind::Bitwise ? "bool" : "float64";
    const std::string g = reduce_graph("CAReduce", dt, "[2]", dt, "[]",
                                       R"({"axis": null, "scalar_op": {"op": ")" + std::string(info.name) + R"("}})");
    INFO(info.name);
    if (info.has(interp::opflag::Reduce)) CHECK_NOTHROW(Program::from_json(g));
    else CHECK_THROWS_WITH(Program::from_json(g), Contains("'scalar_op'") && Contains("CAReduce supports"));
  }
}

TEST_CASE("careduce_rejects_unknown_scalar_op_and_acc_dtype") {
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("CAReduce", "float64", "[2]", "float64", "[]",
                                                    R"({"axis": null, "scalar_op": {"op": "Sub"}})")),
                    Contains("node 0 (CAReduce)") && Contains("'scalar_op'") && Contains("Sub"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("Sum", "float64", "[2]", "float64", "[]",
                                                    R"({"axis": null, "acc_dtype": "complex128"})")),
                    Contains("'acc_dtype'"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("All", "bool", "[2]", "int64", "[]", R"({"axis": null})")),
                    Contains("must be bool"));
}

TEST_CASE("cumop_matches_numpy_every_axis_and_dtype") {
  CHECK(run_cases("cumop.json", "cum") == 36);
  CHECK(run_cases("cumop.json", "cum", scrambled_view) == 36);
}

TEST_CASE("cumop_rejects_axis_out_of_range_and_bad_mode_with_node_index") {
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("CumOp", "float64", "[2, 3]", "float64", "[2, 3]",
                                                    R"({"axis": 2, "mode": "add"})")),
                    Contains("node 0 (CumOp)") && Contains("'axis'") && Contains("out of range"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("CumOp", "float64", "[2, 3]", "float64", "[2, 3]",
                                                    R"({"axis": 1, "mode": "max"})")),
                    Contains("'mode'"));
  CHECK_THROWS_WITH(Program::from_json(reduce_graph("CumOp", "float64", "[2, 3]", "float64", "[2, 3]",
                                                    R"({"axis": null, "mode": "add"})")),
                    Contains("'outputs'"));
}
