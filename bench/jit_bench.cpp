// JIT cost and benefit: compile time (per phase), measured peak memory and
// code size per op at each tier for Composites of 100 to 100,000 ops, with
// least-squares lines (slope, intercept, R^2); steady-state ns/element per
// tier against the interpreter. Tier 1 is measured twice: "1" is the direct
// x86 emitter (EMBER_JIT_T1=direct), "1L" LLVM's tier 1 (EMBER_JIT_T1=llvm). Large Composites are compiled in chunks of
// at most `chunk` instructions, as the tier manager does.
// Usage: jit_bench [max_ops=100000] [runs=5] [chunk1=2048] [max_ops_tier2=max_ops] [chunk2=256]
// (the chunk sizes are the tier manager's).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/jit_bench_util.hpp"
#include "interp/config.hpp"
#include "interp/vm.hpp"
#ifdef EMBER_WITH_JIT
#include "jit/disk_cache.hpp"
#include "jit/jit.hpp"
#endif
#include <filesystem>
#include <time.h>

using namespace ember;
using namespace ember::interp;
using bench::make_composite;
using bench::median;
using bench::ns_per_element;

namespace {

// Tier 1's code generator for the compiles that follow (EMBER_JIT_T1).
void set_t1(const char* mode) {
  setenv("EMBER_JIT_T1", mode, 1);
  config_reload_for_tests();
}

void fit(const char* what, const std::vector<double>& x, const std::vector<double>& y) {
  const double n = x.size();
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx), a = (sy - b * sx) / n;
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    ss_res += (y[i] - a - b * x[i]) * (y[i] - a - b * x[i]);
    ss_tot += (y[i] - sy / n) * (y[i] - sy / n);
  }
  std::printf("  fit %-12s = %.4g + %.4g * ops   (R^2 = %.5f)\n", what, a, b, ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0);
}

#ifdef EMBER_WITH_JIT
// One compile of the whole bytecode in chunks; sums the stats (peak: max).
jit::CompileStats compile_all(const Bytecode& bc, int tier, int chunk, int* pieces) {
  const int n = static_cast<int>(bc.code.size());
  const int np = std::max(1, (n + chunk - 1) / chunk);
  jit::CompileStats tot;
  std::vector<jit::Piece> keep;
  for (int k = 0; k < np; ++k) {
    jit::CompileStats st;
    keep.push_back(jit::compile_chunk(bc, int64_t(n) * k / np, int64_t(n) * (k + 1) / np, tier, &st));
    tot.seconds += st.seconds;
    tot.cpu_seconds += st.cpu_seconds;
    tot.emit_s += st.emit_s;
    tot.opt_s += st.opt_s;
    tot.codegen_s += st.codegen_s;
    tot.link_s += st.link_s;
    tot.lookup_s += st.lookup_s;
    tot.ir_instructions += st.ir_instructions;
    tot.code_bytes += st.code_bytes;
    tot.peak_bytes = std::max(tot.peak_bytes, st.peak_bytes);
  }
  *pieces = np;
  return tot;
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifndef EMBER_WITH_JIT
  std::puts("built without the JIT");
  return 0;
#else
  const int max_ops = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const int chunk = argc > 3 ? std::max(16, std::atoi(argv[3])) : 2048;
  const int max_ops2 = argc > 4 ? std::atoi(argv[4]) : max_ops;
  const int chunk2 = argc > 5 ? std::max(16, std::atoi(argv[5])) : 256;
  if (!jit::available()) {
    std::puts("JIT unavailable");
    return 0;
  }
  std::printf("== compile cost (Composite of N ops, 20%% transcendental; medians of %d runs; chunks <= %d / %d instr"
              " at tier 1 / 2) ==\n", runs, chunk, chunk2);
  std::puts("tier    ops  instr chunks     IR   wall_ms  cpu_ms cpu_us/op  peak_MB peak_B/op code_B/op |"
            " emit     opt      isel+cg  link     lookup (wall ms)");
  for (const char* mode : {"1", "1L", "2"}) {
    const int tier = mode[0] - '0';
    set_t1(std::string(mode) == "1L" ? "llvm" : "direct");
    std::vector<double> xs, ts, ws, ps;
    for (int n : {100, 1000, 10000, 100000}) {
      if (n > (tier == 2 ? max_ops2 : max_ops)) continue;
      Composite c = make_composite(n, 0.2, n);
      auto vm = Interpreted::compile(c);
      const Bytecode& bc = vm->bytecode();
      std::vector<double> cpu, sec, peak, code, e, o, g, l, u;
      size_t nir = 0;
      int np = 1;
      for (int r = 0; r < runs; ++r) {
        jit::CompileStats st = compile_all(bc, tier, tier == 1 ? chunk : chunk2, &np);
        sec.push_back(st.seconds);
        cpu.push_back(st.cpu_seconds);
        peak.push_back(double(st.peak_bytes));
        code.push_back(double(st.code_bytes));
        e.push_back(st.emit_s);
        o.push_back(st.opt_s);
        g.push_back(st.codegen_s);
        l.push_back(st.link_s);
        u.push_back(st.lookup_s);
        nir = st.ir_instructions;
      }
      const double s = median(sec), p = median(peak), cs = median(cpu);
      std::printf("%4s %6d %6zu %6d %6zu %9.2f %7.2f %9.2f %8.2f %9.0f %9.1f | %7.2f %7.2f %8.2f %7.2f %7.2f\n", mode,
                  n, bc.code.size(), np, nir, s * 1e3, cs * 1e3, cs * 1e6 / n, p / 1048576.0, p / n, median(code) / n,
                  median(e) * 1e3, median(o) * 1e3, median(g) * 1e3, median(l) * 1e3, median(u) * 1e3);
      std::fflush(stdout);
      xs.push_back(n);
      ts.push_back(cs * 1e6);
      ws.push_back(s * 1e6);
      ps.push_back(p);
    }
    if (xs.size() >= 2) {
      std::printf("tier %s:\n", mode);
      fit("cpu_us", xs, ts);
      fit("wall_us", xs, ws);
      fit("peak_bytes", xs, ps);
    }
  }
  // Should direct code be disk-cached? A hit costs at least the key's hash
  // and the file's read; the tier manager does both before it may link.
  std::puts("\n== tier-1 direct emit vs a disk-cache hit (CPU us, medians) ==");
  std::puts("   ops  direct_emit  cache_key  cache_get  llvm_obj_B");
  {
    const std::string dir = (std::filesystem::temp_directory_path() / "ember_jit_bench_cache").string();
    jit::DiskCache cache(dir, size_t(1) << 30);
    auto cpu_now = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) * 1e6 + 1e-3 * double(ts.tv_nsec);
    };
    for (int n : {10, 100, 1000}) {
      Composite c = make_composite(n, 0.2, 77 + n);
      auto vm = Interpreted::compile(c);
      const Bytecode& bc = vm->bytecode();
      const int ni = static_cast<int>(bc.code.size());
      set_t1("llvm");
      jit::CompileStats st;
      jit::compile_chunk(bc, 0, ni, 1, &st, true);
      const std::string cpu = jit::cpu_id();
      const std::string key = jit::cache_key(bc, 0, ni, 1, cpu, jit::llvm_version());
      cache.put(key, st.object);
      set_t1("direct");
      std::vector<double> te, tk, tg;
      for (int r = 0; r < std::max(runs, 9); ++r) {
        double t0 = cpu_now();
        jit::Piece p = jit::compile_chunk(bc, 0, ni, 1);
        te.push_back(cpu_now() - t0);
        t0 = cpu_now();
        const std::string k2 = jit::cache_key(bc, 0, ni, 1, cpu, jit::llvm_version());
        tk.push_back(cpu_now() - t0);
        t0 = cpu_now();
        auto obj = cache.get(k2);
        tg.push_back(cpu_now() - t0);
      }
      std::printf("%6d %12.1f %10.1f %10.1f %11zu\n", n, median(te), median(tk), median(tg), st.object.size());
    }
    std::filesystem::remove_all(dir);
  }

  std::puts("\n== steady state, 1e5 elements, ns/element (median of 5 interleaved rounds, each the median of 5 calls) ==");
  std::puts(" ops  math%   interp   tier1d   tier1L    tier2  speedup1d speedup1L speedup2");
  for (int n : {10, 100, 1000}) {
    for (double m : {0.0, 0.2}) {
      Composite c = make_composite(n, m, 1000 + n);
      auto vm = Interpreted::compile(c);
      const Bytecode& bc = vm->bytecode();
      const int ni = static_cast<int>(bc.code.size());
      set_t1("direct");
      jit::JitKernel k1(bc, {jit::compile_chunk(bc, 0, ni, 1)}, 1);
      set_t1("llvm");
      jit::JitKernel k1l(bc, {jit::compile_chunk(bc, 0, ni, 1)}, 1);
      jit::JitKernel k2(bc, {jit::compile_chunk(bc, 0, ni, 2)}, 2);
      std::vector<double> a, b, bl, d;
      for (int r = 0; r < 5; ++r) {  // interleaved, so load changes hit all four
        a.push_back(ns_per_element(*vm, 100000, 5));
        b.push_back(ns_per_element(k1, 100000, 5));
        bl.push_back(ns_per_element(k1l, 100000, 5));
        d.push_back(ns_per_element(k2, 100000, 5));
      }
      const double t0 = median(a), t1 = median(b), t1l = median(bl), t2 = median(d);
      std::printf("%4d %5.0f %8.2f %8.2f %8.2f %8.2f %9.2fx %8.2fx %8.2fx\n", n, m * 100, t0, t1, t1l, t2, t0 / t1,
                  t0 / t1l, t0 / t2);
      std::fflush(stdout);
    }
  }
  return 0;
#endif
}
