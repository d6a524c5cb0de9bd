// CholeskySolve, LUFactor, LU, PivotToPermutations, Eigh, Eigvalsh, QR and
// SVD (engine/ops/linalg_decomp.cpp): values against SciPy's, invariants
// where signs are Eigen's, Blockwise, and load/call errors naming the node.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ember/ember.hpp"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

std::string graph(const std::string& op, const std::string& vars, const std::string& ins, const std::string& outs,
                  const std::string& attrs) {
  return R"({"format": "ember-graph", "version": 1, "variables": )" + vars + R"(, "inputs": )" + ins +
         R"(, "outputs": )" + outs + R"(, "nodes": [{"op": ")" + op + R"(", "inputs": )" + ins +
         R"(, "outputs": )" + outs + R"(, "attrs": )" + attrs + "}]}";
}

void check_values(const Array& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) CHECK(got.data<double>()[i] == Approx(want[i]).margin(tol));
}

const char* kSquare3 = R"({"dtype": "float64", "shape": [3, 3]})";

}  // namespace

TEST_CASE("lu_factor_matches_getrf_and_nans_a_singular_matrix") {
  auto p = Program::from_json(graph("LUFactor",
                                    std::string("[") + kSquare3 + ", " + kSquare3 +
                                        R"(, {"dtype": "int32", "shape": [3]}])",
                                    "[0]", "[1, 2]", "{}"));
  auto out = p->call({Array::of<double>({2, {3, 3}}, {1, 2, 3, 4, 5, 6, 7, 8, 10}).t});
  check_values(out[0], {7, 8, 10, 1.0 / 7, 6.0 / 7, 11.0 / 7, 4.0 / 7, 0.5, -0.5}, 1e-15);
  for (int i = 0; i < 3; ++i) CHECK(out[1].data<int32_t>()[i] == 2);
  out = p->call({Array::of<double>({2, {3, 3}}, {1, 2, 3, 2, 4, 6, 1, 1, 1}).t});
  for (int i = 0; i < 9; ++i) CHECK(std::isnan(out[0].data<double>()[i]));
}

TEST_CASE("lu_gives_p_l_u_with_a_equal_to_plu_and_rejects_non_finite_input") {
  auto p = Program::from_json(graph("LU",
                                    std::string("[") + kSquare3 + ", " + R"({"dtype": "int32", "shape": [3]}, )" +
                                        kSquare3 + ", " + kSquare3 + "]",
                                    "[0]", "[1, 2, 3]", R"({"p_indices": true})"));
  const std::vector<double> a = {1, 2, 3, 4, 5, 6, 7, 8, 10};
  auto out = p->call({Array::of<double>({2, {3, 3}}, {1, 2, 3, 4, 5, 6, 7, 8, 10}).t});
  const int32_t* pi = out[0].data<int32_t>();
  const double *L = out[1].data<double>(), *U = out[2].data<double>();
  for (int i = 0; i < 3; ++i)  // A = L[p] U
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += L[pi[i] * 3 + k] * U[k * 3 + j];
      CHECK(s == Approx(a[i * 3 + j]).margin(1e-14));
    }
  CHECK(L[1] == 0.0);
  CHECK(U[3] == 0.0);
  CHECK_THROWS_WITH(p->call({Array::of<double>({2, {3, 3}}, {1, 2, NAN, 4, 5, 6, 7, 8, 10}).t}),
                    Contains("node 0 (LU)") && Contains("infs or NaNs"));
}

TEST_CASE("pivot_to_permutations_and_its_bounds") {
  auto p = Program::from_json(graph("PivotToPermutations",
                                    R"([{"dtype": "int32", "shape": [null]}, {"dtype": "int64", "shape": [null]}])",
                                    "[0]", "[1]", R"({"inverse": false})"));
  auto out = p->call({Array::of<int32_t>({1, {5}}, {3, 3, 4, 4, 4}).t});
  const std::vector<int64_t> want = {1, 4, 3, 0, 2};  // argsort of p_inv = [3, 0, 4, 2, 1]
  for (int i = 0; i < 5; ++i) CHECK(out[0].data<int64_t>()[i] == want[i]);
  CHECK_THROWS_WITH(p->call({Array::of<int32_t>({1, {3}}, {0, 5, 2}).t}),
                    Contains("node 0 (PivotToPermutations)") && Contains("out of bounds"));
}

TEST_CASE("cho_solve_matches_scipy_and_batches") {
  auto p = Program::from_json(graph("CholeskySolve",
                                    std::string("[") + kSquare3 + R"(, {"dtype": "float64", "shape": [3]},
                                        {"dtype": "float64", "shape": [3]}])",
                                    "[0, 1]", "[2]", R"({"lower": true, "b_ndim": 1})"));
  auto out = p->call({Array::of<double>({2, {3, 3}}, {2, 0, 0, 0.5, 1.6583123951777, 0, 0, 0.6030226891555273,
                                                   1.2792042981336627}).t,
                      Array::of<double>({1, {3}}, {1, 2, 3}).t});
  check_values(out[0], {2.0 / 9, 1.0 / 9, 13.0 / 9}, 1e-13);
  auto b = Program::from_json(graph("Blockwise",
                                    R"([{"dtype": "float64", "shape": [2, 2, 2]}, {"dtype": "float64", "shape": [2]},
                                        {"dtype": "float64", "shape": [2, 2]}])",
                                    "[0, 1]", "[2]",
                                    R"J({"core_op": {"op": "CholeskySolve", "attrs": {"lower": false, "b_ndim": 1}},
                                         "signature": "(m,m),(m)->(m)"})J"));
  out = b->call({Array::of<double>({3, {2, 2, 2}}, {1, 0, 0, 1, 2, 0, 0, 4}).t, Array::of<double>({1, {2}}, {1, 2}).t});
  check_values(out[0], {1, 2, 0.25, 0.125}, 1e-15);
}

TEST_CASE("eigh_reconstructs_and_eigvalsh_matches_lapack") {
  auto p = Program::from_json(graph("Eigh",
                                    std::string("[") + kSquare3 + R"(, {"dtype": "float64", "shape": [3]}, )" +
                                        kSquare3 + "]",
                                    "[0]", "[1, 2]", R"({"UPLO": "U"})"));
  // Only the upper triangle is read: the lower one is garbage.
  const std::vector<double> s = {4, 1, 0, 1, 3, 1, 0, 1, 2};
  auto out = p->call({Array::of<double>({2, {3, 3}}, {4, 1, 0, 99, 3, 1, -7, 5, 2}).t});
  check_values(out[0], {1.2679491924311228, 3.0, 4.732050807568877}, 1e-14);
  const double *w = out[0].data<double>(), *v = out[1].data<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double a = 0, o = 0;
      for (int k = 0; k < 3; ++k) {
        a += v[i * 3 + k] * w[k] * v[j * 3 + k];
        o += v[k * 3 + i] * v[k * 3 + j];
      }
      CHECK(a == Approx(s[i * 3 + j]).margin(1e-14));
      CHECK(o == Approx(i == j ? 1.0 : 0.0).margin(1e-14));
    }
  auto q = Program::from_json(graph("Eigvalsh", std::string("[") + kSquare3 + R"(, {"dtype": "float32", "shape": [3]}])",
                                    "[0]", "[1]", "{}"));
  out = q->call({Array::of<double>({2, {3, 3}}, {4, 1, 0, 1, 3, 1, 0, 1, 2}).t});
  CHECK(out[0].data<float>()[2] == Approx(4.732050807568877).epsilon(1e-7));
  CHECK_THROWS_WITH(q->call({Array::of<double>({2, {3, 3}}, {4, 1, 0, 1, INFINITY, 1, 0, 1, 2}).t}),
                    Contains("node 0 (Eigvalsh)") && Contains("infs or NaNs"));
}

TEST_CASE("qr_matches_lapack_signs_included") {
  auto p = Program::from_json(graph("QR",
                                    R"([{"dtype": "float64", "shape": [3, 2]}, {"dtype": "float64", "shape": [3, 2]},
                                        {"dtype": "float64", "shape": [2, 2]}])",
                                    "[0]", "[1, 2]", R"({"mode": "economic"})"));
  auto out = p->call({Array::of<double>({2, {3, 2}}, {1, 2, 3, 4, 5, 6}).t});
  check_values(out[0], {-0.16903085094570325, 0.8970852271450607, -0.50709255283711, 0.27602622373694136,
                        -0.8451542547285166, -0.34503277967117696}, 1e-14);
  check_values(out[1], {-5.916079783099616, -7.437357441610946, 0.0, 0.828078671210825}, 1e-14);
}

TEST_CASE("svd_singular_values_and_batched_reconstruction") {
  auto p = Program::from_json(graph("SVD", R"([{"dtype": "float64", "shape": [2, 2]}, {"dtype": "float64", "shape": [2]}])",
                                    "[0]", "[1]", R"({"compute_uv": false})"));
  check_values(p->call({Array::of<double>({2, {2, 2}}, {3, 0, 4, 5}).t})[0], {6.70820393249937, 2.2360679774997894}, 1e-14);
  auto b = Program::from_json(graph("Blockwise",
                                    R"([{"dtype": "float64", "shape": [2, 3, 2]}, {"dtype": "float64", "shape": [2, 3, 3]},
                                        {"dtype": "float64", "shape": [2, 2]}, {"dtype": "float64", "shape": [2, 2, 2]}])",
                                    "[0]", "[1, 2, 3]",
                                    R"J({"core_op": {"op": "SVD", "attrs": {"full_matrices": true}},
                                         "signature": "(m,n)->(m,m),(k),(n,n)"})J"));
  const std::vector<double> a = {1, 2, 3, 4, 5, 6, -1, 0, 2, 1, 0, 3};
  Array x = Array::of<double>({3, {2, 3, 2}}, {1, 2, 3, 4, 5, 6, -1, 0, 2, 1, 0, 3});
  auto out = b->call({x.t});
  for (int n = 0; n < 2; ++n) {
    const double *U = out[0].data<double>() + 9 * n, *s = out[1].data<double>() + 2 * n,
                 *Vt = out[2].data<double>() + 4 * n;
    CHECK(s[0] >= s[1]);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j)
        CHECK(U[i * 3] * s[0] * Vt[j] + U[i * 3 + 1] * s[1] * Vt[2 + j] == Approx(a[6 * n + 2 * i + j]).margin(1e-14));
  }
}

TEST_CASE("decompositions_reject_bad_attributes_and_shapes_naming_the_field") {
  const std::string qr_vars = R"([{"dtype": "float64", "shape": [3, 2]}, {"dtype": "float64", "shape": [3, 2]}])";
  CHECK_THROWS_WITH(Program::from_json(graph("QR", qr_vars, "[0]", "[1]", R"({"mode": "reduced"})")),
                    Contains("node 0 (QR)") && Contains("'mode'") && Contains("reduced"));
  CHECK_THROWS_WITH(Program::from_json(graph("QR", qr_vars, "[0]", "[1]", R"({"mode": "r", "pivoting": true})")),
                    Contains("'pivoting'"));
  CHECK_THROWS_WITH(Program::from_json(graph("Blockwise",
                                             R"([{"dtype": "float64", "shape": [4, 3, 2]}, {"dtype": "float64", "shape": [4, 3, 2]}])",
                                             "[0]", "[1]",
                                             R"J({"core_op": {"op": "QR", "attrs": {"mode": "complete"}}, "signature": "(m,n)->(m,n)"})J")),
                    Contains("node 0 (Blockwise)") && Contains("core_op.attrs.mode"));
  const std::string lu_vars = std::string("[") + kSquare3 + ", " + kSquare3 + ", " + kSquare3 + "]";
  CHECK_THROWS_WITH(Program::from_json(graph("LU", lu_vars, "[0]", "[1, 2]", R"({"permute_l": true, "p_indices": true})")),
                    Contains("node 0 (LU)") && Contains("'p_indices'"));
  CHECK_THROWS_WITH(Program::from_json(graph("LU", lu_vars, "[0]", "[1, 2]", "{}")), Contains("'outputs'"));
  CHECK_THROWS_WITH(Program::from_json(graph("LUFactor", lu_vars, "[0]", "[1, 2]", "{}")),
                    Contains("node 0 (LUFactor)") && Contains("'outputs'"));
  CHECK_THROWS_WITH(Program::from_json(graph("LUFactor",
                                             std::string("[") + kSquare3 + ", " + kSquare3 +
                                                 R"(, {"dtype": "float64", "shape": [3]}])",
                                             "[0]", "[1, 2]", "{}")),
                    Contains("must be an integer"));
  const std::string eigh_vars = std::string("[") + kSquare3 + R"(, {"dtype": "float64", "shape": [3]}, )" + kSquare3 + "]";
  CHECK_THROWS_WITH(Program::from_json(graph("Eigh", eigh_vars, "[0]", "[1, 2]", R"({"UPLO": "X"})")),
                    Contains("node 0 (Eigh)") && Contains("'UPLO'"));
  CHECK_THROWS_WITH(Program::from_json(graph("Eigh", eigh_vars, "[0]", "[1, 2]", R"({"driver": "ev2"})")),
                    Contains("'driver'"));
  CHECK_THROWS_WITH(Program::from_json(graph("Eigh",
                                             R"([{"dtype": "float64", "shape": [3, 2]}, {"dtype": "float64", "shape": [3]},
                                                 {"dtype": "float64", "shape": [3, 3]}])",
                                             "[0]", "[1, 2]", "{}")),
                    Contains("square"));
  CHECK_THROWS_WITH(Program::from_json(graph("SVD", qr_vars, "[0]", "[1]", "{}")), Contains("node 0 (SVD)") && Contains("'outputs'"));
  CHECK_THROWS_WITH(Program::from_json(graph("CholeskySolve",
                                             std::string("[") + kSquare3 + R"(, {"dtype": "float64", "shape": [4]},
                                                 {"dtype": "float64", "shape": [4]}])",
                                             "[0, 1]", "[2]", R"({"b_ndim": 1})")),
                    Contains("node 0 (CholeskySolve)") && Contains("rows differ"));
}

TEST_CASE("decompositions_reject_non_square_input_at_call") {
  auto p = Program::from_json(graph("Eigvalsh", R"([{"dtype": "float64", "shape": [null, null]}, {"dtype": "float64", "shape": [null]}])",
                                    "[0]", "[1]", "{}"));
  CHECK_THROWS_WITH(p->call({Array::of<double>({2, {2, 3}}, {1, 2, 3, 4, 5, 6}).t}),
                    Contains("node 0 (Eigvalsh)") && Contains("square"));
}

TEST_CASE("blockwise_row_gather_permutes_each_batch_and_checks_bounds") {
  auto p = Program::from_json(graph("Blockwise",
                                    R"([{"dtype": "float64", "shape": [2, 3, 2]}, {"dtype": "int64", "shape": [2, 3]},
                                        {"dtype": "float64", "shape": [2, 3, 2]}])",
                                    "[0, 1]", "[2]",
                                    R"J({"core_op": {"op": "AdvancedSubtensor1", "attrs": {}},
                                         "signature": "(i00,i01),(i10)->(o00,o01)"})J"));
  auto out = p->call({Array::of<double>({3, {2, 3, 2}}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}).t,
                      Array::of<int64_t>({2, {2, 3}}, {2, 0, 1, -1, 1, 1}).t});
  check_values(out[0], {4, 5, 0, 1, 2, 3, 10, 11, 8, 9, 8, 9}, 0);
  CHECK_THROWS_WITH(p->call({Array::of<double>({3, {2, 3, 2}}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}).t,
                             Array::of<int64_t>({2, {2, 3}}, {0, 3, 1, 0, 0, 0}).t}),
                    Contains("node 0 (Blockwise)") && Contains("out of bounds"));
}
