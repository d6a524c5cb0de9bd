// Times one call in TierManager::kSample for the tier manager (hotness and
// per-tier speed): two clock reads cost more than a small Composite's whole
// call. Which code may be freed is the run epochs' business (Program::run).
#pragma once
#include <chrono>
#include <cstdint>

#include "engine/ops/op.hpp"
#include "jit/tier_manager.hpp"

namespace ember {

// `mask`: TierManager::sample_mask(te), looked up once per kernel.
struct Hot {
  TierEntry* e;
  int64_t elements = 0;
  uint32_t period = 0;  // 0: not timed
  std::chrono::steady_clock::time_point t0;
  Hot(TierEntry* te, const std::atomic<uint32_t>* mask, Frame& f) : e(te) {
    if (!e) return;
    const uint32_t m = mask->load(std::memory_order_relaxed);
    if ((++f.tick() & m) != 0) return;
    period = m + 1;
    t0 = std::chrono::steady_clock::now();
  }
  ~Hot() {
    if (period == 0) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    TierManager::count_timed(e, elements, ns, period);
  }
};

}  // namespace ember
