// Scan graphs for the C++ tests: buf[t + 1] = buf[t] * a + x[t] (one
// sequence, one sit-sot, one non-sequence), with attributes overridable to
// make bad nodes.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace ember::test {

inline nlohmann::json scan_inner_graph() {
  return nlohmann::json::parse(R"({"format": "ember-graph", "version": 1,
    "variables": [{"dtype": "float64", "shape": []}, {"dtype": "float64", "shape": []},
                  {"dtype": "float64", "shape": []}, {"dtype": "float64", "shape": []},
                  {"dtype": "float64", "shape": []}],
    "inputs": [{"var": 0}, {"var": 1}, {"var": 2}], "outputs": [4], "constants": [],
    "nodes": [{"op": "Elemwise", "inputs": [1, 2], "outputs": [3], "attrs": {"scalar_op": {"op": "Mul"}}},
              {"op": "Elemwise", "inputs": [3, 0], "outputs": [4], "attrs": {"scalar_op": {"op": "Add"}}}]})");
}

// Inputs: n_steps (int64), x, the buffer's initial value, a.
inline std::string scan_graph(const nlohmann::json& attr_changes = nlohmann::json::object()) {
  nlohmann::json attrs = {{"n_seqs", 1}, {"sit_sot_in_slices", {{-1}}}, {"n_non_seqs", 1},
                          {"inner", scan_inner_graph()}};
  attrs.merge_patch(attr_changes);
  nlohmann::json g = nlohmann::json::parse(R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "n", "dtype": "int64", "shape": []}, {"name": "x", "dtype": "float64", "shape": [null]},
                  {"name": "init", "dtype": "float64", "shape": [null]}, {"name": "a", "dtype": "float64", "shape": []},
                  {"dtype": "float64", "shape": [null]}],
    "inputs": [{"var": 0}, {"var": 1}, {"var": 2}, {"var": 3}], "outputs": [4], "constants": [],
    "nodes": [{"op": "Scan", "inputs": [0, 1, 2, 3], "outputs": [4]}]})");
  g["nodes"][0]["attrs"] = attrs;
  return g.dump();
}

}  // namespace ember::test
