// Scan: the inner graph runs once per step on views of the outer buffers
// (engine/ops/ops_scan.cpp), with PyTensor's buffer rules; bad nodes are
// load errors naming the field. The Python tests check the other forms
// against PyTensor (tests/python/test_scan.py).
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "scan_graphs.hpp"

using namespace ember;

namespace {

Array vec(std::vector<double> v) { return Array::of<double>({1, {static_cast<int64_t>(v.size())}}, v); }
Array num(double v) { return Array::of<double>({0, {}}, {v}); }
Array steps(int64_t n) { return Array::of<int64_t>({0, {}}, {n}); }

std::vector<double> run(const std::shared_ptr<const Program>& p, int64_t n, std::vector<double> x,
                        std::vector<double> init, double a) {
  auto out = p->call({steps(n).t, vec(x).t, vec(init).t, num(a).t});
  return {out[0].data<double>(), out[0].data<double>() + out[0].size()};
}

}  // namespace

TEST_CASE("scan_fills_its_buffer_from_the_initial_state") {
  auto p = Program::from_json(test::scan_graph());
  CHECK(run(p, 3, {1, 2, 3}, {5, 0, 0, 0}, 2) == std::vector<double>{5, 11, 24, 51});
  // Fewer steps than the buffer holds: the unused tail is zeroed.
  CHECK(run(p, 1, {1, 2, 3}, {5, 7, 7, 7}, 2) == std::vector<double>{5, 11, 0, 0});
}

TEST_CASE("scan_with_a_short_buffer_keeps_the_last_states_oldest_first") {
  auto p = Program::from_json(test::scan_graph());
  CHECK(run(p, 3, {1, 2, 3}, {5, 0}, 2) == std::vector<double>{24, 51});
  CHECK(run(p, 2, {1, 2, 3}, {5, 0}, 2) == std::vector<double>{11, 24});
}

TEST_CASE("scan_runs_zero_steps") {
  auto p = Program::from_json(test::scan_graph());
  CHECK(run(p, 0, {}, {5, 6}, 2) == std::vector<double>{5, 6});
}

TEST_CASE("scan_bad_calls_are_call_errors_naming_the_node") {
  auto p = Program::from_json(test::scan_graph());
  CHECK_THROWS_WITH(run(p, 4, {1, 2, 3}, {5, 0, 0, 0, 0}, 2),
                    Catch::Contains("node 0 (Scan)") && Catch::Contains("fewer than the 4 steps"));
  CHECK_THROWS_WITH(run(p, -1, {1}, {5}, 2), Catch::Contains("negative number of steps"));
  CHECK_THROWS_WITH(run(p, 1, {1}, {}, 2), Catch::Contains("empty buffer"));
}

TEST_CASE("scan_bad_nodes_are_load_errors_naming_the_field") {
  nlohmann::json no_inner = {{"inner", nullptr}};
  CHECK_THROWS_WITH(Program::from_json(test::scan_graph(no_inner)), Catch::Contains("inner"));
  CHECK_THROWS_WITH(Program::from_json(test::scan_graph({{"sit_sot_in_slices", {{-2}}}})),
                    Catch::Contains("sit_sot_in_slices"));
  CHECK_THROWS_WITH(Program::from_json(test::scan_graph({{"n_non_seqs", 0}})),
                    Catch::Contains("node 0 (Scan)"));  // the input count no longer fits the layout
  nlohmann::json inner = test::scan_inner_graph();
  inner["inputs"].erase(2);
  inner["nodes"][0]["inputs"] = {1, 1};
  CHECK_THROWS_WITH(Program::from_json(test::scan_graph({{"inner", inner}})),
                    Catch::Contains("attrs.inner") && Catch::Contains("2 inputs"));
  inner = test::scan_inner_graph();
  inner["variables"][0]["dtype"] = "int64";
  CHECK_THROWS_WITH(Program::from_json(test::scan_graph({{"inner", inner}})),
                    Catch::Contains("sequence 0"));
  inner = test::scan_inner_graph();
  inner["nodes"][0]["op"] = "NoSuchOp";
  CHECK_THROWS_WITH(Program::from_json(test::scan_graph({{"inner", inner}})), Catch::Contains("NoSuchOp"));
}

TEST_CASE("scan_threads_share_one_program") {
  auto p = Program::from_json(test::scan_graph());
  std::vector<std::thread> ts;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k)
    ts.emplace_back([&, k] {
      const double a = 1.0 + k;
      for (int r = 0; r < 200; ++r) {
        const auto got = run(p, 2, {1, 2}, {1, 0, 0}, a);
        bad[k] += got != std::vector<double>{1, a + 1, (a + 1) * a + 2};
      }
    });
  for (auto& t : ts) t.join();
  CHECK(bad == std::vector<int>(4, 0));
}

// Inner outputs that are the taps themselves (x, y = y, x), or their
// transposes (views, x, y = y.T, x.T), one-entry buffers: writing x's entry
// overwrites what the y output views, so outputs are staged before either
// is written.
TEST_CASE("scan_outputs_that_view_the_buffers_it_writes_are_staged") {
  const std::vector<double> x0{1, 2, 3, 4}, y0{5, 6, 7, 8}, x0t{1, 3, 2, 4}, y0t{5, 7, 6, 8};
  for (bool transposed : {false, true}) {
    nlohmann::json inner = nlohmann::json::parse(R"({"format": "ember-graph", "version": 1,
      "variables": [{"dtype": "float64", "shape": [2, 2]}, {"dtype": "float64", "shape": [2, 2]},
                    {"dtype": "float64", "shape": [2, 2]}, {"dtype": "float64", "shape": [2, 2]}],
      "inputs": [{"var": 0}, {"var": 1}], "outputs": [1, 0], "constants": [], "nodes": []})");
    if (transposed) {
      inner["outputs"] = {2, 3};
      inner["nodes"] = nlohmann::json::parse(
          R"([{"op": "DimShuffle", "inputs": [1], "outputs": [2], "attrs": {"new_order": [1, 0]}},
              {"op": "DimShuffle", "inputs": [0], "outputs": [3], "attrs": {"new_order": [1, 0]}}])");
    }
    nlohmann::json g = nlohmann::json::parse(R"({"format": "ember-graph", "version": 1,
      "variables": [{"dtype": "int64", "shape": []}, {"dtype": "float64", "shape": [1, 2, 2]},
                    {"dtype": "float64", "shape": [1, 2, 2]}, {"dtype": "float64", "shape": [1, 2, 2]},
                    {"dtype": "float64", "shape": [1, 2, 2]}],
      "inputs": [{"var": 0}, {"var": 1}, {"var": 2}], "outputs": [3, 4], "constants": [],
      "nodes": [{"op": "Scan", "inputs": [0, 1, 2], "outputs": [3, 4]}]})");
    g["nodes"][0]["attrs"] = {{"sit_sot_in_slices", {{-1}, {-1}}}, {"inner", inner}};
    auto p = Program::from_json(g.dump());
    const Array x = Array::of<double>({3, {1, 2, 2}}, x0), y = Array::of<double>({3, {1, 2, 2}}, y0);
    for (int64_t n : {1, 2, 3}) {
      auto out = p->call({steps(n).t, x.t, y.t});
      const std::vector<double> got_x(out[0].data<double>(), out[0].data<double>() + 4),
          got_y(out[1].data<double>(), out[1].data<double>() + 4);
      // x after n steps: y, then x (transposed twice), then y again; y likewise.
      if (!transposed) {
        CHECK(got_x == (n % 2 ? y0 : x0));
        CHECK(got_y == (n % 2 ? x0 : y0));
      } else {
        CHECK(got_x == (n % 2 ? y0t : x0));
        CHECK(got_y == (n % 2 ? x0t : y0));
      }
    }
  }
}
