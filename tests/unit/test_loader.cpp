// The loader validates a whole graph before anything runs, and every error
// names where the fault is.
#include <array>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"
#include "test_util.hpp"

using namespace ember;
using ember::test::load_error;
using Catch::Matchers::Contains;

namespace {

// x (float64 vector) -> exp(x)
const char* kExpGraph = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "x", "dtype": "float64", "shape": [null]},
                {"name": "y", "dtype": "float64", "shape": [null]}],
  "inputs": [{"var": 0}], "outputs": [1],
  "nodes": [{"op": "Elemwise", "inputs": [0], "outputs": [1], "attrs": {"scalar_op": {"op": "Exp"}}}]})";

std::string with(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_test_" + name)).string();
}

}  // namespace

TEST_CASE("loader_accepts_minimal_graph") {
  auto p = Program::from_json(kExpGraph);
  REQUIRE(p->args().size() == 1);
  CHECK(p->args()[0].name == "x");
  CHECK(p->outputs()[0].name == "y");
}

TEST_CASE("loader_rejects_dangling_input_with_node_index") {
  const std::string bad = with(kExpGraph, R"("inputs": [0], "outputs": [1], "attrs")",
                               R"("inputs": [7], "outputs": [1], "attrs")");
  const std::string msg = load_error(bad);
  CHECK_THAT(msg, Contains("nodes[0].inputs[0]"));
  CHECK_THAT(msg, Contains("does not exist"));
}

TEST_CASE("loader_rejects_use_before_definition_as_cycle") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": []}, {"dtype": "float64", "shape": []},
                  {"dtype": "float64", "shape": []}],
    "inputs": [0], "outputs": [2],
    "nodes": [{"op": "Elemwise", "inputs": [2], "outputs": [1], "attrs": {"scalar_op": {"op": "Exp"}}},
              {"op": "Elemwise", "inputs": [1], "outputs": [2], "attrs": {"scalar_op": {"op": "Exp"}}}]})";
  const std::string msg = load_error(g);
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("not defined before this node"));
}

TEST_CASE("loader_lists_every_unsupported_op_in_one_error") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": []}, {"dtype": "float64", "shape": []},
                  {"dtype": "float64", "shape": []}],
    "inputs": [0], "outputs": [2],
    "nodes": [{"op": "Convolve1d", "inputs": [0], "outputs": [1]},
              {"op": "Eig", "inputs": [1], "outputs": [2]}]})";
  const std::string msg = load_error(g);
  CHECK_THAT(msg, Contains("2 node(s) use unsupported ops"));
  CHECK_THAT(msg, Contains("node 0 (Convolve1d)"));
  CHECK_THAT(msg, Contains("node 1 (Eig)"));
}

TEST_CASE("loader_rejects_unknown_dtype_naming_the_field") {
  const std::string msg = load_error(with(kExpGraph, R"("name": "y", "dtype": "float64")",
                                          R"("name": "y", "dtype": "float16")"));
  CHECK_THAT(msg, Contains("variables[1].dtype"));
}

TEST_CASE("loader_rejects_wrong_json_types") {
  CHECK_THAT(load_error(with(kExpGraph, R"("shape": [null]},
                {"name": "y")", R"("shape": "big"},
                {"name": "y")")),
             Contains("variables[0].shape"));
  CHECK_THAT(load_error(with(kExpGraph, R"("outputs": [1],
  "nodes")", R"("outputs": [1.5],
  "nodes")")),
             Contains("outputs[0]"));
  CHECK_THAT(load_error("[1, 2]"), Contains("must be a JSON object"));
  CHECK_THAT(load_error("{\"format\": \"ember-graph\", \"version\": 1, \"variables\": "), Contains("not valid JSON"));
}

TEST_CASE("loader_rejects_absurd_static_shape") {
  const std::string msg = load_error(with(kExpGraph, R"("shape": [null]},
                {"name": "y")", R"("shape": [100000, 100000, 100000]},
                {"name": "y")"));
  CHECK_THAT(msg, Contains("more than 2^31 elements"));
}

TEST_CASE("loader_rejects_unknown_scalar_op_with_node_index") {
  const std::string msg = load_error(with(kExpGraph, R"({"op": "Exp"})", R"({"op": "Frobnicate"})"));
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("attrs.scalar_op.op"));
  CHECK_THAT(msg, Contains("Frobnicate"));
}

TEST_CASE("loader_rejects_composite_forward_reference") {
  const std::string msg = load_error(with(kExpGraph, R"({"op": "Exp"})", R"({"op": "Composite",
      "inputs": ["float64"], "nodes": [{"op": "Exp", "inputs": [2], "dtype": "float64"},
                                       {"op": "Exp", "inputs": [0], "dtype": "float64"}],
      "outputs": [1]})"));
  CHECK_THAT(msg, Contains("scalar node 0 (Exp)"));
  CHECK_THAT(msg, Contains("not defined before this node"));
}

TEST_CASE("loader_rejects_inline_constant_of_wrong_length") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": [3]}], "inputs": [], "outputs": [0],
    "constants": [{"var": 0, "data": [1, 2]}], "nodes": []})";
  CHECK_THAT(load_error(g), Contains("constants[0].data"));
}

TEST_CASE("loader_rejects_variable_defined_twice") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": []}], "inputs": [0], "outputs": [0],
    "constants": [{"var": 0, "data": [1]}], "nodes": []})";
  CHECK_THAT(load_error(g), Contains("defined twice"));
}

TEST_CASE("loader_rejects_missing_file_and_truncated_container") {
  CHECK_THROWS_AS(Program::load("/nonexistent/graph.embg"), LoadError);
  const std::string path = temp_file("truncated.embg");
  {
    std::ofstream f(path, std::ios::binary);
    f.write("EMBRGRPH\xff\xff\xff\x7f\0\0\0\0{", 17);
  }
  try {
    Program::load(path);
    FAIL("no error");
  } catch (const LoadError& e) {
    CHECK_THAT(std::string(e.what()), Contains(path));
    CHECK_THAT(std::string(e.what()), Contains("bytes of JSON"));
  }
  std::remove(path.c_str());
}

TEST_CASE("loader_rejects_constant_outside_payload") {
  Graph g = Graph::parse(R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": [4]}], "inputs": [], "outputs": [0],
    "constants": [{"var": 0, "data": [1, 2, 3, 4]}], "nodes": []})", nullptr, 0, "t");
  const std::string path = temp_file("payload.embg");
  g.write_file(path);
  // Shrink the file so the payload no longer holds the constant.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
  try {
    Program::load(path);
    FAIL("no error");
  } catch (const LoadError& e) {
    CHECK_THAT(std::string(e.what()), Contains("constants[0]"));
    CHECK_THAT(std::string(e.what()), Contains("outside the payload"));
  }
  std::remove(path.c_str());
}

TEST_CASE("container_round_trips_constants_bit_exactly") {
  Graph g = Graph::parse(R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "c", "dtype": "float64", "shape": [6]}, {"name": "k", "dtype": "int8", "shape": [3]}],
    "inputs": [], "outputs": [0, 1],
    "constants": [{"var": 0, "data": [1.5, "-inf", "inf", "nan", -0.0, 5e-324]}, {"var": 1, "data": [-3, 7, -128]}],
    "nodes": []})",
                         nullptr, 0, "t");
  const std::string path = temp_file("roundtrip.embg");
  g.write_file(path);
  auto p = Program::load(path);
  auto out = p->call(std::initializer_list<Tensor>{});
  REQUIRE(out.size() == 2);
  // Bytes, not values: a sign lost on -inf or -0 must fail.
  const double inf = std::numeric_limits<double>::infinity();
  const double want_c[6] = {1.5, -inf, inf, std::numeric_limits<double>::quiet_NaN(), -0.0, 5e-324};
  const int8_t want_k[3] = {-3, 7, -128};
  REQUIRE(out[0].size() == 6);
  REQUIRE(out[1].size() == 3);
  CHECK(std::memcmp(out[0].data<double>(), want_c, sizeof want_c) == 0);
  CHECK(std::memcmp(out[1].data<int8_t>(), want_k, sizeof want_k) == 0);
  std::remove(path.c_str());
}

// Its load time is measured by bench/executor_bench, not asserted here.
TEST_CASE("graph_with_million_element_constants_loads_them_from_the_payload") {
  const int64_t n = 1'000'000;
  Graph g = Graph::parse(R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [1000000]},
                  {"name": "c", "dtype": "float64", "shape": [1000000]},
                  {"name": "y", "dtype": "float64", "shape": [1000000]}],
    "inputs": [0], "outputs": [2],
    "constants": [{"var": 1, "offset": 0, "nbytes": 8000000}],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Add"}}}]})",
                         std::shared_ptr<const uint8_t[]>([] {
                           auto* c = new double[1'000'000];
                           for (int64_t i = 0; i < 1'000'000; ++i) c[i] = double(i) - 0.25;
                           return reinterpret_cast<const uint8_t*>(c);
                         }(), [](const uint8_t* q) { delete[] reinterpret_cast<const double*>(q); }),
                         8'000'000, "t");
  const std::string path = temp_file("big.embg");
  g.write_file(path);
  auto p = Program::load(path);
  REQUIRE(p->args()[0].static_shape.dims[0] == n);
  Array x = Array::empty(DType::Float64, Shape{1, {n}});
  for (int64_t i = 0; i < n; ++i) x.data<double>()[i] = 0.25;
  auto out = p->call({x.t});
  REQUIRE(out[0].size() == n);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += out[0].data<double>()[i] != double(i);
  CHECK(wrong == 0);
  std::remove(path.c_str());
}

TEST_CASE("shared_input_with_unknown_dims_takes_new_sizes") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "data", "dtype": "float64", "shape": [null]},
                  {"name": "total", "dtype": "float64", "shape": []}],
    "inputs": [{"var": 0, "shared": true}], "outputs": [1],
    "constants": [{"var": 0, "shape": [3], "data": [1, 2, 3]}],
    "nodes": [{"op": "Sum", "inputs": [0], "outputs": [1], "attrs": {"axis": null}}]})";
  auto p = Program::from_json(g);
  CHECK(p->call(std::initializer_list<Tensor>{})[0].data<double>()[0] == 6);
  Array bigger = Array::of<double>(Shape{1, {5}}, {1, 2, 3, 4, 5});
  p->set_shared("data", bigger.t);
  CHECK(p->call(std::initializer_list<Tensor>{})[0].data<double>()[0] == 15);
}

TEST_CASE("loader_rejects_constant_value_without_shape_for_unknown_dims") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": [null]}], "inputs": [], "outputs": [0],
    "constants": [{"var": 0, "data": [1, 2]}], "nodes": []})";
  CHECK_THAT(load_error(g), Contains("give \"shape\""));
}

namespace {
// x + y -> z with the given static shapes ("null" for unknown).
std::string add_graph(const std::string& x, const std::string& y, const std::string& z) {
  return R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": )" + x + R"(},
                  {"name": "y", "dtype": "float64", "shape": )" + y + R"(},
                  {"name": "z", "dtype": "float64", "shape": )" + z + R"(}],
    "inputs": [{"var": 0}, {"var": 1}], "outputs": [2],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Add"}}}]})";
}
}  // namespace

TEST_CASE("loader_rejects_elemwise_output_static_shape_that_inputs_do_not_broadcast_to") {
  // (1,) + (1,) is (1,), never (2,): before the check this loaded and ran to a (1,) result.
  std::string msg = load_error(add_graph("[1]", "[1]", "[2]"));
  CHECK_THAT(msg, Contains("node 0 (Elemwise)"));
  CHECK_THAT(msg, Contains("outputs[0]"));
  CHECK_THAT(msg, Contains("broadcast to 1 at dim 0"));
  msg = load_error(add_graph("[2, 3]", "[1, 3]", "[2, 1]"));
  CHECK_THAT(msg, Contains("outputs[0]"));
  CHECK_THAT(msg, Contains("broadcast to 3 at dim 1"));
  // An unknown input dim next to a known 4 must be 4 at run time.
  CHECK_THAT(load_error(add_graph("[null]", "[4]", "[5]")), Contains("broadcast to 4 at dim 0"));
  // Known sizes that cannot broadcast: named at the second input.
  msg = load_error(add_graph("[2]", "[3]", "[null]"));
  CHECK_THAT(msg, Contains("inputs[1]"));
  CHECK_THAT(msg, Contains("does not broadcast with input 0"));
}

TEST_CASE("loader_accepts_elemwise_static_shapes_that_broadcast") {
  for (const auto& [x, y, z] : std::vector<std::array<std::string, 3>>{{"[1]", "[1]", "[1]"},
                                                                        {"[1, 3]", "[2, 1]", "[2, 3]"},
                                                                        {"[null]", "[1]", "[7]"},
                                                                        {"[null]", "[null]", "[1]"},
                                                                        {"[4]", "[null]", "[null]"},
                                                                        {"[1]", "[5]", "[5]"}}) {
    INFO(x << " + " << y << " -> " << z);
    CHECK(load_error(add_graph(x, y, z)) == "(no error)");
  }
  Array a = Array::of<double>({1, {1}}, {2.0}), b = Array::of<double>({1, {3}}, {1.0, 2.0, 3.0});
  auto out = Program::from_json(add_graph("[1]", "[3]", "[3]"))->call({a.t, b.t});
  REQUIRE(out[0].size() == 3);
  CHECK(out[0].data<double>()[2] == 5.0);
}
