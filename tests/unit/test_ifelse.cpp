// IfElse: the taken branch's values, and only the steps that branch needs
// run (engine/program/lazy_branches.cpp). A CheckAndRaise that fails on the
// untaken side shows which steps ran.
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"

using namespace ember;

namespace {

// out = c ? x * x : -(CheckAndRaise(x, ok))
const char* kOne = R"({"format": "ember-graph", "version": 1,
  "variables": [{"dtype": "bool", "shape": []}, {"dtype": "float64", "shape": [3]}, {"dtype": "bool", "shape": []},
                {"dtype": "float64", "shape": [3]}, {"dtype": "float64", "shape": [3]}, {"dtype": "float64", "shape": [3]},
                {"dtype": "float64", "shape": [3]}],
  "inputs": [{"var": 0}, {"var": 1}, {"var": 2}], "outputs": [6], "constants": [],
  "nodes": [
    {"op": "Elemwise", "inputs": [1], "outputs": [3], "attrs": {"scalar_op": {"op": "Sqr"}}},
    {"op": "CheckAndRaise", "inputs": [1, 2], "outputs": [4], "attrs": {"msg": "else branch ran"}},
    {"op": "Elemwise", "inputs": [4], "outputs": [5], "attrs": {"scalar_op": {"op": "Neg"}}},
    {"op": "IfElse", "inputs": [0, 3, 5], "outputs": [6], "attrs": {"n_outs": 1}}]})";

// out = a ? (b ? s : -(Check(x, okb))) : s + Check(x, oka)^2, with s = x * x
// needed by the inner then branch and the outer else branch.
const char* kNested = R"({"format": "ember-graph", "version": 1,
  "variables": [{"dtype": "bool", "shape": []}, {"dtype": "bool", "shape": []}, {"dtype": "float64", "shape": [2]},
                {"dtype": "bool", "shape": []}, {"dtype": "bool", "shape": []},
                {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]},
                {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]},
                {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]}],
  "inputs": [{"var": 0}, {"var": 1}, {"var": 2}, {"var": 3}, {"var": 4}], "outputs": [12], "constants": [],
  "nodes": [
    {"op": "Elemwise", "inputs": [2], "outputs": [5], "attrs": {"scalar_op": {"op": "Sqr"}}},
    {"op": "CheckAndRaise", "inputs": [2, 4], "outputs": [6], "attrs": {"msg": "inner else ran"}},
    {"op": "Elemwise", "inputs": [6], "outputs": [7], "attrs": {"scalar_op": {"op": "Neg"}}},
    {"op": "IfElse", "inputs": [1, 5, 7], "outputs": [8]},
    {"op": "CheckAndRaise", "inputs": [2, 3], "outputs": [9], "attrs": {"msg": "outer else ran"}},
    {"op": "Elemwise", "inputs": [9], "outputs": [10], "attrs": {"scalar_op": {"op": "Sqr"}}},
    {"op": "Elemwise", "inputs": [5, 10], "outputs": [11], "attrs": {"scalar_op": {"op": "Add"}}},
    {"op": "IfElse", "inputs": [0, 8, 11], "outputs": [12]}]})";

Array flag(bool v) {
  Array a = Array::empty(DType::Bool, Shape{0, {}});
  a.data<bool>()[0] = v;
  return a;
}

Array vec(std::vector<double> v) {
  Array a = Array::empty(DType::Float64, Shape{1, {static_cast<int64_t>(v.size())}});
  std::memcpy(a.data<double>(), v.data(), v.size() * sizeof(double));
  return a;
}

std::vector<double> values(const Array& a) { return {a.data<double>(), a.data<double>() + a.size()}; }

}  // namespace

TEST_CASE("ifelse_returns_the_taken_branch_and_skips_the_other") {
  auto p = Program::from_json(kOne);
  const Array x = vec({1.5, -2.0, 3.0});
  // The else branch's check fails (ok false), but the then branch is taken.
  CHECK(values(p->call({flag(true).t, x.t, flag(false).t})[0]) == std::vector<double>{2.25, 4.0, 9.0});
  CHECK(values(p->call({flag(false).t, x.t, flag(true).t})[0]) == std::vector<double>{-1.5, 2.0, -3.0});
  CHECK_THROWS_WITH(p->call({flag(false).t, x.t, flag(false).t}), Catch::Contains("else branch ran"));
  // Taking the then branch again after a failed call: nothing stale.
  CHECK(values(p->call({flag(true).t, x.t, flag(false).t})[0]) == std::vector<double>{2.25, 4.0, 9.0});
}

TEST_CASE("nested_ifelse_runs_shared_values_and_only_the_open_branches") {
  auto p = Program::from_json(kNested);
  const Array x = vec({3.0, -0.5});
  auto run = [&](bool a, bool b, bool oka, bool okb) {
    return values(p->call({flag(a).t, flag(b).t, x.t, flag(oka).t, flag(okb).t})[0]);
  };
  CHECK(run(true, true, false, false) == std::vector<double>{9.0, 0.25});
  CHECK(run(true, false, false, true) == std::vector<double>{-3.0, 0.5});
  // The inner IfElse is not needed: its else branch does not run whatever b is.
  CHECK(run(false, false, true, false) == std::vector<double>{18.0, 0.5});
  CHECK(run(false, true, true, false) == std::vector<double>{18.0, 0.5});
  CHECK_THROWS_WITH(run(false, true, false, true), Catch::Contains("outer else ran"));
  CHECK_THROWS_WITH(run(true, false, true, false), Catch::Contains("inner else ran"));
}

TEST_CASE("ifelse_with_passes_and_fusion_off_gives_the_same_values") {
  Options o;
  o.passes = Options::Passes{false, false, false, false, false, false};
  auto p = Program::from_json(kNested, o);
  const Array x = vec({3.0, -0.5});
  CHECK(values(p->call({flag(false).t, flag(true).t, x.t, flag(true).t, flag(false).t})[0]) ==
        std::vector<double>{18.0, 0.5});
}

TEST_CASE("ifelse_rejects_bad_nodes_naming_the_field") {
  auto graph = [](const char* vars, const char* node) {
    return std::string(R"({"format": "ember-graph", "version": 1, "variables": )") + vars +
           R"(, "inputs": [{"var": 0}, {"var": 1}, {"var": 2}], "outputs": [3], "constants": [], "nodes": [)" +
           node + "]}";
  };
  const char* ok_vars = R"([{"dtype": "bool", "shape": []}, {"dtype": "float64", "shape": [2]},
                            {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]}])";
  auto fails = [&](const char* vars, const char* node, const char* what) {
    INFO(node);
    CHECK_THROWS_WITH(Program::from_json(graph(vars, node)),
                      Catch::Contains("node 0 (IfElse)") && Catch::Contains(what));
  };
  fails(ok_vars, R"({"op": "IfElse", "inputs": [0, 1], "outputs": [3]})", "input");
  fails(ok_vars, R"({"op": "IfElse", "inputs": [0, 1, 2], "outputs": [3], "attrs": {"n_outs": 2}})", "n_outs");
  fails(R"([{"dtype": "bool", "shape": [1]}, {"dtype": "float64", "shape": [2]},
            {"dtype": "float64", "shape": [2]}, {"dtype": "float64", "shape": [2]}])",
        R"({"op": "IfElse", "inputs": [0, 1, 2], "outputs": [3]})", "condition");
  fails(R"([{"dtype": "bool", "shape": []}, {"dtype": "float64", "shape": [2]},
            {"dtype": "float32", "shape": [2]}, {"dtype": "float64", "shape": [2]}])",
        R"({"op": "IfElse", "inputs": [0, 1, 2], "outputs": [3]})", "else branch");
  fails(R"([{"dtype": "bool", "shape": []}, {"dtype": "float64", "shape": [2]},
            {"dtype": "float64", "shape": [3]}, {"dtype": "float64", "shape": [2]}])",
        R"({"op": "IfElse", "inputs": [0, 1, 2], "outputs": [3]})", "shape");
}

TEST_CASE("ifelse_checks_a_branch_value_against_the_output_static_shape") {
  // Branches of unknown length; the output is declared of length 2.
  auto p = Program::from_json(R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "bool", "shape": []}, {"dtype": "float64", "shape": [null]},
                  {"dtype": "float64", "shape": [null]}, {"dtype": "float64", "shape": [2]}],
    "inputs": [{"var": 0}, {"var": 1}, {"var": 2}], "outputs": [3], "constants": [],
    "nodes": [{"op": "IfElse", "inputs": [0, 1, 2], "outputs": [3]}]})");
  CHECK(values(p->call({flag(false).t, vec({1, 2, 3}).t, vec({4, 5}).t})[0]) == std::vector<double>{4, 5});
  CHECK_THROWS_WITH(p->call({flag(true).t, vec({1, 2, 3}).t, vec({4, 5}).t}), Catch::Contains("IfElse"));
}
