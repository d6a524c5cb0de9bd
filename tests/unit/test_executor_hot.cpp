// The Elemwise call path's counters for the tier manager: the clock is read on
// one call in TierManager::kSample (kSettledSample once compiled code has
// nothing left to decide), which counts for that many calls, so calls and
// elements are estimates within one period of the truth.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "jit/tier_manager.hpp"
#include "test_util.hpp"

using namespace ember;

#ifdef EMBER_WITH_JIT
namespace {

constexpr int kCalls = 1237;  // a multiple of neither period

// Under config c: a one-node program (tan of 3 elements) called kCalls times;
// then, per Composite of the stats at `tier` whose calls are within one
// `period` of kCalls, f(stats). Returns how many there were.
template <class F>
int count_calls(const JitConfig& c, int tier, int64_t period, F f) {
  const JitConfig saved = TierManager::instance().config();
  TierManager::instance().configure(c);
  int found = 0;
  {
    auto p = Program::from_json(R"({"format": "ember-graph", "version": 1,
      "variables": [{"name": "x", "dtype": "float64", "shape": [3]}, {"dtype": "float64", "shape": [3]}],
      "inputs": [0], "outputs": [1],
      "nodes": [{"op": "Elemwise", "inputs": [0], "outputs": [1], "attrs": {"scalar_op": {"op": "Tan"}}}]})");
    Array x = Array::empty(DType::Float64, Shape{1, {3}});
    auto ws = p->make_workspace();
    const Tensor args[1] = {x.t};
    for (int k = 0; k < kCalls; ++k) p->run(*ws, args);
    for (const CompositeStats& s : TierManager::instance().stats().composites) {
      if (s.tier != tier || s.calls == 0 || std::llabs(static_cast<int64_t>(s.calls) - kCalls) > period) continue;
      ++found;
      f(s);
    }
  }
  TierManager::instance().configure(saved);
  return found;
}

}  // namespace
#endif

TEST_CASE("tier_counters_estimate_calls_and_elements_within_one_sampling_period") {
#ifndef EMBER_WITH_JIT
  SKIP("JIT compiled out: no tier counters");
#else
  // Auto mode with no tier to compile to: the kernel stays interpreted and
  // only its counters move.
  JitConfig c = TierManager::instance().config();
  c.mode = JitMode::Auto;
  c.max_tier = 0;
  const int64_t period = static_cast<int64_t>(TierManager::kSample);
  CHECK(count_calls(c, 0, period, [&](const CompositeStats& s) {
          CHECK(s.calls % period == 0);
          CHECK(std::llabs(static_cast<int64_t>(s.elements) - 3 * kCalls) <= 3 * period);
        }) == 1);
#endif
}

TEST_CASE("compiled_kernels_with_nothing_left_to_decide_time_one_call_in_the_settled_period") {
#ifndef EMBER_WITH_JIT
  SKIP("JIT compiled out: no tier counters");
#else
  REQUIRE_JIT();
  // Eager: compiled to the top tier before the first call, no measurement,
  // no tier above it, so the kernel samples at TierManager::kSettledSample.
  JitConfig c = TierManager::instance().config();
  c.mode = JitMode::Eager;
  c.cache = false;
  const int64_t period = static_cast<int64_t>(TierManager::kSettledSample);
  CHECK(count_calls(c, c.max_tier, period, [&](const CompositeStats& s) { CHECK(s.calls % period == 0); }) == 1);
#endif
}
