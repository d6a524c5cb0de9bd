// PyMC models exported by python/ember (tests/data/models, written by
// python/ember/testing/nutpie_graph.py): ember's logp and gradient against
// PyTensor's values at 10 random points each.
#include <filesystem>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "test_util.hpp"

using namespace ember;

namespace {

void check_model(const std::string& name) {
  const auto ref = test::read_json(test::data_path("models/" + name + ".values.json"));
  auto p = Program::load(test::data_path("models/" + ref["graph"].get<std::string>()));
  const int64_t n = ref["n_dim"].get<int64_t>();
  REQUIRE(p->args().size() == 1);
  REQUIRE(p->outputs().size() == 2);
  for (size_t k = 0; k < ref["points"].size(); ++k) {
    INFO(name << " point " << k);
    auto x = ref["points"][k].get<std::vector<double>>();
    REQUIRE(static_cast<int64_t>(x.size()) == n);
    Array xa = Array::of<double>(Shape{1, {n}}, x);
    auto out = p->call({xa.t});
    CHECK(test::close(out[0].data<double>()[0], ref["logp"][k].get<double>(), 1e-10));
    auto g = ref["grad"][k].get<std::vector<double>>();
    REQUIRE(out[1].size() == n);
    for (int64_t i = 0; i < n; ++i) {
      INFO("grad[" << i << "]");
      CHECK(test::close(out[1].data<double>()[i], g[i], 1e-10));
    }
  }
}

}  // namespace

TEST_CASE("model_eight_schools_centered_matches_pytensor") { check_model("eight_schools_centered"); }
TEST_CASE("model_eight_schools_noncentered_matches_pytensor") { check_model("eight_schools_noncentered"); }
TEST_CASE("model_radon_matches_pytensor") { check_model("radon"); }
TEST_CASE("model_logistic_glm_matches_pytensor") { check_model("logistic_glm"); }
TEST_CASE("model_poisson_glm_matches_pytensor") { check_model("poisson_glm"); }
TEST_CASE("model_studentt_regression_matches_pytensor") { check_model("studentt_regression"); }
TEST_CASE("model_data_regression_matches_pytensor") { check_model("data_regression"); }
TEST_CASE("model_mvnormal_lkj_matches_pytensor") { check_model("mvnormal_lkj"); }
TEST_CASE("model_seed_gamma_matches_pytensor") { check_model("seed_gamma"); }
TEST_CASE("model_seed_lognormal_matches_pytensor") { check_model("seed_lognormal"); }
