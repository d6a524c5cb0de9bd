// The VM against hand-written C++ for the same Composites (generated into
// interp_bench_cases.hpp by gen_interp_bench.py; built with -O3). Prints a
// table of medians over repeated runs; not a test.
#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "interp/bytecode.hpp"
#include "interp/vm.hpp"
#include "interp_bench_cases.hpp"

using namespace ember;
using namespace ember::interp;

namespace {

using Hand = void (*)(int64_t, const double* const*, double* const*);

struct Case {
  const char* name;
  Composite c;
  Hand fused, blocked;
  bool big;  // also run on 10^6 elements
};

// CPU time of this thread: the machine is shared, and wall time would
// count the time other processes hold the core.
double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Median ns per call of each function; runs are interleaved so load from
// other processes on the machine hits every contender alike.
template <class... F> std::vector<double> median_ns(int reps, int64_t calls, F&&... f) {
  constexpr size_t N = sizeof...(F);
  std::vector<std::vector<double>> t(N);
  (f(), ...);  // warm up (thread-local scratch, caches)
  auto time = [&](auto& g) {
    const double t0 = thread_cpu_ns();
    for (int64_t k = 0; k < calls; ++k) g();
    return (thread_cpu_ns() - t0) / static_cast<double>(calls);
  };
  for (int r = 0; r < reps; ++r) {
    size_t i = 0;
    ((t[i++].push_back(time(f))), ...);
  }
  std::vector<double> med;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

struct Data {
  std::vector<std::vector<double>> in, out;
  std::vector<const double*> inp;
  std::vector<double*> outp;
  std::vector<StridedPtr> sin, sout;
  Data(const Composite& c, int64_t n) {
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> u(0.5, 2.0);
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      in.emplace_back(n);
      for (double& x : in.back()) x = u(rng);
    }
    for (size_t k = 0; k < c.outputs.size(); ++k) out.emplace_back(n, 0.0);
    for (auto& v : in) inp.push_back(v.data()), sin.push_back({v.data(), 1});
    for (auto& v : out) outp.push_back(v.data()), sout.push_back({v.data(), 1});
  }
};

// Fraction of output elements that differ in bits between two runs.
double mismatch(const Data& a, const Data& b) {
  int64_t bad = 0, tot = 0;
  for (size_t k = 0; k < a.out.size(); ++k)
    for (size_t i = 0; i < a.out[k].size(); ++i, ++tot)
      bad += std::memcmp(&a.out[k][i], &b.out[k][i], 8) != 0 && !(std::isnan(a.out[k][i]) && std::isnan(b.out[k][i]));
  return tot ? static_cast<double>(bad) / static_cast<double>(tot) : 0;
}

double finite_fraction(const Data& d) {
  int64_t ok = 0, tot = 0;
  for (auto& v : d.out)
    for (double x : v) ok += std::isfinite(x), ++tot;
  return static_cast<double>(ok) / static_cast<double>(tot);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  std::vector<Case> cases = {
      {"(a) 25 arithmetic", case_a(), fused_a, blocked_a, true},
      {"(b) 100 with exp/log/log1p", case_b(), fused_b, blocked_b, true},
      {"(c) 400 mixed", case_c(), fused_c, blocked_c, true},
      {"(d) LogNormal-like 0-d", case_d(), fused_d, blocked_d, false},
  };
  if (argc > 2 && std::string(argv[2]) == "sweep") {
    // Block-size tuning: VM time per element on 10^6 elements.
    std::printf("block size sweep, ns/element on 10^6 elements (median of %d runs)\n%-28s", reps, "case");
    const int64_t sizes[] = {64, 128, 256, 512, 1024, 2048, 4096};
    for (int64_t b : sizes) std::printf(" %8lld", static_cast<long long>(b));
    std::printf("\n");
    for (Case& cs : cases) {
      if (!cs.big) continue;
      auto k = Interpreted::compile(cs.c);
      const int64_t n = 1000000;
      Data dv(cs.c, n);
      std::printf("%-28s", cs.name);
      for (int64_t b : sizes) {
        Interpreted::set_block_size_for_tuning(b);
        auto med = median_ns(reps, 1, [&] { k->run(n, dv.sin.data(), dv.sout.data()); });
        std::printf(" %8.2f", med[0] / static_cast<double>(n));
      }
      std::printf("\n");
    }
    return 0;
  }
  std::printf("block size %d, medians of %d runs (thread CPU time); ratio = VM / best hand loop\n\n", static_cast<int>(Interpreted::block_size()), reps);
  std::printf("%-28s %5s %5s %5s %4s | %10s %10s %10s | %6s | %s\n", "case", "nodes", "instr", "in", "out",
              "VM", "fused", "blocked", "ratio", "notes");
  const std::string only = argc > 2 ? argv[2] : "";
  for (Case& cs : cases) {
    if (!only.empty() && std::string(cs.name).find("(" + only + ")") != 0) continue;
    auto k = Interpreted::compile(cs.c);
    const size_t ninstr = k->bytecode().code.size();
    std::vector<int64_t> sizes = {1};
    if (cs.big) sizes.push_back(argc > 3 ? std::atoll(argv[3]) : 1000000);
    for (int64_t n : sizes) {
      Data dv(cs.c, n), df(cs.c, n), db(cs.c, n);
      const int64_t calls = n == 1 ? 20000 : std::max<int64_t>(1, 1000000 / n);
      auto med = median_ns(
          reps, calls, [&] { k->run(n, dv.sin.data(), dv.sout.data()); },
          [&] { cs.fused(n, df.inp.data(), df.outp.data()); },
          [&] { cs.blocked(n, db.inp.data(), db.outp.data()); });
      const double tv = med[0], tf = med[1], tb = med[2];
      char notes[160];
      if (n == 1)
        std::snprintf(notes, sizeof notes, "0-d: %.2f ns/instr", tv / static_cast<double>(ninstr));
      else
        std::snprintf(notes, sizeof notes, "n=%lld: %.2f ns/elem", static_cast<long long>(n), tv / static_cast<double>(n));
      std::printf("%-28s %5zu %5zu %5zu %4zu | %8.0fns %8.0fns %8.0fns | %5.2fx | %s; bits differ %.3g%%, finite %.0f%%\n",
                  cs.name, cs.c.nodes.size(), ninstr, cs.c.inputs.size(), cs.c.outputs.size(), tv, tf, tb,
                  tv / std::min(tf, tb), notes, 100 * mismatch(dv, df), 100 * finite_fraction(dv));
    }
  }
  return 0;
}
