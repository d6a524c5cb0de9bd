// Kernels swapped under calling threads (the protocol of engine/ops/elemwise.hpp
// and jit/tier_manager.cpp). Built into ember_tests and, under
// ThreadSanitizer, into ember_thread_tests (tests/fuzz/CMakeLists.txt).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/ops/elemwise.hpp"
#include "ember/ember.hpp"
#include "engine/program/program_impl.hpp"
#include "jit/tier_manager.hpp"
#include "test_util.hpp"
#ifdef EMBER_WITH_JIT
#include "jit/jit.hpp"
#endif

using namespace ember;

namespace {

// x, y -> sigmoid(exp(x) * y) + log1p(sqr(y)), then that times x: two Elemwise nodes.
std::string two_node_graph(int variant) {
  const std::string k = std::to_string(1.5 + variant);  // distinct Composites per variant
  return R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "x", "dtype": "float64", "shape": [null]},
                  {"name": "y", "dtype": "float64", "shape": [null]},
                  {"name": "t", "dtype": "float64", "shape": [null]},
                  {"name": "z", "dtype": "float64", "shape": [null]}],
    "inputs": [{"var": 0}, {"var": 1}], "outputs": [3],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Composite",
                "inputs": ["float64", "float64"], "constants": [{"dtype": "float64", "value": )" + k + R"(}],
                "nodes": [{"op": "Exp", "inputs": [0], "dtype": "float64"},
                          {"op": "Mul", "inputs": [3, 1], "dtype": "float64"},
                          {"op": "Sigmoid", "inputs": [4], "dtype": "float64"},
                          {"op": "Sqr", "inputs": [1], "dtype": "float64"},
                          {"op": "Log1p", "inputs": [6], "dtype": "float64"},
                          {"op": "Add", "inputs": [5, 7], "dtype": "float64"},
                          {"op": "Mul", "inputs": [8, 2], "dtype": "float64"}],
                "outputs": [9]}}},
              {"op": "Elemwise", "inputs": [2, 0], "outputs": [3], "attrs": {"scalar_op": {"op": "Mul"}}}]})";
}

struct Args {
  Array x, y;
  explicit Args(int64_t n) : x(Array::empty(DType::Float64, Shape{1, {n}})), y(Array::empty(DType::Float64, Shape{1, {n}})) {
    for (int64_t i = 0; i < n; ++i) {
      x.data<double>()[i] = -30.0 + 60.0 * double(i) / double(n);
      y.data<double>()[i] = (i % 7 == 0) ? -0.0 : 1e-3 * double(i % 1013) - 0.4;
    }
  }
};

bool same_bits(const Array& a, const Array& b) {
  return a.size() == b.size() && std::memcmp(a.t.data, b.t.data, size_t(a.size()) * 8) == 0;
}

// Calls p from 8 threads (each with its own workspace) until `stop`; counts results that differ from ref.
struct Callers {
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, calls{0};
  std::vector<std::thread> ts;
  Callers(const Program& p, const Args& in, const Array& ref) {
    for (int t = 0; t < 8; ++t)
      ts.emplace_back([&] {
        auto ws = p.make_workspace();
        std::vector<Tensor> args{in.x.t, in.y.t};
        do {
          const auto& out = p.run(*ws, args);
          if (out[0].size() != ref.size() || std::memcmp(out[0].data, ref.t.data, size_t(ref.size()) * 8) != 0) ++bad;
          ++calls;
        } while (!stop.load());
      });
  }
  void join() {
    stop = true;
    for (auto& t : ts) t.join();
  }
};

struct ScopedConfig {
  JitConfig saved = TierManager::instance().config();
  explicit ScopedConfig(const JitConfig& c) { TierManager::instance().configure(c); }
  ~ScopedConfig() { TierManager::instance().configure(saved); }
};

}  // namespace

// The swap path without the JIT: every Elemwise kernel's active pointer is
// flipped between its interpreter and two other interpreters of the same
// Composite while 8 threads call, through the same set_active/active() the
// tier manager uses.
TEST_CASE("eight_threads_calling_while_elemwise_kernels_swap_get_identical_bits") {
  JitConfig off;
  off.mode = JitMode::Off;
  ScopedConfig sc(off);
  auto p = Program::from_json(two_node_graph(0), test::unpassed());
  const Args in(3000);
  const Array ref = p->call({in.x.t, in.y.t})[0];
  std::vector<const ElemwiseKernel*> ks;
  std::vector<std::shared_ptr<const interp::Interpreted>> alts;
  for (const auto& k : p->impl().kernels)
    if (auto* e = dynamic_cast<const ElemwiseKernel*>(k.get())) {
      ks.push_back(e);
      for (int r = 0; r < 2; ++r) alts.push_back(interp::Interpreted::compile(e->composite()));
    }
  REQUIRE(ks.size() == 2);
  Callers c(*p, in, ref);
  int swaps = 0;
  while (c.calls.load() < 200 || swaps < 200) {
    for (size_t i = 0; i < ks.size(); ++i) {
      const int pick = swaps % 3;
      ks[i]->set_active(pick == 2 ? static_cast<const interp::ElemKernel*>(&ks[i]->interpreter())
                                  : alts[2 * i + pick].get());
    }
    ++swaps;
    std::this_thread::yield();
  }
  c.join();
  for (const ElemwiseKernel* k : ks) k->set_active(&k->interpreter());  // before `alts` goes
  CHECK(c.bad == 0);
  CHECK(same_bits(p->call({in.x.t, in.y.t})[0], ref));
}

#ifdef EMBER_WITH_JIT
// Eviction: loading a second program under a budget that cannot hold both
// demotes the first program's compiled kernels to the interpreter while 8
// threads are inside it; its code is freed only once no call is.
TEST_CASE("jit_eight_threads_see_identical_bits_while_kernels_swap_on_eviction", "[jit]") {
  REQUIRE_JIT();
  const Args in(3000);
  Array ref;
  {
    JitConfig off;
    off.mode = JitMode::Off;
    ScopedConfig sc(off);
    ref = Program::from_json(two_node_graph(1), test::unpassed())->call({in.x.t, in.y.t})[0];
  }
  JitConfig c;
  c.mode = JitMode::Eager;
  c.cache = false;
  ScopedConfig sc(c);
  const JitStats s0 = TierManager::instance().stats();
  auto a = Program::from_json(two_node_graph(1), test::unpassed());  // both kernels compiled before the first call
  const JitStats s1 = TierManager::instance().stats();
  REQUIRE(s1.compiles - s0.compiles == 2);
  CHECK(same_bits(a->call({in.x.t, in.y.t})[0], ref));
  Callers callers(*a, in, ref);
  while (callers.calls.load() < 200) std::this_thread::yield();
  // Room for b's compile in one-instruction chunks (the smallest split),
  // with 1/16 to spare (the admission margin), and not for a's code beside
  // it: b's compile must evict a's kernels.
  size_t need = 0;
  {
    JitConfig off;
    off.mode = JitMode::Off;
    ScopedConfig so(off);
    auto b_off = Program::from_json(two_node_graph(2), test::unpassed());
    for (const auto& k : b_off->impl().kernels)
      if (auto* e = dynamic_cast<const ElemwiseKernel*>(k.get())) {
        // The whole compile's prediction less all but one instruction's transient.
        const auto& bc = e->interpreter().bytecode();
        const double per = TierManager::instance().stats().backends[c.max_tier].bytes_per_instruction;
        const double whole = double(TierManager::instance().predicted_peak(bc, c.max_tier));
        need = std::max(need, static_cast<size_t>(whole - 1.25 * per * double(bc.code.size() - 1)));
      }
  }
  c.memory_budget = (need + 8) * 16 / 15 + 1;
  TierManager::instance().configure(c);
  auto b = Program::from_json(two_node_graph(2), test::unpassed());
  const JitStats s2 = TierManager::instance().stats();
  const int at = callers.calls.load();
  while (callers.calls.load() < at + 200) std::this_thread::yield();
  callers.join();
  CHECK(s2.evictions - s1.evictions == 2);
  CHECK(callers.bad == 0);
  CHECK(same_bits(a->call({in.x.t, in.y.t})[0], ref));
}
#endif
