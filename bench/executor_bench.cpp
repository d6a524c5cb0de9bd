// Executor overhead.
//   executor_bench                      ns per node on a chain of 1000 0-d Elemwise
//                                       ops, and the load time of a graph with a
//                                       10^6-element constant
//   executor_bench --chain-only CALLS   the chain only, CALLS calls (for callgrind)
//   executor_bench GRAPH X.npy [CALLS]  a nutpie-style logp graph: median time per
//                                       call of Program::run and of ember_logp (the
//                                       C ABI), in alternating batches
// Medians of runs: the machine is shared, so the median batch is the one
// least disturbed by other processes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/c_api.hpp"
#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"
#include "engine/graph/npy.hpp"

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

template <class F> double ns_per(int calls, F&& f) {
  const auto t0 = clock_type::now();
  for (int r = 0; r < calls; ++r) f();
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / calls;
}

void run_chain(int n, int reps, int calls) {
  auto p = Program::from_json(chain(n, false));
  auto ws = p->make_workspace();
  Array x = Array::empty(DType::Float64, Shape{});
  x.data<double>()[0] = 0.5;
  std::vector<Tensor> args{x.t};
  for (int r = 0; r < 100; ++r) p->run(*ws, args);
  std::vector<double> per_node;
  for (int rep = 0; rep < reps; ++rep) per_node.push_back(ns_per(calls, [&] { p->run(*ws, args); }) / n);
  std::printf("executor: 0-d chain of %d Elemwise nodes: median %.1f ns per node (%d runs, min %.1f)\n", n,
              median(per_node), reps, *std::min_element(per_node.begin(), per_node.end()));
}

void run_loader() {
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
}

int run_graph(const char* path, const char* xpath, int calls) {
  auto p = Program::load(path);
  Array x = read_npy(xpath);
  std::unique_ptr<ember_program, void (*)(ember_program*)> c(wrap_for_c_abi(p), ember_program_free);
  const uint64_t dim = static_cast<uint64_t>(x.size());
  std::vector<double> grad(dim);
  double logp = 0;
  auto ws = p->make_workspace();
  std::vector<Tensor> args{x.t};
  auto abi = [&] {
    if (ember_logp(dim, x.data<double>(), grad.data(), &logp, c.get()) != 0) {
      std::fprintf(stderr, "ember_logp failed: %s\n", ember_last_error());
      std::exit(1);
    }
  };
  for (int r = 0; r < 20; ++r) {
    p->run(*ws, args);
    abi();
  }
  // Batches of about 0.5 ms (shorter than a scheduler slice), so that a batch
  // the scheduler interrupts is an outlier the median drops.
  const double t1 = ns_per(10, [&] { p->run(*ws, args); });
  const int batch = calls > 0 ? calls : std::max(1, static_cast<int>(5e5 / std::max(t1, 1.0)));
  const int reps = 201;
  std::vector<double> run_ns, abi_ns;
  for (int rep = 0; rep < reps; ++rep) {
    run_ns.push_back(ns_per(batch, [&] { p->run(*ws, args); }));
    abi_ns.push_back(ns_per(batch, abi));
  }
  const double r = median(run_ns), a = median(abi_ns);
  const size_t nodes = p->graph().nodes.size();
  std::printf("%s: %zu nodes, logp %.17g\n", path, nodes, logp);
  std::printf("  Program::run  median %10.2f us per call (%7.1f ns per node), %9.0f calls/s\n", r / 1e3, r / nodes,
              1e9 / r);
  std::printf("  ember_logp    median %10.2f us per call (C ABI overhead %+.2f us), %9.0f calls/s\n", a / 1e3,
              (a - r) / 1e3, 1e9 / a);
  std::printf("  (%d alternating batches of %d calls)\n", reps, batch);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--chain-only") == 0) {
    run_chain(1000, 1, std::atoi(argv[2]));
    return 0;
  }
  if (argc >= 3) return run_graph(argv[1], argv[2], argc >= 4 ? std::atoi(argv[3]) : 0);
  run_chain(1000, 15, 200);
  run_loader();
  return 0;
}
