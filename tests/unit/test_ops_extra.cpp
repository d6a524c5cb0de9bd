// PyTensor's extra_ops natively: Repeat, SearchsortedOp, Unique, Nonzero,
// RavelMultiIndex, UnravelIndex, Bartlett. Values worked out by hand from
// NumPy's definitions; bad input as a CallError naming the node, bad nodes as
// a LoadError naming the field.
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "graph_builder.hpp"

using ember::Array;
using ember::Shape;
using ember::test::GraphBuilder;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

template <class T>
std::vector<T> values(const Array& a) {
  return std::vector<T>(a.data<T>(), a.data<T>() + a.size());
}

// Node with several outputs, each an int64 vector of unknown length.
std::vector<int> multi_node(GraphBuilder& b, const char* op, std::vector<int> in, std::vector<const char*> dts,
                            int ndim, json attrs) {
  std::vector<int> outs;
  json shape = json::array();
  for (int d = 0; d < ndim; ++d) shape.push_back(nullptr);
  for (const char* dt : dts) outs.push_back(b.var(dt, shape));
  b.nodes.push_back({{"op", op}, {"inputs", in}, {"outputs", outs}, {"attrs", attrs}});
  return outs;
}

std::string call_error(const ember::Program& p, const std::vector<ember::Tensor>& in) {
  try {
    p.call(std::span<const ember::Tensor>(in));
  } catch (const ember::CallError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("repeat_copies_each_slice_its_count_and_broadcasts_one_count") {
  GraphBuilder b;
  const int x = b.input("float64", {2, 3}), r = b.input("int64", {nullptr});
  b.outputs = {b.node("Repeat", {x, r}, "float64", {2, nullptr}, {{"axis", 1}})};
  auto p = ember::Program::from_json(b.str());
  Array xa = Array::of<double>(Shape{2, {2, 3}}, {1, 2, 3, 4, 5, 6});
  auto out = p->call({xa.t, Array::of<int64_t>(Shape{1, {3}}, {2, 0, 1}).t});
  CHECK(out[0].t.shape.dims[1] == 3);
  CHECK(values<double>(out[0]) == std::vector<double>{1, 1, 3, 4, 4, 6});
  out = p->call({xa.t, Array::of<int64_t>(Shape{1, {1}}, {2}).t});
  CHECK(values<double>(out[0]) == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6});
}

TEST_CASE("repeat_negative_or_mismatched_counts_are_call_errors_naming_the_node") {
  GraphBuilder b;
  const int x = b.input("float64", {nullptr}), r = b.input("int32", {nullptr});
  b.outputs = {b.node("Repeat", {x, r}, "float64", {nullptr}, {{"axis", 0}})};
  auto p = ember::Program::from_json(b.str());
  Array xa = Array::of<double>(Shape{1, {2}}, {1, 2});
  CHECK_THAT(call_error(*p, {xa.t, Array::of<int32_t>(Shape{1, {2}}, {1, -1}).t}), Contains("Repeat") && Contains("negative"));
  CHECK_THAT(call_error(*p, {xa.t, Array::of<int32_t>(Shape{1, {3}}, {1, 1, 1}).t}), Contains("broadcast"));
}

TEST_CASE("repeat_rejects_an_axis_out_of_range_at_load") {
  GraphBuilder b;
  const int x = b.input("float64", {nullptr}), r = b.input("int64", {nullptr});
  b.outputs = {b.node("Repeat", {x, r}, "float64", {nullptr}, {{"axis", 1}})};
  CHECK_THROWS_WITH(ember::Program::from_json(b.str()), Contains("axis"));
}

TEST_CASE("searchsorted_left_and_right_with_nans_last_and_a_sorter") {
  GraphBuilder b;
  const int x = b.input("float64", {nullptr}), v = b.input("int64", {nullptr}), s = b.input("int64", {nullptr});
  b.outputs = {b.node("SearchsortedOp", {x, v}, "int64", {nullptr}, {{"side", "left"}}),
               b.node("SearchsortedOp", {x, v}, "int64", {nullptr}, {{"side", "right"}}),
               b.node("SearchsortedOp", {x, v, s}, "int64", {nullptr}, {{"side", "left"}})};
  auto p = ember::Program::from_json(b.str());
  Array xa = Array::of<double>(Shape{1, {5}}, {0, 1, 1, 3, NAN});
  Array va = Array::of<int64_t>(Shape{1, {4}}, {-1, 1, 2, 5});
  Array sa = Array::of<int64_t>(Shape{1, {5}}, {0, 1, 2, 3, 4});
  auto out = p->call({xa.t, va.t, sa.t});
  CHECK(values<int64_t>(out[0]) == std::vector<int64_t>{0, 1, 3, 4});
  CHECK(values<int64_t>(out[1]) == std::vector<int64_t>{0, 3, 3, 4});
  CHECK(values<int64_t>(out[2]) == values<int64_t>(out[0]));
  Array bad = Array::of<int64_t>(Shape{1, {5}}, {0, 1, 9, 3, 4});
  CHECK_THAT(call_error(*p, {xa.t, va.t, bad.t}), Contains("SearchsortedOp") && Contains("out of range"));
}

TEST_CASE("unique_gives_sorted_values_first_indices_inverse_and_counts_one_nan") {
  GraphBuilder b;
  const int x = b.input("float64", {2, 3});
  b.outputs = multi_node(b, "Unique", {x}, {"float64", "int64", "int64", "int64"}, 1,
                         {{"return_index", true}, {"return_inverse", true}, {"return_counts", true}});
  auto p = ember::Program::from_json(b.str());
  auto out = p->call({Array::of<double>(Shape{2, {2, 3}}, {3, NAN, 1, 3, NAN, 0}).t});
  const std::vector<double> u = values<double>(out[0]);
  REQUIRE(u.size() == 4);
  CHECK((u[0] == 0 && u[1] == 1 && u[2] == 3 && std::isnan(u[3])));
  CHECK(values<int64_t>(out[1]) == std::vector<int64_t>{5, 2, 0, 1});
  CHECK(values<int64_t>(out[2]) == std::vector<int64_t>{2, 3, 1, 2, 3, 0});
  CHECK(values<int64_t>(out[3]) == std::vector<int64_t>{1, 1, 2, 2});
}

TEST_CASE("unique_along_an_axis_is_rejected_at_load") {
  GraphBuilder b;
  const int x = b.input("float64", {2, 3});
  b.outputs = {b.node("Unique", {x}, "float64", {nullptr, 3}, {{"axis", 0}})};
  CHECK_THROWS_WITH(ember::Program::from_json(b.str()), Contains("axis"));
}

TEST_CASE("nonzero_gives_c_order_coordinates_per_dim") {
  GraphBuilder b;
  const int x = b.input("float64", {2, 3});
  b.outputs = multi_node(b, "Nonzero", {x}, {"int64", "int64"}, 1, json::object());
  auto p = ember::Program::from_json(b.str());
  auto out = p->call({Array::of<double>(Shape{2, {2, 3}}, {0, NAN, -0.0, 2, 0, 1}).t});
  CHECK(values<int64_t>(out[0]) == std::vector<int64_t>{0, 1, 1});
  CHECK(values<int64_t>(out[1]) == std::vector<int64_t>{1, 0, 2});
}

TEST_CASE("ravel_and_unravel_round_trip_and_out_of_bounds_is_a_call_error") {
  GraphBuilder b;
  const int i = b.input("int64", {nullptr}), j = b.input("int64", {nullptr});
  const int dims = b.constant("int64", {2}, {3, 4});
  const int flat = b.node("RavelMultiIndex", {i, j, dims}, "int64", {nullptr}, {{"mode", "raise"}, {"order", "C"}});
  const int flat_f = b.node("RavelMultiIndex", {i, j, dims}, "int64", {nullptr}, {{"mode", "clip"}, {"order", "F"}});
  auto back = multi_node(b, "UnravelIndex", {flat, dims}, {"int64", "int64"}, 1, {{"order", "C"}});
  b.outputs = {flat, flat_f, back[0], back[1]};
  auto p = ember::Program::from_json(b.str());
  Array ia = Array::of<int64_t>(Shape{1, {3}}, {0, 2, 1}), ja = Array::of<int64_t>(Shape{1, {3}}, {3, 0, 2});
  auto out = p->call({ia.t, ja.t});
  CHECK(values<int64_t>(out[0]) == std::vector<int64_t>{3, 8, 6});
  CHECK(values<int64_t>(out[1]) == std::vector<int64_t>{9, 2, 7});
  CHECK(values<int64_t>(out[2]) == std::vector<int64_t>{0, 2, 1});
  CHECK(values<int64_t>(out[3]) == std::vector<int64_t>{3, 0, 2});
  Array bad = Array::of<int64_t>(Shape{1, {3}}, {0, 4, 1});
  CHECK_THAT(call_error(*p, {ia.t, bad.t}), Contains("RavelMultiIndex") && Contains("invalid entry"));
}

TEST_CASE("bartlett_is_numpys_triangle_and_empty_below_one") {
  GraphBuilder b;
  const int m = b.input("int64", json::array());
  b.outputs = {b.node("Bartlett", {m}, "float64", {nullptr})};
  auto p = ember::Program::from_json(b.str());
  int64_t five = 5, zero = 0;
  auto out = p->call({Array::of<int64_t>(Shape{0, {}}, {five}).t});
  CHECK(values<double>(out[0]) == std::vector<double>{0, 0.5, 1, 0.5, 0});
  out = p->call({Array::of<int64_t>(Shape{0, {}}, {zero}).t});
  CHECK(out[0].size() == 0);
}
