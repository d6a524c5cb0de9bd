// The random graph generator and the differential runner (tools/differential.hpp):
// a short seeded run, and checks that the runner and shrinker can fail.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "tools/differential.hpp"
#include "tools/grad_fuzz.hpp"
#include "interp/vm.hpp"

using namespace ember;
using namespace ember::fuzz;

namespace {

// A deliberately wrong "tier": the interpreter, but output 0 is one ulp off
// wherever the Composite has a Sin node and the output is a finite float64.
struct OffByOneUlp : interp::ElemKernel {
  std::shared_ptr<const interp::Interpreted> inner;
  bool has_sin = false;
  bool float64_out = false;
  static void call(const ElemKernel* self, int64_t n, const interp::StridedPtr* in, const interp::StridedPtr* out) {
    auto* k = static_cast<const OffByOneUlp*>(self);
    k->inner->run(n, in, out);
    if (!k->has_sin || !k->float64_out) return;
    for (int64_t i = 0; i < n; ++i) {
      double& y = static_cast<double*>(out[0].data)[i * out[0].stride];
      if (std::isfinite(y)) y = std::nextafter(y, INFINITY);
    }
  }
};

std::vector<NamedKernel> off_by_one_tier(const interp::Composite& c) {
  auto k = std::make_shared<OffByOneUlp>();
  k->fn = &OffByOneUlp::call;
  k->inner = interp::Interpreted::compile(c);
  for (const auto& n : c.nodes) k->has_sin |= n.op == interp::ScalarOp::Sin;
  k->float64_out = c.value_dtype(c.outputs[0]) == DType::Float64;
  return {{"off-by-one", k}};
}

}  // namespace

TEST_CASE("differential_short_seeded_run_every_path_agrees", "[fuzz]") {
  Rng rng(20261129);
  int ran = 0;
  for (int it = 0; it < 300; ++it) {
    const uint64_t seed = rng();
    Rng crng(seed);
    const DiffCase dc = random_case(crng);
    const DiffResult r = run_case(dc);
    INFO("case seed " << seed << ": " << r.message);
    CHECK(r.ok);
    CHECK_FALSE(r.rejected);
    if (!r.ok || r.rejected) break;  // one report is enough; `ember fuzz` shrinks it
    ++ran;
  }
  CHECK(ran == 300);
}

TEST_CASE("random_composites_cover_every_scalar_op_and_dtype_and_validate", "[fuzz]") {
  Rng rng(7);
  std::set<interp::ScalarOp> ops;
  std::set<DType> dtypes, const_dtypes;
  bool multi_output = false;
  for (int it = 0; it < 3000; ++it) {
    const interp::Composite c = random_composite(rng);
    INFO(composite_json(c).dump());
    REQUIRE(c.validate() == "");
    for (const auto& n : c.nodes) {
      ops.insert(n.op);
      dtypes.insert(n.dtype);
    }
    for (const auto& k : c.constants) const_dtypes.insert(k.dtype);
    multi_output |= c.outputs.size() > 1;
  }
  CHECK(ops.size() == static_cast<size_t>(interp::kNumScalarOps));
  // Every dtype but uint64, which scalar code rejects (Composite::validate).
  CHECK(dtypes.size() == static_cast<size_t>(kNumDTypes) - 1);
  CHECK(const_dtypes.size() == static_cast<size_t>(kNumDTypes) - 1);
  CHECK(dtypes.count(DType::UInt64) == 0);
  CHECK(multi_output);
}

TEST_CASE("special_values_hit_nan_infinities_signed_zeros_subnormals_and_thresholds", "[fuzz]") {
  Rng rng(3);
  bool nan = false, pinf = false, ninf = false, nzero = false, sub = false, log1mexp_edge = false, softplus_edge = false;
  for (int i = 0; i < 20000; ++i) {
    const double v = special_float(rng, DType::Float64);
    nan |= std::isnan(v);
    pinf |= v == INFINITY;
    ninf |= v == -INFINITY;
    nzero |= v == 0 && std::signbit(v);
    sub |= std::fpclassify(v) == FP_SUBNORMAL;
    log1mexp_edge |= v == -0.6931471805599453;
    softplus_edge |= v == -37 || v == 18 || v == 33.3;
  }
  CHECK(nan);
  CHECK(pinf);
  CHECK(ninf);
  CHECK(nzero);
  CHECK(sub);
  CHECK(log1mexp_edge);
  CHECK(softplus_edge);
  bool fsub = false;
  for (int i = 0; i < 20000; ++i) fsub |= std::fpclassify(static_cast<float>(special_float(rng, DType::Float32))) == FP_SUBNORMAL;
  CHECK(fsub);
}

TEST_CASE("same_value_compares_nans_as_a_class_and_zeros_by_sign", "[fuzz]") {
  const double qnan = std::nan(""), other_nan = -std::nan("7"), pz = 0.0, nz = -0.0;
  CHECK(same_value(DType::Float64, &qnan, &other_nan));
  CHECK_FALSE(same_value(DType::Float64, &pz, &nz));
  const double one = 1, next = std::nextafter(1.0, 2.0);
  CHECK_FALSE(same_value(DType::Float64, &one, &next));
  const float fn = std::nanf(""), fz = 0.0f;
  CHECK(same_value(DType::Float32, &fn, &fn));
  CHECK_FALSE(same_value(DType::Float32, &fn, &fz));
}

TEST_CASE("differential_runner_catches_a_one_ulp_tier_and_shrinks_it", "[fuzz]") {
  // x0 float64 -> Exp, Sin, Add: the Sin path makes the fake tier wrong.
  interp::Composite c;
  c.inputs = {DType::Float64, DType::Int8};
  c.constants = {interp::ScalarConst{DType::Float32, 2.5, 0}};
  c.nodes = {{interp::ScalarOp::Exp, DType::Float64, {0}},
             {interp::ScalarOp::Sin, DType::Float64, {3}},
             {interp::ScalarOp::Add, DType::Float64, {4, 2}},
             {interp::ScalarOp::Cast, DType::Int16, {1}}};
  c.outputs = {5, 6};
  REQUIRE(c.validate() == "");
  DiffCase dc;
  dc.c = c;
  Rng rng(11);
  Array x = random_values(rng, DType::Float64, 40);
  for (int64_t i = 0; i < 40; ++i) x.data<double>()[i] = 0.25 * double(i + 1);
  dc.inputs = {x, random_values(rng, DType::Int8, 40)};
  dc.broadcast = {false, false};
  DiffOptions bad;
  bad.extra_tiers = off_by_one_tier;
  bad.check_program = false;
  const DiffResult r = run_case(dc, bad);
  REQUIRE_FALSE(r.ok);
  CHECK(r.message.find("off-by-one") != std::string::npos);
  const DiffCase small = shrink(dc, [&](const DiffCase& d) { return !run_case(d, bad).ok; });
  CHECK(small.n() == 1);
  CHECK(small.c.inputs.size() == 1);
  CHECK(small.c.outputs.size() == 1);
  bool has_sin = false;
  for (const auto& n : small.c.nodes) has_sin |= n.op == interp::ScalarOp::Sin;
  CHECK(has_sin);
  CHECK(small.c.nodes.size() <= 2);
  CHECK(run_case(small).ok);  // the interpreter itself agrees with itself
}

TEST_CASE("reproducer_graph_file_round_trips_composite_and_input_bits", "[fuzz]") {
  Rng rng(99);
  const auto dir = std::filesystem::temp_directory_path() / "ember_test_fuzz";
  std::filesystem::create_directories(dir);
  for (int it = 0; it < 20; ++it) {
    const DiffCase dc = random_case(rng);
    const std::string path = (dir / ("case" + std::to_string(it) + ".json")).string();
    std::ofstream(path) << elemwise_graph(dc.c, dc.inputs).dump();
    const DiffCase back = case_from_graph(path);
    CHECK(composite_json(back.c) == composite_json(dc.c));
    REQUIRE(back.inputs.size() == dc.inputs.size());
    for (size_t k = 0; k < dc.inputs.size(); ++k) {
      REQUIRE(back.inputs[k].size() == dc.inputs[k].size());
      const size_t es = dtype_size(dc.inputs[k].t.dtype);
      for (int64_t i = 0; i < dc.n(); ++i)
        CHECK(same_value(dc.inputs[k].t.dtype, static_cast<char*>(dc.inputs[k].t.data) + i * es,
                         static_cast<char*>(back.inputs[k].t.data) + i * es));
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("random_tensor_graphs_load_or_fail_with_a_load_error", "[fuzz]") {
  Rng rng(5);
  int loaded = 0;
  for (int it = 0; it < 100; ++it) {
    const std::string text = random_tensor_graph(rng);
    try {
      auto p = Program::from_json(text);
      ++loaded;
      std::vector<Array> args;
      std::vector<Tensor> views;
      for (const IOInfo& info : p->args()) {
        args.push_back(Array::empty(info.dtype, info.static_shape));
        views.push_back(args.back().t);
      }
      CHECK(p->call(views).size() == p->outputs().size());
    } catch (const LoadError& e) {
      // Only ops still missing from the build may be refused.
      INFO(text);
      CHECK(std::string(e.what()).find("not implemented") != std::string::npos);
    }
  }
  CHECK(loaded > 0);
}

TEST_CASE("gradient_fuzz_short_seeded_run_matches_central_differences", "[fuzz][gradient]") {
  Rng rng(1);  // `ember fuzz --gradient --seed 1` draws the same cases
  GradResult all;
  std::set<interp::ScalarOp> ops;
  bool multi_output = false, broadcast = false;
  for (int it = 0; it < 400; ++it) {
    const uint64_t seed = rng();
    Rng crng(seed);
    const GradCase gc = random_grad_case(crng);
    REQUIRE(gc.c.validate() == "");
    const GradResult r = run_grad_case(gc, crng);
    INFO("case seed " << seed << ": " << r.message);
    CHECK(r.ok);
    all.add(r);
    for (const auto& n : gc.c.nodes) ops.insert(n.op);
    multi_output |= gc.c.outputs.size() > 1;
    for (int64_t s : gc.sizes) broadcast |= s == 1 && gc.n > 1;
  }
  CHECK(all.checked > 3000);  // most entries compared, not skipped
  CHECK(all.not_smooth + all.excused < all.checked / 20);
  CHECK(ops.size() >= 60);
  CHECK(ops.count(interp::ScalarOp::Switch));
  CHECK(ops.count(interp::ScalarOp::GammaInc));
  CHECK(multi_output);
  CHECK(broadcast);
}

TEST_CASE("gradient_check_reports_a_wrong_gradient", "[fuzz][gradient]") {
  // A flat-point program whose "gradient" is d/dx sum(x sin x) with one sign
  // wrong: x cos x - sin x. The right one passes.
  auto program = [](const char* second_op) {
    nlohmann::json so = {{"op", "Composite"},
                         {"inputs", {"float64"}},
                         {"nodes", {{{"op", "Sin"}, {"inputs", {0}}, {"dtype", "float64"}},
                                    {{"op", "Mul"}, {"inputs", {0, 1}}, {"dtype", "float64"}},
                                    {{"op", "Cos"}, {"inputs", {0}}, {"dtype", "float64"}},
                                    {{"op", "Mul"}, {"inputs", {0, 3}}, {"dtype", "float64"}},
                                    {{"op", second_op}, {"inputs", {4, 1}}, {"dtype", "float64"}}}},
                         {"outputs", {2, 5}}};
    nlohmann::json doc = {
        {"format", "ember-graph"}, {"version", 1},
        {"variables", {{{"dtype", "float64"}, {"shape", {3}}, {"name", "_unconstrained_point"}},
                       {{"dtype", "float64"}, {"shape", {3}}}, {{"dtype", "float64"}, {"shape", {3}}},
                       {{"dtype", "float64"}, {"shape", nlohmann::json::array()}}}},
        {"inputs", {{{"var", 0}}}},
        {"outputs", {3, 2}},
        {"nodes", {{{"op", "Elemwise"}, {"inputs", {0}}, {"outputs", {1, 2}}, {"attrs", {{"scalar_op", so}}}},
                   {{"op", "Sum"}, {"inputs", {1}}, {"outputs", {3}}, {"attrs", {{"axis", nullptr}}}}}}};
    return Program::from_json(doc.dump());
  };
  const std::vector<double> x{0.4, -1.3, 2.2};
  const GradResult right = check_gradient_at(*program("Add"), x);
  CHECK(right.ok);
  CHECK(right.checked == 3);
  const GradResult wrong = check_gradient_at(*program("Sub"), x);
  CHECK_FALSE(wrong.ok);
  CHECK(wrong.message.find("gradient entry 0") != std::string::npos);
}
