// Random ScalarLoops in the differential runner (tools/differential.hpp):
// the loop kernel on every path against a per-element reference that runs
// the body as a plain Composite, the generator's coverage, the reference
// against hand-worked values, and checks that the runner and shrinker can
// fail on loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "tools/differential.hpp"
#include "interp/scalar_loop.hpp"

using namespace ember;
using namespace ember::fuzz;

namespace {

Array vec_f64(std::vector<double> v) { return Array::of(Shape{1, {static_cast<int64_t>(v.size())}}, v); }
template <class T> Array vec_of(std::vector<T> v) { return Array::of(Shape{1, {static_cast<int64_t>(v.size())}}, v); }

// x' = x + c (float64), i' = i + 1 (int8): a for loop with a loop constant c.
DiffCase for_loop_case(std::vector<int32_t> steps, std::vector<double> x, std::vector<int8_t> i, std::vector<double> c) {
  DiffCase dc;
  dc.c.inputs = {DType::Float64, DType::Int8, DType::Float64};
  interp::ScalarConst one;
  one.dtype = DType::Int8;
  one.i = 1;
  dc.c.constants = {one};
  dc.c.nodes = {{interp::ScalarOp::Add, DType::Float64, {0, 2}}, {interp::ScalarOp::Add, DType::Int8, {1, 3}}};
  dc.c.outputs = {4, 5};
  dc.loop = LoopShape{DType::Int32, 2, false};
  dc.inputs = {vec_of(steps), vec_f64(x), vec_of(i), vec_f64(c)};
  dc.broadcast.assign(4, false);
  dc.layout_seed = 3;
  return dc;
}

// s' = 2 s until s' >= lim.
DiffCase while_loop_case(std::vector<int64_t> steps, std::vector<double> s, std::vector<double> lim) {
  DiffCase dc;
  dc.c.inputs = {DType::Float64, DType::Float64};
  interp::ScalarConst two;
  two.dtype = DType::Float64;
  two.f = 2;
  dc.c.constants = {two};
  dc.c.nodes = {{interp::ScalarOp::Mul, DType::Float64, {0, 2}}, {interp::ScalarOp::GE, DType::Bool, {3, 1}}};
  dc.c.outputs = {3, 4};
  dc.loop = LoopShape{DType::Int64, 1, true};
  dc.inputs = {vec_of(steps), vec_f64(s), vec_f64(lim)};
  dc.broadcast.assign(3, false);
  dc.layout_seed = 5;
  return dc;
}

// A deliberately wrong loop kernel: the real one, but output 0 one ulp up
// wherever n_steps (int32) is 5 and the value is finite.
struct PlantedLoop : interp::ElemKernel {
  std::shared_ptr<const interp::LoopKernel> inner;
  static void call(const ElemKernel* self, int64_t n, const interp::StridedPtr* in, const interp::StridedPtr* out) {
    auto* k = static_cast<const PlantedLoop*>(self);
    k->inner->run(n, in, out);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t s = static_cast<const int32_t*>(in[0].data)[i * in[0].stride];
      double& y = static_cast<double*>(out[0].data)[i * out[0].stride];
      if (s == 5 && std::isfinite(y)) y = std::nextafter(y, INFINITY);
    }
  }
};

}  // namespace

TEST_CASE("differential_random_scalar_loops_every_path_agrees_with_per_element_reference", "[fuzz]") {
  Rng rng(20261130);
  int ran = 0;
  for (int it = 0; it < 200; ++it) {
    const uint64_t seed = rng();
    Rng crng(seed);
    const DiffCase dc = random_loop_case(crng);
    REQUIRE(dc.loop);
    const DiffResult r = run_case(dc);
    INFO("case seed " << seed << ": " << r.message);
    CHECK(r.ok);
    CHECK_FALSE(r.rejected);
    if (!r.ok || r.rejected) break;
    ++ran;
  }
  CHECK(ran == 200);
}

TEST_CASE("random_case_with_loop_fraction_mixes_scalar_loops_and_composites", "[fuzz]") {
  Rng rng(11);
  CompositeGenOptions go;
  go.loop_fraction = 0.3;
  int loops = 0;
  for (int it = 0; it < 200; ++it) loops += random_case(rng, go).loop.has_value();
  CHECK(loops > 30);
  CHECK(loops < 100);
  // Without loops, random_case draws the same Composites as before loops existed.
  Rng a(5), b(5);
  CHECK(composite_json(random_case(a).c) == composite_json(random_composite(b)));
}

TEST_CASE("random_scalar_loops_cover_until_constants_dtypes_and_trip_counts", "[fuzz]") {
  Rng rng(17);
  std::set<int> carried, consts;
  std::set<DType> steps_dt, carried_dt;
  int until = 0, stopped_early = 0, ran_out = 0, none_ran = 0, long_loops = 0;
  for (int it = 0; it < 600; ++it) {
    const DiffCase dc = random_loop_case(rng);
    const interp::ScalarLoop l = loop_of(dc);
    INFO(loop_json(l).dump());
    REQUIRE(l.validate().empty());
    carried.insert(l.carried);
    consts.insert(static_cast<int>(l.body.inputs.size()) - l.carried);
    steps_dt.insert(l.n_steps);
    for (int32_t j = 0; j < l.carried; ++j) carried_dt.insert(l.body.inputs[j]);
    until += l.until;
    const auto want = loop_reference(dc);
    for (int64_t i = 0; i < dc.n(); ++i) {
      const int64_t s = dtype_dispatch(l.n_steps, [&](auto z) -> int64_t {
        using T = decltype(z);
        return static_cast<int64_t>(dc.inputs[0].data<T>()[i]);
      });
      none_ran += s <= 0;
      long_loops += s > 9;
      if (l.until && s > 1) (want[l.carried].data<bool>()[i] ? stopped_early : ran_out)++;
    }
  }
  CHECK(carried == std::set<int>{1, 2, 3});
  CHECK(consts == std::set<int>{0, 1, 2});
  CHECK(steps_dt.size() == 5);
  CHECK(carried_dt.size() >= 7);
  CHECK(until > 200);
  CHECK(until < 400);
  CHECK(none_ran > 100);
  CHECK(long_loops > 100);
  CHECK(stopped_early > 100);  // `until` loops that stop on their condition...
  CHECK(ran_out > 100);        // ...and ones that run out of steps first
}

TEST_CASE("loop_reference_matches_hand_worked_values", "[fuzz]") {
  // x' = x + 0.5 n times; i' = i + 1 wraps int8 (120 + 10 = -126); n <= 0 runs nothing.
  const auto f = loop_reference(for_loop_case({0, 1, 5, 300, -3, 10}, {1, 1, 1, 1, 1, 0}, {0, 0, 120, 0, 7, 120},
                                              {0.5, 0.5, 0.5, 0.25, 9, 1}));
  const double x[] = {1, 1.5, 3.5, 76, 1, 10};
  const int8_t i[] = {0, 1, 125, 44, 7, -126};
  for (int k = 0; k < 6; ++k) {
    INFO("element " << k);
    CHECK(f[0].data<double>()[k] == x[k]);
    CHECK(f[1].data<int8_t>()[k] == i[k]);
  }
  // Doubling from 1 until >= 100 takes 7 steps (128); after 3 steps the
  // condition is still false; with 0 steps the loop reports true.
  const auto w = loop_reference(while_loop_case({1000, 3, 0, 7, 6}, {1, 1, 1, 1, 1}, {100, 100, 100, 100, 100}));
  const double s[] = {128, 8, 1, 128, 64};
  const bool done[] = {true, false, true, true, false};
  for (int k = 0; k < 5; ++k) {
    INFO("element " << k);
    CHECK(w[0].data<double>()[k] == s[k]);
    CHECK(w[1].data<bool>()[k] == done[k]);
  }
}

TEST_CASE("hand_written_loops_agree_on_every_path", "[fuzz]") {
  // Lanes with very different trip counts in one block: the packed lanes
  // drop out at different rounds.
  std::vector<int32_t> steps(700);
  std::vector<double> x(700), c(700);
  std::vector<int8_t> i(700);
  for (int k = 0; k < 700; ++k) {
    steps[k] = (k * 37) % 61 - 5;
    x[k] = k * 0.1;
    c[k] = 1.0 / (k + 1);
    i[k] = static_cast<int8_t>(k);
  }
  const DiffResult r = run_case(for_loop_case(steps, x, i, c));
  INFO(r.message);
  CHECK(r.ok);
  std::vector<int64_t> ws(600);
  std::vector<double> s(600), lim(600);
  for (int k = 0; k < 600; ++k) {
    ws[k] = k % 17;
    s[k] = 1 + k % 5;
    lim[k] = std::ldexp(1.0, k % 13);
  }
  const DiffResult q = run_case(while_loop_case(ws, s, lim));
  INFO(q.message);
  CHECK(q.ok);
}

TEST_CASE("planted_loop_kernel_fault_is_caught_and_shrunk_to_one_element", "[fuzz]") {
  DiffOptions o;
  o.loop_kernel = [](const interp::ScalarLoop& l) -> std::shared_ptr<const interp::ElemKernel> {
    auto k = std::make_shared<PlantedLoop>();
    k->fn = &PlantedLoop::call;
    k->inner = interp::LoopKernel::compile(l);
    return k;
  };
  std::vector<int32_t> steps(100, 3);
  steps[37] = 5;
  const DiffCase dc = for_loop_case(steps, std::vector<double>(100, 1.0), std::vector<int8_t>(100, 0),
                                    std::vector<double>(100, 0.25));
  const DiffResult r = run_case(dc, o);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Matchers::Contains("element 37"));
  const DiffCase small = shrink(dc, [&](const DiffCase& d) { return !run_case(d, o).ok; });
  CHECK(small.n() == 1);
  REQUIRE(small.loop);
  CHECK(small.inputs[0].data<int32_t>()[0] == 5);
  CHECK(run_case(small).ok);  // the real kernel agrees with the reference
}

TEST_CASE("loop_reproducer_graph_file_round_trips_loop_and_input_bits", "[fuzz]") {
  Rng rng(123);
  const auto dir = std::filesystem::temp_directory_path() / "ember_test_loop_fuzz";
  std::filesystem::create_directories(dir);
  for (int it = 0; it < 20; ++it) {
    const DiffCase dc = random_loop_case(rng);
    const std::string path = (dir / ("loop" + std::to_string(it) + ".json")).string();
    std::ofstream(path) << case_graph(dc).dump();
    const DiffCase back = case_from_graph(path);
    REQUIRE(back.loop);
    CHECK(loop_json(loop_of(back)) == loop_json(loop_of(dc)));
    CHECK(back.loop->n_steps == dc.loop->n_steps);
    REQUIRE(back.inputs.size() == dc.inputs.size());
    for (size_t k = 0; k < dc.inputs.size(); ++k) {
      REQUIRE(back.inputs[k].size() == dc.inputs[k].size());
      const size_t es = dtype_size(dc.inputs[k].t.dtype);
      for (int64_t i = 0; i < dc.n(); ++i)
        CHECK(same_value(dc.inputs[k].t.dtype, static_cast<char*>(dc.inputs[k].t.data) + i * es,
                         static_cast<char*>(back.inputs[k].t.data) + i * es));
    }
    CHECK(run_case(back).ok);
  }
  std::filesystem::remove_all(dir);
}
