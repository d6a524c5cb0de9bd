// Dot, Cholesky, SolveTriangular, Solve, MatrixInverse, Det, SLogDet and
// Blockwise against NumPy/SciPy fixtures, strided inputs and load checks.
#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "reduce_fixture.hpp"

using namespace ember;
using namespace ember::test;
using namespace ember::test::rfx;
using Catch::Matchers::Contains;

namespace {

std::string graph(const std::string& op, const std::string& vars, const std::string& ins, const std::string& outs,
                  const std::string& attrs) {
  return R"({"format": "ember-graph", "version": 1, "variables": )" + vars + R"(, "inputs": )" + ins +
         R"(, "outputs": )" + outs + R"(, "nodes": [{"op": ")" + op + R"(", "inputs": )" + ins +
         R"(, "outputs": )" + outs + R"(, "attrs": )" + attrs + "}]}";
}

}  // namespace

TEST_CASE("dot_matches_numpy_for_every_rank_and_dtype_combination") {
  CHECK(run_cases("linalg.json", "dot_") == 30);
  CHECK(run_cases("linalg.json", "dot_", scrambled_view) == 30);
}
TEST_CASE("cholesky_matches_scipy_and_reports_failures") {
  CHECK(run_cases("linalg.json", "cholesky_") == 6);
  CHECK(run_cases("linalg.json", "cholesky_", scrambled_view) == 6);
}
TEST_CASE("solve_triangular_matches_scipy") {
  CHECK(run_cases("linalg.json", "solve_triangular_") == 25);
  CHECK(run_cases("linalg.json", "solve_triangular_", scrambled_view) == 25);
}
TEST_CASE("solve_matches_scipy_for_gen_sym_pos") {
  CHECK(run_cases("linalg.json", "solve_") == 39);
  CHECK(run_cases("linalg.json", "solve_", scrambled_view) == 39);
}
TEST_CASE("inverse_det_slogdet_match_numpy") {
  CHECK(run_cases("linalg.json", "matrix_inverse") == 3);
  CHECK(run_cases("linalg.json", "det_") == 4);
  CHECK(run_cases("linalg.json", "slogdet_") == 3);
  CHECK(run_cases("linalg.json", "det_", scrambled_view) == 4);
}
TEST_CASE("blockwise_batches_linalg_ops_with_broadcast_batch_dims") {
  CHECK(run_cases("linalg.json", "blockwise_") == 9);
  CHECK(run_cases("linalg.json", "blockwise_", scrambled_view) == 9);
}

TEST_CASE("dot_rejects_misaligned_static_shapes_with_node_index") {
  const std::string g = graph("Dot",
                              R"([{"dtype": "float64", "shape": [2, 3]}, {"dtype": "float64", "shape": [4]},
                                  {"dtype": "float64", "shape": [2]}])",
                              "[0, 1]", "[2]", "{}");
  CHECK_THROWS_AS(Program::from_json(g), LoadError);
  CHECK_THROWS_WITH(Program::from_json(g), Contains("node 0 (Dot)") && Contains("inner dims differ"));
}

TEST_CASE("cholesky_rejects_non_square_and_bad_on_error") {
  CHECK_THROWS_WITH(Program::from_json(graph("Cholesky",
                                             R"([{"dtype": "float64", "shape": [2, 3]}, {"dtype": "float64", "shape": [2, 3]}])",
                                             "[0]", "[1]", "{}")),
                    Contains("node 0 (Cholesky)") && Contains("square"));
  CHECK_THROWS_WITH(Program::from_json(graph("Cholesky",
                                             R"([{"dtype": "float64", "shape": [2, 2]}, {"dtype": "float64", "shape": [2, 2]}])",
                                             "[0]", "[1]", R"({"on_error": "warn"})")),
                    Contains("'on_error'"));
  CHECK_THROWS_WITH(Program::from_json(graph("Cholesky",
                                             R"([{"dtype": "float64", "shape": [2, 2]}, {"dtype": "int64", "shape": [2, 2]}])",
                                             "[0]", "[1]", "{}")),
                    Contains("must be float"));
}

TEST_CASE("solve_rejects_bad_assume_a_and_b_ndim") {
  const std::string vars = R"([{"dtype": "float64", "shape": [3, 3]}, {"dtype": "float64", "shape": [3]},
                               {"dtype": "float64", "shape": [3]}])";
  CHECK_THROWS_WITH(Program::from_json(graph("Solve", vars, "[0, 1]", "[2]", R"({"assume_a": "diag", "b_ndim": 1})")),
                    Contains("node 0 (Solve)") && Contains("'assume_a'"));
  CHECK_THROWS_WITH(Program::from_json(graph("Solve", vars, "[0, 1]", "[2]", R"({"b_ndim": 2})")),
                    Contains("'inputs'"));
}

TEST_CASE("blockwise_rejects_unsupported_core_op_and_bad_signature") {
  const std::string vars = R"([{"dtype": "float64", "shape": [4, 3, 3]}, {"dtype": "float64", "shape": [4, 3, 3]}])";
  CHECK_THROWS_WITH(Program::from_json(graph("Blockwise", vars, "[0]", "[1]",
                                             R"J({"core_op": {"op": "Eig", "attrs": {}}, "signature": "(m,m)->(m,m)"})J")),
                    Contains("node 0 (Blockwise)") && Contains("'core_op'") && Contains("Eig"));
  CHECK_THROWS_WITH(Program::from_json(graph("Blockwise", vars, "[0]", "[1]",
                                             R"J({"core_op": {"op": "Cholesky", "attrs": {}}, "signature": "(m,m->(m,m)"})J")),
                    Contains("'signature'"));
  CHECK_THROWS_WITH(Program::from_json(graph("Blockwise", vars, "[0]", "[1]",
                                             R"J({"core_op": {"op": "Cholesky", "attrs": {"lower": "yes"}}, "signature": "(m,m)->(m,m)"})J")),
                    Contains("core_op.attrs.lower"));
  const std::string bad_batch = R"([{"dtype": "float64", "shape": [4, 3, 3]}, {"dtype": "float64", "shape": [5, 3, 2]},
                                    {"dtype": "float64", "shape": [null, 3, 2]}])";
  CHECK_THROWS_WITH(Program::from_json(graph("Blockwise", bad_batch, "[0, 1]", "[2]",
                                             R"J({"core_op": {"op": "Solve", "attrs": {"b_ndim": 2}}, "signature": "(m,m),(m,n)->(m,n)"})J")),
                    Contains("batch dim 0"));
}

TEST_CASE("blockwise_rejects_batch_dims_that_do_not_broadcast_at_call") {
  const std::string vars = R"([{"dtype": "float64", "shape": [null, 2, 2]}, {"dtype": "float64", "shape": [null, 2]},
                               {"dtype": "float64", "shape": [null, 2]}])";
  auto p = Program::from_json(graph("Blockwise", vars, "[0, 1]", "[2]",
                                    R"J({"core_op": {"op": "Solve", "attrs": {"b_ndim": 1}}, "signature": "(m,m),(m)->(m)"})J"));
  Array a = Array::of<double>({3, {2, 2, 2}}, {1, 0, 0, 1, 2, 0, 0, 2});
  Array b = Array::of<double>({2, {3, 2}}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH(p->call({a.t, b.t}), Contains("node 0 (Blockwise)") && Contains("do not broadcast"));
}

TEST_CASE("dot_reads_zero_stride_broadcast_views") {
  const std::string g = graph("Dot",
                              R"([{"dtype": "float64", "shape": [3, 4]}, {"dtype": "float64", "shape": [4, 2]},
                                  {"dtype": "float64", "shape": [3, 2]}])",
                              "[0, 1]", "[2]", "{}");
  auto p = Program::from_json(g);
  Array v = Array::of<double>({1, {4}}, {1, 2, 3, 4});
  Tensor a = v.t;  // every row is v
  a.shape = Shape{2, {3, 4}};
  a.strides[0] = 0;
  a.strides[1] = 1;
  Array b = Array::of<double>({2, {4, 2}}, {1, 0, 0, 1, 1, 1, 2, -1});
  auto out = p->call({a, b.t});
  for (int i = 0; i < 3; ++i) {
    CHECK(out[0].data<double>()[2 * i] == 1 + 3 + 8);
    CHECK(out[0].data<double>()[2 * i + 1] == 2 + 3 - 4);
  }
}
