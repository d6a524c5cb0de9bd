// Subtensor family: NumPy fixtures from tests/gen_fixtures_ops_index.py, compared
// bit for bit (these ops only move or convert data), and graphs the loader
// must reject.
#include <catch2/catch.hpp>

#include "ops_fixture.hpp"

using ember::test::run_fixture;

TEST_CASE("advanced_inc_subtensor1_duplicates_accumulate_like_add_at") { run_fixture("advanced_inc_subtensor1_duplicates_accumulate_like_add_at"); }

TEST_CASE("advanced_inc_subtensor_add_at_set_and_ignore_duplicates") { run_fixture("advanced_inc_subtensor_add_at_set_and_ignore_duplicates"); }

TEST_CASE("advanced_subtensor1_gathers_rows") { run_fixture("advanced_subtensor1_gathers_rows"); }

TEST_CASE("advanced_subtensor_mixes_arrays_slices_masks") { run_fixture("advanced_subtensor_mixes_arrays_slices_masks"); }

TEST_CASE("advanced_subtensor_rejects_float_index_array") { run_fixture("advanced_subtensor_rejects_float_index_array"); }

TEST_CASE("gather_with_small_int_indices_empty_and_transposed_input") { run_fixture("gather_with_small_int_indices_empty_and_transposed_input"); }

TEST_CASE("inc_subtensor_rejects_y_that_would_upcast_x") { run_fixture("inc_subtensor_rejects_y_that_would_upcast_x"); }

TEST_CASE("inc_subtensor_set_and_inc_broadcast_y") { run_fixture("inc_subtensor_set_and_inc_broadcast_y"); }

TEST_CASE("inc_with_narrower_y_dtype_and_reversed_input") { run_fixture("inc_with_narrower_y_dtype_and_reversed_input"); }

TEST_CASE("subtensor_index_out_of_bounds_is_call_error") { run_fixture("subtensor_index_out_of_bounds_is_call_error"); }

TEST_CASE("subtensor_negative_indices_and_chained_views") { run_fixture("subtensor_negative_indices_and_chained_views"); }

TEST_CASE("subtensor_rejects_array_entries") { run_fixture("subtensor_rejects_array_entries"); }

TEST_CASE("subtensor_rejects_missing_input_reference") { run_fixture("subtensor_rejects_missing_input_reference"); }

TEST_CASE("subtensor_rejects_too_many_indices_with_node_index") { run_fixture("subtensor_rejects_too_many_indices_with_node_index"); }

TEST_CASE("subtensor_rejects_unused_index_input") { run_fixture("subtensor_rejects_unused_index_input"); }

TEST_CASE("subtensor_rejects_wrong_output_dtype") { run_fixture("subtensor_rejects_wrong_output_dtype"); }

TEST_CASE("subtensor_rejects_zero_step_literal") { run_fixture("subtensor_rejects_zero_step_literal"); }

TEST_CASE("subtensor_slice_bounds_from_inputs") { run_fixture("subtensor_slice_bounds_from_inputs"); }

TEST_CASE("subtensor_slices_match_python") { run_fixture("subtensor_slices_match_python"); }
