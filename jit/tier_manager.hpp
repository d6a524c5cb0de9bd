// The compile service: watches every Elemwise kernel's interpreter time and
// compiles the hot ones on ONE background thread (tier 1 quick, tier 2
// optimized), swapping them in through SwapTarget::set_active. No call
// ever waits for a compile; a failed or unprofitable compile leaves the
// Composite on the tier it was on. Configured from the environment until
// ember::Options carries these fields: EMBER_JIT=off|auto|eager,
// EMBER_JIT_MEMORY=SIZE (default 256M), EMBER_CACHE_DIR, EMBER_JIT_CACHE=0
// (interp/config.def).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/option_parse.hpp"  // JitMode
#include "interp/vm.hpp"

namespace ember {

// What the service swaps compiled kernels into: an Elemwise node's kernel
// (engine/ops/elemwise.hpp). Calls read the active kernel once at their start.
class SwapTarget {
 public:
  virtual const interp::Composite& composite() const = 0;
  virtual void set_active(const interp::ElemKernel* k) const = 0;
  // Every call is one element (a fused or 0-d node): compiled code then
  // uses the one-element layout (jit/jit.hpp: Layout).
  virtual bool one_element() const { return false; }
  // Per input: every call broadcasts it (empty: none known). Tier-2 code
  // then reads it as one element (jit/jit.hpp: KernelSpec).
  virtual std::vector<bool> uniform_inputs() const { return {}; }
  // A ScalarLoop's body: its carried values (-1: not a loop body) and
  // whether a condition ends it. Its loop may then compile whole
  // (jit/jit.hpp: KernelSpec::loop_carried).
  virtual int loop_carried() const { return -1; }
  virtual bool loop_until() const { return false; }

 protected:
  ~SwapTarget() = default;
};

struct JitConfig {
  JitMode mode = JitMode::Auto;
  size_t memory_budget = size_t(256) << 20;  // compile transients + resident code
  bool cache = true;
  std::string cache_dir;                     // "" = $EMBER_CACHE_DIR, $XDG_CACHE_HOME/ember, ~/.cache/ember
  size_t cache_max_bytes = size_t(512) << 20;
  int max_tier = 2;
  // Auto mode: compile when the time already spent interpreting exceeds
  // `hot_factor` x the predicted compile time (raised as the queue backs up).
  double hot_factor = 1.0;
  static JitConfig from_env();
};

// Per-kernel counters on the call path, and the kernel's tiering state
// (guarded by the manager's mutex).
struct TierEntry;

// A Workspace's run count: odd while a run on it is in progress.
struct RunEpoch {
  std::atomic<uint64_t> n{0};
};

// Per-Composite statistics.
struct CompositeStats {
  std::string name;
  int ops = 0, instructions = 0, tier = 0, chunks = 0, failures = 0;
  int compiles = 0, evictions = 0;
  std::string skipped;  // e.g. "tier 2: budget": a tier not tried because it cannot fit
  uint64_t calls = 0, elements = 0;
  double seconds[3] = {0, 0, 0};     // time spent per tier
  double ns_per_element[3] = {0, 0, 0};
  double compile_seconds = 0;
  size_t compile_peak_bytes = 0, code_bytes = 0;
  bool cache_hit = false;
  std::string last_error;
};

// Per-tier counters. `failed` counts real errors only; a compile the budget
// cannot hold is `skipped_budget`, never attempted.
struct TierStats {
  uint64_t attempted = 0, compiled = 0, skipped_budget = 0, rejected_slower = 0, evicted = 0, failed = 0;
};

// The budget model of one backend (direct, LLVM tier 1, LLVM tier 2).
struct BackendStats {
  const char* name = "";
  size_t fixed_bytes = 0;        // the predicted fixed cost of one compile
  bool fixed_measured = false;   // measured by this process's first compile, else the prior
  double bytes_per_instruction = 0;
};

struct JitStats {
  size_t budget = 0, peak_bytes = 0, resident_code_bytes = 0;
  uint64_t compiles = 0, failures = 0, evictions = 0, rejected_slower = 0, splits = 0;
  uint64_t skipped_budget = 0, over_budget = 0;  // over_budget: compiles whose measured peak passed the budget
  uint64_t cache_hits = 0, cache_misses = 0, cache_write_failures = 0;
  TierStats tiers[3];
  BackendStats backends[3];
  // One line per tier the budget cannot hold for any Composite ("tier 2
  // skipped: budget ..."), for the CLI and Python to show once.
  std::vector<std::string> notes;
  std::vector<CompositeStats> composites;
  std::string to_json() const;
};

class TierManager {
 public:
  // The process-wide service (its worker starts on first attach in auto mode).
  static TierManager& instance();

  // Registers a kernel. Returns nullptr when the JIT is off or compiled out.
  // In eager mode compiles it to the top tier before returning.
  std::shared_ptr<TierEntry> attach(const SwapTarget& k, std::shared_ptr<const interp::Interpreted> vm);
  void detach(const std::shared_ptr<TierEntry>& e);
  // Per output: a fused Sum reduces it to one number (KernelSpec::summed),
  // known after attach. Tier-2 code compiled from now on sums those it can;
  // in eager mode the entry is compiled again now.
  void set_summed(const std::shared_ptr<TierEntry>& e, std::vector<bool> summed,
                  const std::vector<bool>& row_uniform = {});

  // Replaces the configuration (tests, CLI). Affects later attaches and compiles.
  void configure(const JitConfig& c);
  JitConfig config() const;
  JitStats stats() const;
  // The predicted peak bytes of compiling `bc` whole at `tier` (tests).
  size_t predicted_peak(const interp::Bytecode& bc, int tier) const;
  // Blocks until no compile is queued or running (tests, benchmarks).
  void quiesce();

  // Run epochs: a Workspace of a Program with tiered kernels gets one, and
  // Program::run brackets each run with begin_run / end_run. Replaced code
  // is freed once every run that was in progress when it was replaced has
  // ended (epoch-based reclamation): one fence per run, where counting each
  // kernel call in and out cost three atomic increments per call, on cache
  // lines that every chain's thread wrote.
  std::shared_ptr<RunEpoch> register_run_epoch();
  static void begin_run(RunEpoch* r) {
    r->n.store(r->n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // Ordered before this run's loads of active kernels (the service's
    // store of a new one and its read of n are ordered the same way).
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  static void end_run(RunEpoch* r) { r->n.store(r->n.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Sampled timing: a kernel times one call in kSample, decided by a tick of
  // the caller's own (Workspace::ticks, one per step: a counter shared by the
  // kernels of a program would alias with its node count and time the same
  // nodes every call). A timed call counts `period` calls, its elements and
  // ns `period` times, so the counters stay unbiased estimates. A compiled
  // kernel the manager has nothing left to decide for (at the last tier it
  // can take, not under measurement) times one call in kSettledSample: at
  // one in 16, two clock reads and three shared atomic adds cost 1-5 % of
  // a small model's call.
  static constexpr uint32_t kSample = 16, kSettledSample = 256;
  // The entry's period less one (a power of two), which every call reads
  // (engine/ops/hot.hpp); null for a null entry.
  static const std::atomic<uint32_t>* sample_mask(const TierEntry* e);
  static void count_timed(TierEntry* e, int64_t elements, int64_t ns, uint32_t period);

  ~TierManager();

  struct Impl;

 private:
  TierManager();
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember
