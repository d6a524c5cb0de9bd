// Times one call in TierManager::kSample for the tier manager (hotness and
// per-tier speed): two clock reads cost more than a small Composite's whole
// call. Which code may be freed is the run epochs' business (Program::run).
#pragma once
#include <chrono>
#include <cstdint>

#include "engine/ops/op.hpp"
#include "jit/tier_manager.hpp"

namespace ember {

struct Hot {
  TierEntry* e;
  int64_t elements = 0;
  bool timed = false;
  std::chrono::steady_clock::time_point t0;
  Hot(TierEntry* te, Frame& f) : e(te) {
    if (!e) return;
    timed = TierManager::sample(f.tick());
    if (timed) t0 = std::chrono::steady_clock::now();
  }
  ~Hot() {
    if (!timed) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    TierManager::count_timed(e, elements, ns);
  }
};

}  // namespace ember
