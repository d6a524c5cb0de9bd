// PythonCallback nodes: a graph with one does not load without the host's
// callbacks (the error names the op and the host it needs); with a host
// table the node runs the host function, and what it returns is checked
// against the node's declared outputs.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.hpp"
#include "ember/host.hpp"
#include "engine/graph/graph.hpp"

using namespace ember;

namespace {

// x (float64 vector) -> callback "Scan" -> y (float64, length 3) -> y * 2
const char* kGraph = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "x", "dtype": "float64", "shape": [null]},
                {"dtype": "float64", "shape": [3]},
                {"dtype": "float64", "shape": [3]},
                {"dtype": "float64", "shape": []},
                {"dtype": "float64", "shape": [1]}],
  "inputs": [{"var": 0}], "outputs": [2], "constants": [{"var": 3, "data": [2.0]}],
  "nodes": [{"op": "PythonCallback", "inputs": [0], "outputs": [1],
             "attrs": {"op": "Scan", "callback": 0, "text": "Scan{...}"}},
            {"op": "DimShuffle", "inputs": [3], "outputs": [4], "attrs": {"new_order": ["x"]}},
            {"op": "Elemwise", "inputs": [1, 4], "outputs": [2], "attrs": {"scalar_op": {"op": "Mul"}}}]})";

std::string graph_text() { return kGraph; }

// The first n elements of the input's cumulative sum, with a shape the test picks.
struct CumSum final : HostCallback {
  int64_t out_len = 3;
  DType out_dt = DType::Float64;
  mutable std::atomic<int> calls{0};
  void run(HostCall& c) const override {
    ++calls;
    const Tensor& x = c.in(0);
    Shape s;
    s.ndim = 1;
    s.dims[0] = out_len;
    Tensor& y = c.out(0, out_dt, s);
    double acc = 0;
    for (int64_t i = 0; i < out_len; ++i) {
      acc += i < x.dim(0) ? x.at<double>(i) : 0.0;
      if (out_dt == DType::Float64) y.ptr<double>()[i] = acc;
    }
  }
};

Options with_host(std::shared_ptr<const HostCallback> fn) {
  Options o;
  auto t = std::make_shared<HostCallbacks>();
  t->fns.push_back(std::move(fn));
  o.host = t;
  return o;
}

}  // namespace

TEST_CASE("callback_node_without_host_fails_at_load_naming_op_and_host") {
  try {
    Program::from_json(graph_text());
    FAIL("loaded without a host");
  } catch (const LoadError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("node 0 (PythonCallback)") != std::string::npos);
    CHECK(msg.find("op Scan") != std::string::npos);
    CHECK(msg.find("Python host") != std::string::npos);
  }
}

TEST_CASE("callback_node_index_outside_host_table_is_a_load_error") {
  std::string g = graph_text();
  g.replace(g.find("\"callback\": 0"), 13, "\"callback\": 5");
  auto fn = std::make_shared<CumSum>();
  CHECK_THROWS_WITH(Program::from_graph(Graph::parse(g, nullptr, 0, "<t>"), with_host(fn)),
                    Catch::Contains("attrs.callback"));
}

TEST_CASE("callback_node_runs_host_function_between_native_nodes") {
  auto fn = std::make_shared<CumSum>();
  auto p = Program::from_graph(Graph::parse(graph_text(), nullptr, 0, "<t>"), with_host(fn));
  Array x = Array::of<double>(Shape{1, {4}}, {1, 2, 3, 4});
  auto out = p->call({x.t});
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].size() == 3);
  CHECK(out[0].data<double>()[0] == 2.0);
  CHECK(out[0].data<double>()[1] == 6.0);
  CHECK(out[0].data<double>()[2] == 12.0);
  CHECK(fn->calls == 1);
}

TEST_CASE("callback_output_of_wrong_shape_or_dtype_is_a_call_error_naming_node") {
  auto fn = std::make_shared<CumSum>();
  auto p = Program::from_graph(Graph::parse(graph_text(), nullptr, 0, "<t>"), with_host(fn));
  Array x = Array::of<double>(Shape{1, {4}}, {1, 2, 3, 4});
  fn->out_len = 4;
  CHECK_THROWS_WITH(p->call({x.t}), Catch::Contains("node 0 (PythonCallback)") &&
                                        Catch::Contains("PyTensor op Scan") && Catch::Contains("shape (4,)"));
  fn->out_len = 3;
  fn->out_dt = DType::Float32;
  CHECK_THROWS_WITH(p->call({x.t}), Catch::Contains("dtype float32, declared float64"));
  fn->out_dt = DType::Float64;
  CHECK(p->call({x.t})[0].data<double>()[2] == 12.0);  // the workspace is still usable
}

TEST_CASE("callback_node_called_from_many_threads") {
  auto fn = std::make_shared<CumSum>();
  auto p = Program::from_graph(Graph::parse(graph_text(), nullptr, 0, "<t>"), with_host(fn));
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      Array x = Array::of<double>(Shape{1, {3}}, {double(t), 1, 1});
      for (int k = 0; k < 200; ++k)
        if (p->call({x.t})[0].data<double>()[2] != 2.0 * (t + 2)) ++bad;
    });
  for (auto& th : ts) th.join();
  CHECK(bad == 0);
  CHECK(fn->calls == 800);
}

// The load-time passes fold nodes of constant inputs by running them; a host
// node runs at call time only, once per call.
TEST_CASE("callback_node_of_constant_inputs_is_not_run_at_load") {
  const char* g = R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [3]},
                  {"dtype": "float64", "shape": [3]},
                  {"dtype": "float64", "shape": [3]},
                  {"dtype": "float64", "shape": [3]}],
    "inputs": [{"var": 0}], "outputs": [3], "constants": [{"var": 1, "data": [1.0, 2.0, 3.0]}],
    "nodes": [{"op": "PythonCallback", "inputs": [1], "outputs": [2],
               "attrs": {"op": "Scan", "callback": 0, "text": "Scan{...}"}},
              {"op": "Elemwise", "inputs": [2, 0], "outputs": [3], "attrs": {"scalar_op": {"op": "Mul"}}}]})";
  auto fn = std::make_shared<CumSum>();
  auto p = Program::from_graph(Graph::parse(g, nullptr, 0, "<t>"), with_host(fn));
  CHECK(fn->calls == 0);
  Array x = Array::of<double>(Shape{1, {3}}, {2, 2, 2});
  for (int k = 1; k <= 2; ++k) {
    auto out = p->call({x.t});
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].size() == 3);
    CHECK(out[0].data<double>()[0] == 2.0);
    CHECK(out[0].data<double>()[1] == 6.0);
    CHECK(out[0].data<double>()[2] == 12.0);
    CHECK(fn->calls == k);
  }
}
