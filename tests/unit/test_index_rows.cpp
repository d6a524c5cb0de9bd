// Whole rows of a table picked by one index vector: the gather's rows of a
// few float64s (copied with their size known at compile time) and the
// scatter-add of rows back into the table (a category table's gradient),
// against references written here, negative indices and errors included.
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"

using namespace ember;

namespace {

std::string table_graph(bool inc, int64_t C, bool set = false) {
  const std::string c = std::to_string(C);
  if (!inc)
    return R"({"format": "ember-graph", "version": 1,
      "variables": [{"name": "x", "dtype": "float64", "shape": [10, )" + c + R"(]},
                    {"name": "i", "dtype": "int64", "shape": [null]},
                    {"name": "y", "dtype": "float64", "shape": [null, )" + c + R"(]}],
      "inputs": [{"var": 0}, {"var": 1}], "outputs": [2],
      "nodes": [{"op": "AdvancedSubtensor1", "inputs": [0, 1], "outputs": [2], "attrs": {}}]})";
  return R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [10, )" + c + R"(]},
                  {"name": "y", "dtype": "float64", "shape": [null, )" + c + R"(]},
                  {"name": "i", "dtype": "int64", "shape": [null]},
                  {"name": "z", "dtype": "float64", "shape": [10, )" + c + R"(]}],
    "inputs": [{"var": 0}, {"var": 1}, {"var": 2}], "outputs": [3],
    "nodes": [{"op": "AdvancedIncSubtensor1", "inputs": [0, 1, 2], "outputs": [3],
               "attrs": {"set_instead_of_inc": )" + std::string(set ? "true" : "false") + R"(}}]})";
}

}  // namespace

TEST_CASE("table_rows_gathered_and_added_back_by_index_match_reference") {
  std::mt19937_64 gen(31);
  std::normal_distribution<double> nd(0.0, 3.0);
  std::uniform_int_distribution<int64_t> pick(-10, 9);
  for (int64_t C : {1, 2, 3, 4, 5, 8, 11}) {
    auto g = Program::from_json(table_graph(false, C));
    auto s = Program::from_json(table_graph(true, C));
    auto w = Program::from_json(table_graph(true, C, true));
    for (int64_t n : {0, 1, 3, 7, 300}) {
      std::vector<double> x(static_cast<size_t>(10 * C)), y(static_cast<size_t>(n * C));
      std::vector<int64_t> idx(static_cast<size_t>(n));
      for (double& v : x) v = nd(gen);
      for (double& v : y) v = nd(gen);
      for (int64_t& v : idx) v = pick(gen);
      Array ax = Array::of<double>({2, {10, C}}, x), ay = Array::of<double>({2, {n, C}}, y);
      Array ai = Array::of<int64_t>({1, {n}}, idx);
      const auto got = g->call({ax.t, ai.t})[0];
      std::vector<double> sum = x, last = x;
      for (int64_t b = 0; b < n; ++b) {
        const int64_t r = idx[b] < 0 ? idx[b] + 10 : idx[b];
        for (int64_t k = 0; k < C; ++k) {
          INFO("C = " << C << ", n = " << n << ", row " << b);
          REQUIRE(got.data<double>()[b * C + k] == x[r * C + k]);
          sum[r * C + k] += y[b * C + k];
          last[r * C + k] = y[b * C + k];
        }
      }
      const auto inc = s->call({ax.t, ay.t, ai.t})[0];
      const auto put = w->call({ax.t, ay.t, ai.t})[0];
      for (int64_t e = 0; e < 10 * C; ++e) {
        INFO("C = " << C << ", n = " << n << ", element " << e);
        REQUIRE(inc.data<double>()[e] == sum[e]);  // the same additions in the same order
        REQUIRE(put.data<double>()[e] == last[e]);  // the last write of each row wins
      }
    }
    Array ax = Array::of<double>({2, {10, C}}, std::vector<double>(static_cast<size_t>(10 * C), 1.0));
    Array bad = Array::of<int64_t>({1, {3}}, {0, 10, 1});
    Array ay = Array::of<double>({2, {3, C}}, std::vector<double>(static_cast<size_t>(3 * C), 1.0));
    CHECK_THROWS_WITH(g->call({ax.t, bad.t}), Catch::Matchers::Contains("out of bounds"));
    CHECK_THROWS_WITH(s->call({ax.t, ay.t, bad.t}), Catch::Matchers::Contains("out of bounds"));
    CHECK_THROWS_WITH(w->call({ax.t, ay.t, bad.t}), Catch::Matchers::Contains("out of bounds"));
  }
}
