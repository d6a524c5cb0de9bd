// Shared by the JIT benches: the jit_bench Composite, medians, and the
// steady-state timing of an element-wise kernel.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "interp/composite.hpp"
#include "interp/kernel.hpp"

namespace ember::bench {

// A float64 Composite of n nodes over 2 inputs; `math` in [0,1] is the
// share of transcendental ops. Each node reads one of the last few values.
inline interp::Composite make_composite(int n, double math, uint64_t seed) {
  using interp::ScalarOp;
  std::mt19937_64 rng(seed);
  interp::Composite c;
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

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// ns/element of a 2-input, 1-output float64 kernel on n contiguous
// elements: the median over `reps` timings of `calls` calls each.
inline double ns_per_element(const interp::ElemKernel& k, int64_t n, int reps, int64_t calls = 1) {
  std::vector<double> x(n), y(n), z(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.001 * (i % 1000);
    y[i] = 1.0 + 0.002 * (i % 777);
  }
  interp::StridedPtr in[2] = {{x.data(), 1}, {y.data(), 1}};
  interp::StridedPtr out[1] = {{z.data(), 1}};
  k.run(n, in, out);
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < calls; ++c) k.run(n, in, out);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t) * 1e9 / double(n * calls);
}

}  // namespace ember::bench
