// Steady-state ns/element of small Composites (1-5 float64 ops over 2
// contiguous inputs) at the VM and both JIT tiers, for call sizes from 20 to
// 1e5 elements: the regime where JitKernel's per-block gather/scatter, not
// the generated code, decides. EMBER_JIT_INPLACE=0 in the environment makes
// JitKernel gather every input (the old behaviour) for side-by-side runs.
// Usage: jit_inplace_bench [rounds=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/jit_bench_util.hpp"
#include "interp/config.hpp"
#include "interp/vm.hpp"
#ifdef EMBER_WITH_JIT
#include "jit/jit.hpp"
#endif

using namespace ember;
using namespace ember::interp;
using bench::median;

namespace {

// ops float64 nodes over inputs x, y: a chain of Mul/Add/Sub with a constant,
// and one Exp when `math`.
Composite make(int ops, bool math) {
  Composite c;
  c.inputs = {DType::Float64, DType::Float64};
  c.constants.push_back({DType::Float64, 0.5, 0});
  const ScalarOp cyc[] = {ScalarOp::Mul, ScalarOp::Add, ScalarOp::Sub, ScalarOp::Mul, ScalarOp::Add};
  int32_t last = 0;  // x
  for (int k = 0; k < ops; ++k) {
    const int32_t other = k % 2 ? 2 : 1;  // the constant, then y
    if (math && k == ops - 1) c.nodes.push_back({ScalarOp::Exp, DType::Float64, {last}});
    else c.nodes.push_back({cyc[k % 5], DType::Float64, {last, other}});
    last = c.num_values() - 1;
  }
  c.outputs.push_back(last);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
#ifndef EMBER_WITH_JIT
  std::puts("built without the JIT");
  return 0;
#else
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  if (!jit::available()) {
    std::puts("JIT unavailable");
    return 0;
  }
  std::printf("== steady state ns/element (median of %d interleaved rounds; EMBER_JIT_INPLACE=%s) ==\n", rounds,
              config().jit_inplace.value_or("1").c_str());
  std::puts(" ops math       n      vm   tier1   tier2   vm/t1   vm/t2");
  for (int ops : {1, 2, 3, 5}) {
    for (bool math : {false, true}) {
      if (math && ops < 2) continue;
      Composite c = make(ops, math);
      auto vm = Interpreted::compile(c);
      const Bytecode& bc = vm->bytecode();
      const int ni = static_cast<int>(bc.code.size());
      jit::JitKernel k1(bc, {jit::compile_chunk(bc, 0, ni, 1)}, 1);
      jit::JitKernel k2(bc, {jit::compile_chunk(bc, 0, ni, 2)}, 2);
      for (int64_t n : {20, 100, 500, 100000}) {
        std::vector<double> a, b, d;
        for (int r = 0; r < rounds; ++r) {
          a.push_back(bench::ns_per_element(*vm, n, 5, std::max<int64_t>(1, 200000 / n)));
          b.push_back(bench::ns_per_element(k1, n, 5, std::max<int64_t>(1, 200000 / n)));
          d.push_back(bench::ns_per_element(k2, n, 5, std::max<int64_t>(1, 200000 / n)));
        }
        const double t0 = median(a), t1 = median(b), t2 = median(d);
        std::printf("%4d %4d %7lld %7.3f %7.3f %7.3f %7.2f %7.2f\n", ops, math ? 1 : 0, static_cast<long long>(n), t0,
                    t1, t2, t0 / t1, t0 / t2);
        std::fflush(stdout);
      }
    }
  }
  return 0;
#endif
}
