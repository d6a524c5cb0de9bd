// A graph document built in code, one variable or node per call: the tests'
// way to write small graphs without hand-written JSON.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::test {

struct GraphBuilder {
  using json = nlohmann::json;
  json vars = json::array(), nodes = json::array(), inputs = json::array(), outputs = json::array(),
       constants = json::array();
  int var(const char* dt, json shape, const char* name = nullptr) {
    json v = {{"dtype", dt}, {"shape", shape}};
    if (name) v["name"] = name;
    vars.push_back(v);
    return static_cast<int>(vars.size()) - 1;
  }
  int input(const char* dt, json shape, const char* name = nullptr) {
    const int v = var(dt, shape, name);
    inputs.push_back({{"var", v}});
    return v;
  }
  int constant(const char* dt, json shape, json data) {
    const int v = var(dt, shape);
    constants.push_back({{"var", v}, {"data", data}});
    return v;
  }
  // One single-op Elemwise with one output of dtype dt and shape.
  int ew(const char* op, std::vector<int> in, const char* dt, json shape) {
    const int v = var(dt, shape);
    nodes.push_back({{"op", "Elemwise"}, {"inputs", in}, {"outputs", {v}}, {"attrs", {{"scalar_op", {{"op", op}}}}}});
    return v;
  }
  int node(const char* op, std::vector<int> in, const char* dt, json shape, json attrs = json::object()) {
    const int v = var(dt, shape);
    nodes.push_back({{"op", op}, {"inputs", in}, {"outputs", {v}}, {"attrs", attrs}});
    return v;
  }
  std::string str() const {
    return json{{"format", "ember-graph"}, {"version", 1}, {"variables", vars}, {"inputs", inputs},
                {"outputs", outputs}, {"constants", constants}, {"nodes", nodes}}
        .dump();
  }
};

}  // namespace ember::test
