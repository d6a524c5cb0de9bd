// Shape and layout ops: NumPy fixtures from tests/gen/gen_fixtures_ops_index.py, compared
// bit for bit (these ops only move or convert data), and graphs the loader
// must reject.
#include <catch2/catch.hpp>

#include <vector>

#include "ember/ember.hpp"
#include "ops_fixture.hpp"

using ember::test::run_fixture;

TEST_CASE("alloc_broadcasts_value") { run_fixture("alloc_broadcasts_value"); }

TEST_CASE("alloc_empty_is_zero_filled") { run_fixture("alloc_empty_is_zero_filled"); }

TEST_CASE("alloc_rejects_dims_that_contradict_static_shape") { run_fixture("alloc_rejects_dims_that_contradict_static_shape"); }

TEST_CASE("alloc_rejects_value_that_cannot_broadcast") { run_fixture("alloc_rejects_value_that_cannot_broadcast"); }

TEST_CASE("arange_matches_numpy_for_each_dtype") { run_fixture("arange_matches_numpy_for_each_dtype"); }

TEST_CASE("check_and_raise_reports_message") { run_fixture("check_and_raise_reports_message"); }

TEST_CASE("dimshuffle_rejects_dropping_non_broadcastable_axis") { run_fixture("dimshuffle_rejects_dropping_non_broadcastable_axis"); }

TEST_CASE("dimshuffle_rejects_repeated_axis") { run_fixture("dimshuffle_rejects_repeated_axis"); }

TEST_CASE("dimshuffle_transpose") { run_fixture("dimshuffle_transpose"); }

TEST_CASE("dimshuffle_x_and_drop") { run_fixture("dimshuffle_x_and_drop"); }

TEST_CASE("extract_diag_offsets_and_axes") { run_fixture("extract_diag_offsets_and_axes"); }

TEST_CASE("extract_diag_rejects_equal_axes") { run_fixture("extract_diag_rejects_equal_axes"); }

TEST_CASE("join_along_each_axis") { run_fixture("join_along_each_axis"); }

TEST_CASE("join_rejects_inputs_of_other_rank") { run_fixture("join_rejects_inputs_of_other_rank"); }

TEST_CASE("make_vector_converts_scalars") { run_fixture("make_vector_converts_scalars"); }

TEST_CASE("passthrough_ops_return_input") { run_fixture("passthrough_ops_return_input"); }

TEST_CASE("reshape_infers_minus_one_and_copies_strided_input") { run_fixture("reshape_infers_minus_one_and_copies_strided_input"); }

TEST_CASE("reshape_rejects_two_unknown_dims_in_constant_shape") { run_fixture("reshape_rejects_two_unknown_dims_in_constant_shape"); }

TEST_CASE("reshape_shape_from_input") { run_fixture("reshape_shape_from_input"); }

TEST_CASE("shape_and_shape_i") { run_fixture("shape_and_shape_i"); }

TEST_CASE("shape_i_rejects_axis_out_of_range") { run_fixture("shape_i_rejects_axis_out_of_range"); }

TEST_CASE("specify_shape_checks_dims") { run_fixture("specify_shape_checks_dims"); }

TEST_CASE("split_along_each_axis") { run_fixture("split_along_each_axis"); }

TEST_CASE("split_rejects_output_count_not_len_splits") { run_fixture("split_rejects_output_count_not_len_splits"); }

// A shape vector read through its stride: every other element of an int32
// input (a view, not a copy), and the output a view of x.
TEST_CASE("reshape_reads_a_strided_shape_vector") {
  using namespace ember;
  auto p = Program::from_json(R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [6]},
                  {"name": "s", "dtype": "int32", "shape": [4]},
                  {"dtype": "int32", "shape": [2]},
                  {"name": "y", "dtype": "float64", "shape": [null, null]}],
    "inputs": [{"var": 0}, {"var": 1}], "outputs": [3],
    "nodes": [{"op": "Subtensor", "inputs": [1], "outputs": [2],
               "attrs": {"idx_list": [{"type": "slice", "start": null, "stop": null, "step": 2}]}},
              {"op": "Reshape", "inputs": [0, 2], "outputs": [3], "attrs": {"ndim": 2}}]})");
  const std::vector<double> xs = {0, 1, 2, 3, 4, 5};
  Array x = Array::of<double>({1, {6}}, xs);
  Array s = Array::of<int32_t>({1, {4}}, std::vector<int32_t>{3, 99, -1, 99});
  const auto y = p->call({x.t, s.t})[0];
  REQUIRE(y.t.shape.ndim == 2);
  CHECK(y.t.shape.dims[0] == 3);
  CHECK(y.t.shape.dims[1] == 2);
  for (int i = 0; i < 6; ++i) CHECK(y.data<double>()[i] == xs[i]);
  Array bad = Array::of<int32_t>({1, {4}}, std::vector<int32_t>{4, 3, -1, 2});  // [4, -1]: 6 % 4 != 0
  CHECK_THROWS_WITH(p->call({x.t, bad.t}), Catch::Contains("cannot reshape array of size 6"));
}
