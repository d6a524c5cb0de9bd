// Per-node time of a graph's calls: node_profile GRAPH X.npy [CALLS]
// Runs Program::run's loop (same steps, same workspace) with a clock read
// around each node; prints each node's median time over CALLS calls (default
// 400), sorted by cost, and the sum per op. The clock reads add ~20-40 ns per
// node. EMBER_PARALLEL_THRESHOLD=N sets Options::parallel_threshold (elements
// below which a node stays on the calling thread). NODE_PROFILE_ALL_OPS=1
// lists every scalar op of a Composite with its count, and the step's
// input and output counts. Built with the other
// bench/*.cpp: build/<variant>/bench/node_profile.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/graph/npy.hpp"
#include "engine/ops/elemwise.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/config.hpp"
#include "interp/scalar_op.hpp"

using namespace ember;
using clk = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: node_profile GRAPH X.npy [CALLS]\n");
    return 2;
  }
  Options opt;
  if (const auto& t = config().parallel_threshold) opt.parallel_threshold = std::atoll(t->c_str());
  auto prog = Program::load(argv[1], opt);
  Array x = read_npy(argv[2]);
  const int calls = argc > 3 ? std::atoi(argv[3]) : 400;
  auto ws = prog->make_workspace();
  std::vector<Tensor> args{x.t};
  for (int r = 0; r < 20; ++r) prog->run(*ws, args);  // sets the arguments, warms the buffers
  const ProgramImpl& p = prog->impl();
  const size_t ns = p.steps.size();
  std::vector<std::vector<double>> t(ns);
  std::vector<double> total;
  for (int c = 0; c < calls; ++c) {
    const auto t0 = clk::now();
    auto prev = t0;
    RunGuard guard(*ws);  // as Program::run
    for (size_t k = 0; k < ns; ++k) {
      run_step(p, *ws, p.steps[k]);  // as Program::run
      const auto now = clk::now();
      t[k].push_back(std::chrono::duration<double, std::nano>(now - prev).count());
      prev = now;
    }
    total.push_back(std::chrono::duration<double, std::nano>(prev - t0).count());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  struct Row {
    size_t k;
    double med;
  };
  std::vector<Row> rows;
  std::map<std::string, double> per_op;
  double sum = 0;
  // A step whose Elemwise sums outputs in place (engine/program/fuse_reduce.cpp) is
  // "Elemwise+Sum", shown with its largest operand: its outputs may be sums.
  auto name_of = [&](const Step& st) {
    const auto* e = dynamic_cast<const ElemwiseKernel*>(st.kernel);
    return e && !e->reduced().empty() ? st.name + "+Sum" : st.name;
  };
  auto shown_shape = [&](const Step& st) {
    const Tensor* big = &ws->values[st.out[0]];
    if (name_of(st) != st.name)
      for (int v : st.in)
        if (ws->values[v].size() > big->size()) big = &ws->values[v];
    return big->shape.str();
  };
  // An Elemwise's scalar work in a few words: its Composite's size and commonest ops.
  auto kernel_of = [&](const Step& st) -> std::string {
    const auto* e = dynamic_cast<const ElemwiseKernel*>(st.kernel);
    if (!e) return "";
    const interp::Composite& c = e->composite();
    std::map<std::string, int> count;
    for (const auto& n : c.nodes) ++count[std::string(interp::op_info(n.op).name)];
    std::vector<std::pair<int, std::string>> top;
    for (const auto& [op, n] : count) top.push_back({-n, op});
    std::sort(top.begin(), top.end());
    std::string s = "Composite[" + std::to_string(c.nodes.size()) + ":";
    const size_t shown = std::getenv("NODE_PROFILE_ALL_OPS") ? top.size() : 4;
    for (size_t i = 0; i < top.size() && i < shown; ++i)
      s += (i ? "," : " ") + top[i].second + (shown > 4 ? "x" + std::to_string(-top[i].first) : "");
    if (shown > 4) s += "; " + std::to_string(st.in.size()) + " in, " + std::to_string(st.out.size()) + " out";
    return s + "]";
  };
  for (size_t k = 0; k < ns; ++k) {
    const double m = median(t[k]);
    rows.push_back({k, m});
    per_op[name_of(p.steps[k])] += m;
    sum += m;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.med > b.med; });
  std::printf("%s: %zu nodes, %d calls; median call %.2f us, sum of node medians %.2f us\n", argv[1], ns, calls,
              median(total) / 1e3, sum / 1e3);
  for (const Row& r : rows) {
    if (r.med < 0.01 * sum && &r != &rows[0]) continue;
    const Step& st = p.steps[r.k];
    std::printf("  node %4d %-22s out %-12s %9.2f us  %5.1f%%  %s\n", st.shown >= 0 ? st.shown : st.node,
                name_of(st).c_str(), shown_shape(st).c_str(), r.med / 1e3, 100 * r.med / sum, kernel_of(st).c_str());
  }
  std::printf("per op:\n");
  for (const auto& [op, v] : per_op) std::printf("  %-22s %9.2f us  %5.1f%%\n", op.c_str(), v / 1e3, 100 * v / sum);
  return 0;
}
