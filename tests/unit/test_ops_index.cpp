// Subtensor family: NumPy fixtures from tests/gen/gen_fixtures_ops_index.py, compared
// bit for bit (these ops only move or convert data), and graphs the loader
// must reject.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "engine/ops/ops_common.hpp"
#include "graph_builder.hpp"
#include "ops_fixture.hpp"

using ember::test::run_fixture;

TEST_CASE("advanced_inc_subtensor1_duplicates_accumulate_like_add_at") { run_fixture("advanced_inc_subtensor1_duplicates_accumulate_like_add_at"); }

TEST_CASE("advanced_inc_subtensor_add_at_set_and_ignore_duplicates") { run_fixture("advanced_inc_subtensor_add_at_set_and_ignore_duplicates"); }

TEST_CASE("advanced_subtensor1_gathers_rows") { run_fixture("advanced_subtensor1_gathers_rows"); }

TEST_CASE("advanced_subtensor_mixes_arrays_slices_masks") { run_fixture("advanced_subtensor_mixes_arrays_slices_masks"); }

TEST_CASE("advanced_subtensor_rejects_float_index_array") { run_fixture("advanced_subtensor_rejects_float_index_array"); }

TEST_CASE("gather_with_small_int_indices_empty_and_transposed_input") { run_fixture("gather_with_small_int_indices_empty_and_transposed_input"); }

TEST_CASE("inc_subtensor_rejects_y_static_shape_that_cannot_broadcast") { run_fixture("inc_subtensor_rejects_y_static_shape_that_cannot_broadcast"); }

TEST_CASE("inc_subtensor_rejects_y_that_would_upcast_x") { run_fixture("inc_subtensor_rejects_y_that_would_upcast_x"); }

TEST_CASE("inc_subtensor_set_and_inc_broadcast_y") { run_fixture("inc_subtensor_set_and_inc_broadcast_y"); }

TEST_CASE("inc_with_narrower_y_dtype_and_reversed_input") { run_fixture("inc_with_narrower_y_dtype_and_reversed_input"); }

TEST_CASE("subtensor_index_out_of_bounds_is_call_error") { run_fixture("subtensor_index_out_of_bounds_is_call_error"); }

TEST_CASE("subtensor_negative_indices_and_chained_views") { run_fixture("subtensor_negative_indices_and_chained_views"); }

TEST_CASE("subtensor_rejects_array_entries") { run_fixture("subtensor_rejects_array_entries"); }

TEST_CASE("subtensor_rejects_literal_index_outside_static_dim") { run_fixture("subtensor_rejects_literal_index_outside_static_dim"); }

TEST_CASE("subtensor_rejects_missing_input_reference") { run_fixture("subtensor_rejects_missing_input_reference"); }

TEST_CASE("subtensor_rejects_output_static_shape_that_disagrees") { run_fixture("subtensor_rejects_output_static_shape_that_disagrees"); }

TEST_CASE("subtensor_rejects_too_many_indices_with_node_index") { run_fixture("subtensor_rejects_too_many_indices_with_node_index"); }

TEST_CASE("subtensor_rejects_unused_index_input") { run_fixture("subtensor_rejects_unused_index_input"); }

TEST_CASE("subtensor_rejects_wrong_output_dtype") { run_fixture("subtensor_rejects_wrong_output_dtype"); }

TEST_CASE("subtensor_rejects_zero_step_literal") { run_fixture("subtensor_rejects_zero_step_literal"); }

TEST_CASE("subtensor_slice_bounds_from_inputs") { run_fixture("subtensor_slice_bounds_from_inputs"); }

TEST_CASE("subtensor_slices_match_python") { run_fixture("subtensor_slices_match_python"); }

// Kernels are shared by all threads: run the mixed advanced-indexing and
// scatter fixtures from several threads at once; every result must match.
TEST_CASE("index_ops_agree_when_called_from_many_threads") {
  using namespace ember;
  for (const char* name : {"advanced_subtensor_mixes_arrays_slices_masks",
                           "advanced_inc_subtensor_add_at_set_and_ignore_duplicates",
                           "inc_subtensor_set_and_inc_broadcast_y", "gather1_element_sizes_rows_and_strided_inputs",
                           "inc_subtensor1_constant_and_runtime_index_fast_paths"}) {
    INFO(name);
    const nlohmann::json fx = test::read_json(test::data_path(std::string("ops_index/") + name + ".json"));
    auto p = Program::from_json(fx["graph"].dump());
    const auto& run = fx["runs"][0];
    std::vector<Array> in, want;
    std::vector<Tensor> args;
    for (const auto& a : run["inputs"]) in.push_back(test::array_from_json(a));
    for (const Array& a : in) args.push_back(a.t);
    for (const auto& e : run["expected"]) want.push_back(test::array_from_json(e));
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&] {
        for (int k = 0; k < 200; ++k) {
          const std::vector<Array> out = p->call(args);
          for (size_t i = 0; i < out.size(); ++i)
            if (out[i].t.shape.str() != want[i].t.shape.str() ||
                std::memcmp(out[i].t.data, want[i].t.data, want[i].size() * dtype_size(want[i].t.dtype)) != 0)
              ++bad;
        }
      });
    for (auto& t : ts) t.join();
    CHECK(bad == 0);
  }
}

TEST_CASE("subtensor_random_index_lists_match_numpy") { run_fixture("subtensor_random_index_lists_match_numpy"); }

TEST_CASE("advanced_random_index_lists_match_numpy_and_add_at") {
  run_fixture("advanced_random_index_lists_match_numpy_and_add_at");
}

// AdvancedSubtensor1 / AdvancedIncSubtensor1 fast paths (engine/ops/index_fast.hpp).
TEST_CASE("gather1_constant_index_packed_matches_numpy") { run_fixture("gather1_constant_index_packed_matches_numpy"); }

TEST_CASE("gather1_reads_every_index_dtype_and_stride") { run_fixture("gather1_reads_every_index_dtype_and_stride"); }

TEST_CASE("gather1_element_sizes_rows_and_strided_inputs") {
  run_fixture("gather1_element_sizes_rows_and_strided_inputs");
}

TEST_CASE("gather1_constant_index_out_of_range_fails_per_call") {
  run_fixture("gather1_constant_index_out_of_range_fails_per_call");
}

TEST_CASE("inc_subtensor1_constant_and_runtime_index_fast_paths") {
  run_fixture("inc_subtensor1_constant_and_runtime_index_fast_paths");
}

// x[rows, cols] with (n, 1) index columns (an ordinal or categorical
// likelihood picking one entry per row): the index broadcast has a size-1
// axis, which the loop skips. Values, the add-at gradient, and an index out
// of range named by axis.
TEST_CASE("advanced_subtensor_index_columns_pick_one_entry_per_row") {
  using nlohmann::json;
  const int64_t n = 7, k = 5;
  ember::test::GraphBuilder b;
  const int x = b.input("float64", {n, k}), y = b.input("float64", {n, 1});
  const int rows = b.input("int64", {n, 1}), cols = b.input("int64", {n, 1});
  const json idx = {{{"type", "array"}, {"input", 1}}, {{"type", "array"}, {"input", 2}}};
  const json inc = {{{"type", "array"}, {"input", 2}}, {{"type", "array"}, {"input", 3}}};
  b.outputs = {b.node("AdvancedSubtensor", {x, rows, cols}, "float64", {n, 1}, {{"idx_list", idx}}),
               b.node("AdvancedIncSubtensor", {x, y, rows, cols}, "float64", {n, k},
                      {{"idx_list", inc}, {"set_instead_of_inc", false}, {"ignore_duplicates", false}})};
  auto p = ember::Program::from_json(b.str());
  std::vector<double> xv(n * k), yv(n);
  for (int64_t i = 0; i < n * k; ++i) xv[i] = 0.5 * static_cast<double>(i) - 3;
  for (int64_t i = 0; i < n; ++i) yv[i] = 100.0 * static_cast<double>(i + 1);
  // Row 2 twice (the increments add up), a negative column (from the end).
  const std::vector<int64_t> r = {0, 2, 2, 3, 4, 5, 6}, c = {4, 1, 1, -1, 0, 3, 2};
  using ember::Array;
  using ember::Shape;
  Array xa = Array::of<double>(Shape{2, {n, k}}, xv), ya = Array::of<double>(Shape{2, {n, 1}}, yv);
  Array ra = Array::of<int64_t>(Shape{2, {n, 1}}, r), ca = Array::of<int64_t>(Shape{2, {n, 1}}, c);
  auto out = p->call({xa.t, ya.t, ra.t, ca.t});
  std::vector<double> inc_expect = xv;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = c[i] < 0 ? c[i] + k : c[i];
    CHECK(out[0].data<double>()[i] == xv[r[i] * k + col]);
    inc_expect[r[i] * k + col] += yv[i];
  }
  for (int64_t i = 0; i < n * k; ++i) CHECK(out[1].data<double>()[i] == inc_expect[i]);
  std::vector<int64_t> bad = c;
  bad[5] = k;  // one past the end of axis 1
  Array ba = Array::of<int64_t>(Shape{2, {n, 1}}, bad);
  try {
    p->call({xa.t, ya.t, ra.t, ba.t});
    FAIL("no error for an index out of range");
  } catch (const ember::CallError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("axis 1") != std::string::npos);
    CHECK(msg.find("AdvancedSubtensor") != std::string::npos);
  }
}

// A gradient's chain of increments updates one buffer in place (the
// planner hands each dying x to the next IncSubtensor), but never when
// another operand views x or x is still needed: the values are NumPy's.
TEST_CASE("inc_subtensor_chains_update_in_place_unless_x_is_viewed_or_kept") {
  using nlohmann::json;
  auto slice = [](json start, json stop) {
    return json::array({{{"type", "slice"}, {"start", start}, {"stop", stop}, {"step", nullptr}}});
  };
  auto inc = [](json idx) { return json{{"idx_list", idx}, {"set_instead_of_inc", false}}; };
  ember::test::GraphBuilder b;
  const int a = b.input("float64", {6}), y = b.input("float64", {3}), c = b.input("float64", json::array());
  // Chain: x = -a; x1 = inc(x[0], c); x2 = inc(x1[1:4], y).
  const int x = b.ew("Neg", {a}, "float64", {6});
  const int x1 = b.node("IncSubtensor", {x, c}, "float64", {6}, inc({{{"type", "index"}, {"value", 0}}}));
  const int x2 = b.node("IncSubtensor", {x1, y}, "float64", {6}, inc(slice(1, 4)));
  // Viewed: z = a * a; w = inc(z[1:], z[:-1]) reads z's old values.
  const int z = b.ew("Mul", {a, a}, "float64", {6});
  const int zv = b.node("Subtensor", {z}, "float64", {5}, {{"idx_list", slice(nullptr, -1)}});
  const int w = b.node("IncSubtensor", {z, zv}, "float64", {6}, inc(slice(1, nullptr)));
  // Kept: k = a + a is an output too, so inc(k[2], c) must copy it.
  const int k = b.ew("Add", {a, a}, "float64", {6});
  const int k1 = b.node("IncSubtensor", {k, c}, "float64", {6}, inc({{{"type", "index"}, {"value", 2}}}));
  b.outputs = {x2, w, k, k1};
  auto p = ember::Program::from_json(b.str());
  using ember::Array;
  using ember::Shape;
  const std::vector<double> av = {1, -2, 3, -4, 5, -6}, yv = {10, 20, 30};
  const double cv = 0.25;
  Array aa = Array::of<double>(Shape{1, {6}}, av), ya = Array::of<double>(Shape{1, {3}}, yv);
  Array ca = Array::of<double>(Shape{0, {}}, std::vector<double>{cv});
  for (int call = 0; call < 3; ++call) {  // steady calls reuse the buffers
    auto out = p->call({aa.t, ya.t, ca.t});
    for (int i = 0; i < 6; ++i) {
      INFO("call " << call << " element " << i);
      const double e2 = -av[i] + (i == 0 ? cv : 0) + (i >= 1 && i < 4 ? yv[i - 1] : 0);
      CHECK(out[0].data<double>()[i] == e2);
      const double ew = av[i] * av[i] + (i >= 1 ? av[i - 1] * av[i - 1] : 0);
      CHECK(out[1].data<double>()[i] == ew);
      CHECK(out[2].data<double>()[i] == av[i] + av[i]);
      CHECK(out[3].data<double>()[i] == av[i] + av[i] + (i == 2 ? cv : 0));
    }
  }
}

// Slices and integers only: the output's view, updated in place. Rank-2 views
// with a negative step, y broadcast along a dim, an index read from an input,
// set and increment; the values are NumPy's (written out by hand).
TEST_CASE("inc_subtensor_of_slices_and_integers_updates_strided_views") {
  using nlohmann::json;
  auto sl = [](json start, json stop, json step) {
    return json{{"type", "slice"}, {"start", start}, {"stop", stop}, {"step", step}};
  };
  ember::test::GraphBuilder b;
  const int x = b.input("float64", {4, 5}), y = b.input("float64", {1, 3}), i = b.input("int64", json::array());
  const int s = b.input("float64", json::array());
  // x[1:4, ::-2] += y (y's one row to every row of the view).
  const int a = b.node("IncSubtensor", {x, y}, "float64", {4, 5},
                       {{"idx_list", {sl(1, 4, nullptr), sl(nullptr, nullptr, -2)}}, {"set_instead_of_inc", false}});
  // x[i, 1:] = s; x[:, -1] += s.
  const int c = b.node("IncSubtensor", {x, s, i}, "float64", {4, 5},
                       {{"idx_list", {{{"type", "index"}, {"value", {{"input", 2}}}}, sl(1, nullptr, nullptr)}},
                        {"set_instead_of_inc", true}});
  const int d = b.node("IncSubtensor", {x, s}, "float64", {4, 5},
                       {{"idx_list", {sl(nullptr, nullptr, nullptr), {{"type", "index"}, {"value", -1}}}},
                        {"set_instead_of_inc", false}});
  b.outputs = {a, c, d};
  auto p = ember::Program::from_json(b.str());
  using ember::Array;
  using ember::Shape;
  std::vector<double> xv(20);
  for (int k = 0; k < 20; ++k) xv[k] = 0.25 * k - 2;
  const std::vector<double> yv = {100, 200, 300};
  const int64_t iv = -3;  // row 1
  const double sv = 7.5;
  Array xa = Array::of<double>(Shape{2, {4, 5}}, xv), ya = Array::of<double>(Shape{2, {1, 3}}, yv);
  Array ia = Array::of<int64_t>(Shape{0, {}}, std::vector<int64_t>{iv});
  Array sa = Array::of<double>(Shape{0, {}}, std::vector<double>{sv});
  auto out = p->call({xa.t, ya.t, ia.t, sa.t});
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 5; ++col) {
      INFO("row " << r << " col " << col);
      const double v = xv[r * 5 + col];
      // ::-2 over 5 columns: 4, 2, 0 take y[0], y[1], y[2].
      const double ea = r >= 1 && col % 2 == 0 ? v + yv[(4 - col) / 2] : v;
      CHECK(out[0].data<double>()[r * 5 + col] == ea);
      CHECK(out[1].data<double>()[r * 5 + col] == (r == 1 && col >= 1 ? sv : v));
      CHECK(out[2].data<double>()[r * 5 + col] == (col == 4 ? v + sv : v));
    }
  // An index out of range is the node's error, as for Subtensor.
  Array bad = Array::of<int64_t>(Shape{0, {}}, std::vector<int64_t>{4});
  CHECK_THROWS_WITH(p->call({xa.t, ya.t, bad.t, sa.t}), Catch::Contains("out of bounds"));
}

// zip_each over a slice of a matrix's columns (rows of 1-9 contiguous
// elements, row strides wider than the rows; the short lengths have their
// own loop): every pair visited once, in C order.
TEST_CASE("zip_each_visits_short_strided_rows_in_order") {
  for (int64_t n = 1; n <= 9; ++n) {
    const int64_t rows = 7, sa = n + 1, sb = n + 3;
    std::vector<double> a(static_cast<size_t>(rows * sa), -1.0), b(static_cast<size_t>(rows * sb));
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(i);
    ember::Shape shape;
    shape.ndim = 2;
    shape.dims[0] = rows;
    shape.dims[1] = n;
    const int64_t stra[2] = {sa, 1}, strb[2] = {sb, 1};
    std::vector<double> order;
    ember::zip_each(shape, a.data() + 1, stra, b.data(), strb, [&](double& x, const double& y) {
      x = y;
      order.push_back(y);
    });
    INFO("row length " << n);
    REQUIRE(order.size() == static_cast<size_t>(rows * n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n; ++k) {
        CHECK(order[static_cast<size_t>(r * n + k)] == static_cast<double>(r * sb + k));
        CHECK(a[static_cast<size_t>(1 + r * sa + k)] == static_cast<double>(r * sb + k));
      }
    for (int64_t r = 0; r < rows; ++r) CHECK(a[static_cast<size_t>(r * sa)] == -1.0);  // the column left out
  }
}

// A constant index of few bins with many entries each (a group effect's
// gradient): each bin's sum runs in a register, four bins side by side. The
// bits are those of updates through memory in index order, random or
// sorted, with signed zeros, infinities and NaN among the increments.
TEST_CASE("scatter_add_of_few_bins_by_constant_index_keeps_the_sequential_sums") {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> nd(0.0, 1e3);
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::nan(""), 1e300, -1e300, 5e-324};
  for (int64_t bins : {1, 3, 4, 5, 12, 30, 64}) {
    for (bool sorted : {false, true}) {
      const int64_t n = 16 * bins + 37;
      std::vector<int64_t> idx(static_cast<size_t>(n));
      for (int64_t& v : idx) v = static_cast<int64_t>(gen() % bins);
      if (sorted) std::sort(idx.begin(), idx.end());
      if (bins > 1) idx[3] = -1;  // from the end
      ember::test::GraphBuilder b;
      const int x = b.input("float64", {bins}), y = b.input("float64", {n});
      const int ci = b.constant("int64", {n}, idx);
      b.outputs = {b.node("AdvancedIncSubtensor1", {x, y, ci}, "float64", {bins}, {{"set_instead_of_inc", false}})};
      auto p = ember::Program::from_json(b.str());
      std::vector<double> xv(static_cast<size_t>(bins)), yv(static_cast<size_t>(n));
      for (double& v : xv) v = gen() % 6 == 0 ? special[gen() % 8] : nd(gen);
      for (double& v : yv) v = gen() % 40 == 0 ? special[gen() % 8] : nd(gen);
      std::vector<double> want = xv;
      for (int64_t i = 0; i < n; ++i) {
        volatile double s = want[(idx[i] + bins) % bins] + yv[i];  // volatile: one rounding per update
        want[(idx[i] + bins) % bins] = s;
      }
      using ember::Array;
      using ember::Shape;
      auto out = p->call({Array::of<double>(Shape{1, {bins}}, xv).t, Array::of<double>(Shape{1, {n}}, yv).t});
      for (int64_t k = 0; k < bins; ++k) {
        INFO(bins << " bins, " << (sorted ? "sorted" : "random") << ", bin " << k);
        const double got = out[0].data<double>()[k];
        uint64_t gb, wb;
        std::memcpy(&gb, &got, 8);
        std::memcpy(&wb, &want[k], 8);
        CHECK((gb == wb || (std::isnan(got) && std::isnan(want[k]))));
      }
    }
  }
}

// A constant x of zeros (a gradient's zeros_like) starts the output as zeros
// written rather than copied: the three increment ops give what they give on
// the same zeros passed as an input. A constant -0.0 is not zero bytes: the
// elements left alone keep its sign.
TEST_CASE("increments_of_constant_zeros_equal_increments_of_zeros_given") {
  using nlohmann::json;
  using ember::Array;
  using ember::Shape;
  const json col_slice = {json{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", nullptr}},
                          json{{"type", "slice"}, {"start", 1}, {"stop", nullptr}, {"step", nullptr}}};
  const json adv = {json{{"type", "array"}, {"input", 2}}, json{{"type", "array"}, {"input", 3}}};
  auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
  };
  for (double zero : {0.0, -0.0}) {
    for (bool constant : {true, false}) {
      INFO("zero " << zero << (constant ? " constant" : " input"));
      ember::test::GraphBuilder b;
      const int x = constant ? b.constant("float64", {3, 4}, std::vector<double>(12, zero)) : b.input("float64", {3, 4});
      const int v = constant ? b.constant("float64", {5}, std::vector<double>(5, zero)) : b.input("float64", {5});
      const int y = b.input("float64", {3, 3}), g2 = b.input("float64", {2}), g4 = b.input("float64", {4});
      const int r = b.input("int64", {2}), c = b.input("int64", {2}), k = b.input("int64", {4});
      const int a = b.node("IncSubtensor", {x, y}, "float64", {3, 4}, {{"idx_list", col_slice}, {"set_instead_of_inc", false}});
      const int d = b.node("AdvancedIncSubtensor", {x, g2, r, c}, "float64", {3, 4},
                           {{"idx_list", adv}, {"set_instead_of_inc", false}});
      const int e = b.node("AdvancedIncSubtensor1", {v, g4, k}, "float64", {5}, {{"set_instead_of_inc", false}});
      b.outputs = {a, d, e};
      auto p = ember::Program::from_json(b.str());
      Array xa = Array::of<double>(Shape{2, {3, 4}}, std::vector<double>(12, zero));
      Array va = Array::of<double>(Shape{1, {5}}, std::vector<double>(5, zero));
      Array ya = Array::of<double>(Shape{2, {3, 3}}, {1, -2, 3, 0.5, 0.25, -0.0, 7, 8, 9});
      Array g2a = Array::of<double>(Shape{1, {2}}, {1.5, -2.5});
      Array g4a = Array::of<double>(Shape{1, {4}}, {1.5, -2.5, 3.5, -0.0});
      Array ra = Array::of<int64_t>(Shape{1, {2}}, {0, 2}), ca = Array::of<int64_t>(Shape{1, {2}}, {3, 0});
      Array ka = Array::of<int64_t>(Shape{1, {4}}, {4, 0, 4, 2});
      std::vector<ember::Tensor> args;
      if (!constant) args = {xa.t, va.t};
      for (const Array* t : {&ya, &g2a, &g4a, &ra, &ca, &ka}) args.push_back(t->t);
      auto out = p->call(args);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          const double want_a = j >= 1 ? zero + ya.data<double>()[i * 3 + j - 1] : zero;
          CHECK(bits(out[0].data<double>()[i * 4 + j]) == bits(want_a));
          double want_d = zero;
          if (i == 0 && j == 3) want_d = zero + 1.5;
          if (i == 2 && j == 0) want_d = zero + -2.5;
          CHECK(bits(out[1].data<double>()[i * 4 + j]) == bits(want_d));
        }
      // k = (4, 0, 4, 2): entries added in index order.
      const double want_e[5] = {zero + -2.5, zero, zero + -0.0, zero, (zero + 1.5) + 3.5};
      for (int i = 0; i < 5; ++i) CHECK(bits(out[2].data<double>()[i]) == bits(want_e[i]));
    }
  }
}
