// JIT cost and benefit: compile time, measured peak memory and code size per
// op at each tier for Composites of 100 to 100,000 ops (with a least-squares
// line), and steady-state ns/element per tier against the interpreter.
// Usage: jit_bench [max_ops] (default 100000; tier 2 stops at 10,000).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "interp/vm.hpp"
#ifdef EMBER_WITH_JIT
#include "jit/jit.hpp"
#endif

using namespace ember;
using namespace ember::interp;

namespace {

// A float64 Composite of n nodes over 2 inputs; `math` in [0,1] is the
// share of transcendental ops. Each node reads one of the last few values.
Composite make(int n, double math, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Composite c;
  c.inputs = {DType::Float64, DType::Float64};
  c.constants.push_back({DType::Float64, 0.5, 0});
  const ScalarOp arith[] = {ScalarOp::Add, ScalarOp::Mul, ScalarOp::Sub, ScalarOp::Maximum, ScalarOp::TrueDiv};
  const ScalarOp trans[] = {ScalarOp::Exp, ScalarOp::Log1p, ScalarOp::Tanh, ScalarOp::Sin};
  for (int k = 0; k < n; ++k) {
    const int32_t nv = c.num_values();
    auto pick = [&] { return nv - 1 - static_cast<int32_t>(rng() % std::min<int32_t>(nv, 6)); };
    if (std::uniform_real_distribution<>(0, 1)(rng) < math)
      c.nodes.push_back({trans[rng() % 4], DType::Float64, {pick()}});
    else
      c.nodes.push_back({arith[rng() % 5], DType::Float64, {pick(), pick()}});
  }
  c.outputs.push_back(c.num_values() - 1);
  return c;
}

double ns_per_element(const ElemKernel& k, int64_t n, int reps) {
  std::vector<double> x(n), y(n), z(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.001 * (i % 1000);
    y[i] = 1.0 + 0.002 * (i % 777);
  }
  StridedPtr in[2] = {{x.data(), 1}, {y.data(), 1}};
  StridedPtr out[1] = {{z.data(), 1}};
  k.run(n, in, out);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    k.run(n, in, out);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best * 1e9 / n;
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
  std::printf("  fit %-22s = %.4g + %.4g * ops\n", what, a, b);
}

}  // namespace

int main(int argc, char** argv) {
#ifndef EMBER_WITH_JIT
  std::puts("built without the JIT");
  return 0;
#else
  const int max_ops = argc > 1 ? std::atoi(argv[1]) : 100000;
  if (!jit::available()) {
    std::puts("JIT unavailable");
    return 0;
  }
  std::puts("== compile cost (Composite of N ops, 20% transcendental) ==");
  std::puts("tier      ops  instr   compile_ms   us/op   peak_MB  peak_B/op  code_B/op");
  for (int tier : {1, 2}) {
    std::vector<double> xs, ts, ps;
    for (int n : {100, 1000, 10000, 100000}) {
      if (n > max_ops || (tier == 2 && n > 10000)) continue;
      Composite c = make(n, 0.2, n);
      auto vm = Interpreted::compile(c);
      const Bytecode& bc = vm->bytecode();
      jit::CompileStats st;
      jit::Piece p = jit::compile_chunk(bc, 0, static_cast<int>(bc.code.size()), tier, &st);
      std::printf("%4d %8d %6zu %12.2f %7.2f %9.2f %10.0f %10.1f\n", tier, n, bc.code.size(), st.seconds * 1e3,
                  st.seconds * 1e6 / n, st.peak_bytes / 1048576.0, double(st.peak_bytes) / n,
                  double(st.code_bytes) / n);
      xs.push_back(n);
      ts.push_back(st.seconds * 1e6);
      ps.push_back(double(st.peak_bytes));
    }
    if (xs.size() >= 2) {
      std::printf("tier %d:\n", tier);
      fit("compile_us", xs, ts);
      fit("peak_bytes", xs, ps);
    }
  }
  std::puts("\n== steady state, 1e5 elements, ns/element (best of 20) ==");
  std::puts("ops  math%   interp    tier1    tier2   speedup1 speedup2");
  for (int n : {10, 100, 1000}) {
    for (double m : {0.0, 0.2}) {
      Composite c = make(n, m, 1000 + n);
      auto vm = Interpreted::compile(c);
      const Bytecode& bc = vm->bytecode();
      const int ni = static_cast<int>(bc.code.size());
      jit::JitKernel k1(bc, {jit::compile_chunk(bc, 0, ni, 1)}, 1);
      jit::JitKernel k2(bc, {jit::compile_chunk(bc, 0, ni, 2)}, 2);
      const double t0 = ns_per_element(*vm, 100000, 20), t1 = ns_per_element(k1, 100000, 20),
                   t2 = ns_per_element(k2, 100000, 20);
      std::printf("%4d %5.0f %8.2f %8.2f %8.2f %9.2fx %8.2fx\n", n, m * 100, t0, t1, t2, t0 / t1, t0 / t2);
    }
  }
  return 0;
#endif
}
