// The model suite's graphs as PyTensor hands them over without fast_run
// (tests/data/models_unfused, tests/gen/export_models_unfused.py:
// canonicalize + stabilize, pt.grad) through the load-time passes: the bits
// of the unpassed graph, PyTensor's values of the fast_run graph
// (tests/data/models/<name>.values.json) to 1e-12, and at tail points finite
// wherever Ember's run of the fast_run graph is finite.
#include <cmath>
#include <filesystem>
#include <random>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"
#include "test_util.hpp"
#include "tools/differential.hpp"

using namespace ember;

namespace {

const Options::Passes kOff{false, false, false, false, false, false};

std::vector<Array> run(const Program& p, const std::vector<double>& x) {
  Array xa = Array::of<double>(Shape{1, {static_cast<int64_t>(x.size())}}, x);
  return p.call({xa.t});
}

bool same_bits(const std::vector<Array>& a, const std::vector<Array>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].t.dtype != b[k].t.dtype || a[k].size() != b[k].size()) return false;
    for (int64_t i = 0; i < a[k].size(); ++i)
      if (!fuzz::same_value(DType::Float64, a[k].data<double>() + i, b[k].data<double>() + i)) return false;
  }
  return true;
}

// Relative to the larger magnitude, or to the gradient's scale for entries
// that cancel to near zero.
bool near(double got, double want, double scale, double rtol) {
  if (got == want) return true;
  if (!std::isfinite(got) || !std::isfinite(want)) return false;
  return std::abs(got - want) <= rtol * std::max({std::abs(got), std::abs(want), scale * 1e-3});
}

void check_model(const std::string& name) {
  const auto ref = test::read_json(test::data_path("models/" + name + ".values.json"));
  const std::string unfused = test::data_path("models_unfused/" + name + ".embg");
  auto passed = Program::load(unfused);
  Options off_opts;
  off_opts.passes = kOff;
  auto raw = Program::load(unfused, off_opts);
  auto fast = Program::load(test::data_path("models/" + name + ".embg"));
  REQUIRE(passed->args().size() == 1);
  REQUIRE(passed->outputs().size() == 2);
  CHECK(passed->graph().nodes.size() < raw->graph().nodes.size());
  const int64_t n = ref["n_dim"].get<int64_t>();
  for (size_t k = 0; k < ref["points"].size(); ++k) {
    INFO(name << " point " << k);
    const auto x = ref["points"][k].get<std::vector<double>>();
    const auto got = run(*passed, x);
    CHECK(same_bits(got, run(*raw, x)));
    CHECK(near(got[0].data<double>()[0], ref["logp"][k].get<double>(), 1.0, 1e-12));
    const auto g = ref["grad"][k].get<std::vector<double>>();
    double scale = 0;
    for (double v : g) scale = std::max(scale, std::abs(v));
    REQUIRE(got[1].size() == n);
    for (int64_t i = 0; i < n; ++i) {
      INFO("grad[" << i << "] = " << got[1].data<double>()[i] << ", PyTensor " << g[i]);
      CHECK(near(got[1].data<double>()[i], g[i], scale, 1e-12));
    }
  }
  // Tail points: each coordinate far out (both signs), and random wide points.
  std::mt19937_64 rng(7);
  std::vector<std::vector<double>> tails;
  for (double far : {-30.0, -8.0, 8.0, 30.0, 300.0}) {
    auto x = ref["points"][0].get<std::vector<double>>();
    for (int64_t i = 0; i < n; ++i) {
      auto y = x;
      y[i] = far;
      tails.push_back(y);
    }
    tails.push_back(std::vector<double>(n, far / 10));
  }
  for (int r = 0; r < 20; ++r) {
    std::vector<double> y(n);
    for (double& v : y) v = std::normal_distribution<double>(0.0, 6.0)(rng);
    tails.push_back(y);
  }
  int checked = 0;
  for (const auto& x : tails) {
    std::vector<Array> want;
    try {
      want = run(*fast, x);
    } catch (const CallError&) {
      continue;
    }
    const auto got = run(*passed, x);
    CHECK(same_bits(got, run(*raw, x)));
    const double wl = want[0].data<double>()[0], gl = got[0].data<double>()[0];
    INFO(name << " tail point " << checked << ": logp " << gl << ", fast_run graph " << wl);
    if (std::isfinite(wl)) CHECK(std::isfinite(gl));
    if (std::isinf(wl)) CHECK(gl == wl);
    for (int64_t i = 0; i < n; ++i) {
      const double w = want[1].data<double>()[i], v = got[1].data<double>()[i];
      INFO("grad[" << i << "] = " << v << ", fast_run graph " << w);
      if (std::isfinite(w) && std::isfinite(wl)) CHECK(std::isfinite(v));
    }
    ++checked;
  }
  CHECK(checked > 0);
}

}  // namespace

TEST_CASE("passes_model_eight_schools_centered") { check_model("eight_schools_centered"); }
TEST_CASE("passes_model_eight_schools_noncentered") { check_model("eight_schools_noncentered"); }
TEST_CASE("passes_model_radon") { check_model("radon"); }
TEST_CASE("passes_model_logistic_glm") { check_model("logistic_glm"); }
TEST_CASE("passes_model_poisson_glm") { check_model("poisson_glm"); }
TEST_CASE("passes_model_studentt_regression") { check_model("studentt_regression"); }
TEST_CASE("passes_model_data_regression") { check_model("data_regression"); }
TEST_CASE("passes_model_seed_gamma") { check_model("seed_gamma"); }
TEST_CASE("passes_model_seed_lognormal") { check_model("seed_lognormal"); }
TEST_CASE("passes_model_seed_gamma_large") { check_model("seed_gamma_large"); }
TEST_CASE("passes_model_seed_lognormal_large") { check_model("seed_lognormal_large"); }

// The fuse pass tries a group's candidates latest first. In this gradient a
// (n,) division reads a member's output and that of an earlier node which
// joins the group only after the division was tried; refused for the path
// through that node then, the division must be tried again and join: one
// Elemwise fewer than without the retry (and no cycle: the bits are those of
// the graph without passes, checked in passes_model_studentt_regression).
TEST_CASE("passes_fuse_retries_a_node_refused_for_a_path_through_a_later_member") {
  auto passed = Program::load(test::data_path("models_unfused/studentt_regression.embg"));
  int elemwise = 0;
  for (const NodeSpec& nd : passed->graph().nodes) elemwise += nd.op == "Elemwise";
  CHECK(passed->graph().nodes.size() == 31);
  CHECK(elemwise == 7);
}
