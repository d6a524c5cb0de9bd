// Compile cost of one tier alone, for profiling and A/B runs of codegen
// options: the Composite of jit_bench (N float64 ops, 20 % transcendental),
// compiled in chunks as the tier manager does; prints the median thread-CPU
// µs per op and per IR instruction over `runs` compiles.
// Usage: jit_compile_bench [ops=1000] [tier=2] [runs=5] [chunk=256] [math=0.2]
// (EMBER_JIT_DUMP=1 in the environment prints the first chunk's IR on stderr.)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/jit_bench_util.hpp"
#include "interp/vm.hpp"
#ifdef EMBER_WITH_JIT
#include "jit/jit.hpp"
#endif

using namespace ember;
using namespace ember::interp;

int main(int argc, char** argv) {
#ifndef EMBER_WITH_JIT
  std::puts("built without the JIT");
  return 0;
#else
  const int ops = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int tier = argc > 2 ? std::atoi(argv[2]) : 2;
  const int runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const int chunk = argc > 4 ? std::max(16, std::atoi(argv[4])) : 256;
  if (!jit::available()) {
    std::puts("JIT unavailable");
    return 0;
  }
  const double math = argc > 5 ? std::atof(argv[5]) : 0.2;
  Composite c = bench::make_composite(ops, math, ops);
  auto vm = Interpreted::compile(c);
  const Bytecode& bc = vm->bytecode();
  const int n = static_cast<int>(bc.code.size());
  const int np = std::max(1, (n + chunk - 1) / chunk);
  if (std::getenv("EMBER_JIT_DUMP")) jit::dump_ir(bc, 0, std::min(n, chunk));
  std::vector<double> cpu, cg, em, lk, lu;
  size_t nir = 0, code = 0;
  for (int r = 0; r < runs; ++r) {
    double t = 0, g = 0, e = 0, l = 0, u = 0;
    nir = code = 0;
    for (int k = 0; k < np; ++k) {
      jit::CompileStats st;
      jit::compile_chunk(bc, int64_t(n) * k / np, int64_t(n) * (k + 1) / np, tier, &st);
      t += st.cpu_seconds;
      g += st.codegen_s;
      e += st.emit_s;
      l += st.link_s;
      u += st.lookup_s;
      nir += st.ir_instructions;
      code += st.code_bytes;
    }
    cpu.push_back(t);
    cg.push_back(g);
    em.push_back(e);
    lk.push_back(l);
    lu.push_back(u);
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::sort(cpu.begin(), cpu.end());
  const double m = cpu[cpu.size() / 2];
  std::printf("tier %d ops %d chunks %d IR %zu code_B %zu: cpu %.2f ms = %.2f us/op, %.2f us/IR (min %.2f us/op)"
              " | wall ms: emit %.2f codegen %.2f link %.2f lookup %.2f\n",
              tier, ops, np, nir, code, m * 1e3, m * 1e6 / ops, m * 1e6 / double(nir), cpu[0] * 1e6 / ops,
              med(em) * 1e3, med(cg) * 1e3, med(lk) * 1e3, med(lu) * 1e3);
  return 0;
#endif
}
