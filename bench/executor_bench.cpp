// Executor overhead: ns per node on a chain of tiny (0-d) Elemwise ops, and
// the load time of a graph with 10^6-element constants. Medians of runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ember.hpp"
#include "engine/graph.hpp"

using namespace ember;
using clock_type = std::chrono::steady_clock;

namespace {

std::string chain(int n, bool vector) {
  nlohmann::json vars = nlohmann::json::array(), nodes = nlohmann::json::array();
  auto shape = vector ? nlohmann::json::array({nullptr}) : nlohmann::json::array();
  vars.push_back({{"name", "x"}, {"dtype", "float64"}, {"shape", shape}});
  for (int k = 0; k < n; ++k) {
    vars.push_back({{"dtype", "float64"}, {"shape", shape}});
    nodes.push_back({{"op", "Elemwise"}, {"inputs", {k}}, {"outputs", {k + 1}},
                     {"attrs", {{"scalar_op", {{"op", k % 2 ? "Neg" : "Abs"}}}}}});
  }
  return nlohmann::json{{"format", "ember-graph"}, {"version", 1}, {"variables", vars}, {"inputs", {0}},
                        {"outputs", {n}}, {"nodes", nodes}}.dump();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  const int n = 1000;
  auto p = Program::from_json(chain(n, false));
  auto ws = p->make_workspace();
  Array x = Array::empty(DType::Float64, Shape{});
  x.data<double>()[0] = 0.5;
  std::vector<Tensor> args{x.t};
  for (int r = 0; r < 100; ++r) p->run(*ws, args);
  std::vector<double> per_node;
  for (int rep = 0; rep < 15; ++rep) {
    const int calls = 200;
    const auto t0 = clock_type::now();
    for (int r = 0; r < calls; ++r) p->run(*ws, args);
    const double ns = std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
    per_node.push_back(ns / calls / n);
  }
  std::printf("executor: 0-d chain of %d Elemwise nodes: median %.1f ns per node (15 runs, min %.1f)\n", n,
              median(per_node), *std::min_element(per_node.begin(), per_node.end()));

  const int64_t m = 1'000'000;
  Graph g = Graph::parse(R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [1000000]},
                  {"name": "c", "dtype": "float64", "shape": [1000000]},
                  {"name": "y", "dtype": "float64", "shape": [1000000]}],
    "inputs": [0], "outputs": [2], "constants": [{"var": 1, "offset": 0, "nbytes": 8000000}],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Add"}}}]})",
                         std::shared_ptr<const uint8_t[]>(new uint8_t[m * 8]()), m * 8, "bench");
  const std::string path = (std::filesystem::temp_directory_path() / "ember_bench_big.embg").string();
  g.write_file(path);
  std::vector<double> load_ms;
  for (int rep = 0; rep < 9; ++rep) {
    const auto t0 = clock_type::now();
    auto q = Program::load(path);
    load_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  std::printf("loader: graph with a 10^6-element constant (8 MB payload): median %.2f ms (9 runs)\n",
              median(load_ms));
  std::filesystem::remove(path);
  return 0;
}
