// One graph loaded twice, with a load option off (A) and on (B), timed side
// by side in one process: options_ab GRAPH X.npy OPTION [BATCHES]
// OPTION: fuse_elemwise or passes. Batches of ~0.5 ms
// alternate A and B (the order flips each round); prints each side's median
// time per call and the median of the per-round ratios A/B (> 1: B faster).
// On a shared machine the paired ratio is the figure to quote. EMBER_JIT
// applies to both programs (eager: both compile everything first).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/graph/npy.hpp"

using namespace ember;
using clk = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: options_ab GRAPH X.npy OPTION [BATCHES]\n");
    return 2;
  }
  const std::string opt = argv[3];
  Options a, b;
  if (opt == "fuse_elemwise") a.fuse_elemwise = false;
  else if (opt == "passes") a.passes = Options::Passes{false, false, false, false, false, false};
  else {
    std::fprintf(stderr, "options_ab: unknown option %s\n", opt.c_str());
    return 2;
  }
  const int batches = argc > 4 ? std::atoi(argv[4]) : 151;
  auto pa = Program::load(argv[1], a), pb = Program::load(argv[1], b);
  Array x = read_npy(argv[2]);
  auto wa = pa->make_workspace(), wb = pb->make_workspace();
  std::vector<Tensor> args{x.t};
  // Warm-up, and the batch size: calls per ~0.5 ms.
  int per = 1;
  for (auto t0 = clk::now(); clk::now() - t0 < std::chrono::milliseconds(300);) {
    pa->run(*wa, args);
    pb->run(*wb, args);
  }
  {
    const auto t0 = clk::now();
    int n = 0;
    while (clk::now() - t0 < std::chrono::microseconds(500)) {
      pa->run(*wa, args);
      ++n;
    }
    per = std::max(1, n);
  }
  auto batch = [&](const Program& p, Workspace& ws) {
    const auto t0 = clk::now();
    for (int i = 0; i < per; ++i) p.run(ws, args);
    return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / per;
  };
  std::vector<double> ta, tb, ratio;
  for (int r = 0; r < batches; ++r) {
    double x1, x2;
    if (r % 2) {
      x2 = batch(*pb, *wb);
      x1 = batch(*pa, *wa);
    } else {
      x1 = batch(*pa, *wa);
      x2 = batch(*pb, *wb);
    }
    ta.push_back(x1);
    tb.push_back(x2);
    ratio.push_back(x1 / x2);
  }
  // The outputs agree bit for bit (the options are exact).
  const auto& oa = pa->run(*wa, args);
  const auto& ob = pb->run(*wb, args);
  bool same = oa.size() == ob.size();
  for (size_t k = 0; same && k < oa.size(); ++k)
    same = oa[k].size() == ob[k].size() &&
           std::memcmp(oa[k].data, ob[k].data, oa[k].size() * dtype_size(oa[k].dtype)) == 0;
  std::printf("%s %s: off %.3f us, on %.3f us per call; paired ratio off/on %.3f (%d batches of %d calls)%s\n",
              argv[1], opt.c_str(), median(ta) / 1e3, median(tb) / 1e3, median(ratio), batches, per,
              same ? "" : "  OUTPUTS DIFFER");
  return same ? 0 : 1;
}
