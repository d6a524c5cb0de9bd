// The Elemwise call path's counters for the tier manager: the clock is read on
// one call in TierManager::kSample, which counts for kSample calls, so calls
// and elements are estimates within one period of the truth.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "jit/tier_manager.hpp"
#include "test_util.hpp"

using namespace ember;

TEST_CASE("tier_counters_estimate_calls_and_elements_within_one_sampling_period") {
#ifndef EMBER_WITH_JIT
  SKIP("JIT compiled out: no tier counters");
#else
  // Auto mode with no tier to compile to: the kernel stays interpreted and
  // only its counters move.
  const JitConfig saved = TierManager::instance().config();
  JitConfig c = saved;
  c.mode = JitMode::Auto;
  c.max_tier = 0;
  TierManager::instance().configure(c);
  {
    auto p = Program::from_json(R"({"format": "ember-graph", "version": 1,
      "variables": [{"name": "x", "dtype": "float64", "shape": [3]}, {"dtype": "float64", "shape": [3]}],
      "inputs": [0], "outputs": [1],
      "nodes": [{"op": "Elemwise", "inputs": [0], "outputs": [1], "attrs": {"scalar_op": {"op": "Tan"}}}]})");
    Array x = Array::empty(DType::Float64, Shape{1, {3}});
    auto ws = p->make_workspace();
    const Tensor args[1] = {x.t};
    constexpr int kCalls = 1237;  // not a multiple of the sampling period
    for (int k = 0; k < kCalls; ++k) p->run(*ws, args);
    const int64_t period = static_cast<int64_t>(TierManager::kSample);
    int found = 0;
    for (const CompositeStats& s : TierManager::instance().stats().composites) {
      if (std::llabs(static_cast<int64_t>(s.calls) - kCalls) > period || s.calls == 0) continue;
      ++found;
      CHECK(s.calls % period == 0);
      CHECK(std::llabs(static_cast<int64_t>(s.elements) - 3 * kCalls) <= 3 * period);
    }
    CHECK(found == 1);
  }
  TierManager::instance().configure(saved);
#endif
}

TEST_CASE("compiled_kernels_with_nothing_left_to_decide_time_one_call_in_the_settled_period") {
#ifndef EMBER_WITH_JIT
  SKIP("JIT compiled out: no tier counters");
#else
  REQUIRE_JIT();
  // Eager: compiled to the top tier before the first call, no measurement,
  // no tier above it, so the kernel samples at TierManager::kSettledSample.
  const JitConfig saved = TierManager::instance().config();
  JitConfig c = saved;
  c.mode = JitMode::Eager;
  c.cache = false;
  TierManager::instance().configure(c);
  {
    auto p = Program::from_json(R"({"format": "ember-graph", "version": 1,
      "variables": [{"name": "x", "dtype": "float64", "shape": [3]}, {"dtype": "float64", "shape": [3]}],
      "inputs": [0], "outputs": [1],
      "nodes": [{"op": "Elemwise", "inputs": [0], "outputs": [1], "attrs": {"scalar_op": {"op": "Tan"}}}]})");
    Array x = Array::empty(DType::Float64, Shape{1, {3}});
    auto ws = p->make_workspace();
    const Tensor args[1] = {x.t};
    constexpr int kCalls = 1237;  // not a multiple of either period
    for (int k = 0; k < kCalls; ++k) p->run(*ws, args);
    const int64_t period = static_cast<int64_t>(TierManager::kSettledSample);
    int found = 0;
    for (const CompositeStats& s : TierManager::instance().stats().composites) {
      if (s.tier != c.max_tier || s.calls == 0 || std::llabs(static_cast<int64_t>(s.calls) - kCalls) > period) continue;
      ++found;
      CHECK(s.calls % period == 0);
    }
    CHECK(found == 1);
  }
  TierManager::instance().configure(saved);
#endif
}
