// The compile service's memory model: the predicted peak of one chunk's
// compile, per backend, learnt from measured peaks. Guarded by the tier
// manager's mutex; no LLVM types, so it is built without the JIT too.
#pragma once
#include <algorithm>
#include <cstddef>

namespace ember {

// Backends: tier 1's direct emitter, LLVM at tier 1, LLVM at tier 2.
enum Backend { kDirect = 0, kLlvm1 = 1, kLlvm2 = 2 };

struct PeakModel {
  // Transient bytes per instruction are scaled by this before admission, so
  // a compile somewhat larger than the ones measured still fits.
  static constexpr double kMargin = 1.25;
  // Fixed bytes of one compile: until the backend's first compile measures
  // it, a bound above what was seen on x86-64 Linux (LLVM: ~10-12 MB of
  // context, passes and first-touched pages; the direct emitter: its zones).
  double fixed[3] = {double(192 << 10), double(14 << 20), double(14 << 20)};
  bool measured[3] = {};
  double per_instr[3] = {500, 6000, 12000};   // transient bytes per instruction
  double code_per_instr[3] = {24, 120, 120};  // resident bytes per instruction

  // Predicted peak of compiling a chunk of n instructions, its code included.
  double chunk_peak(int b, double n) const { return fixed[b] + kMargin * (per_instr[b] + code_per_instr[b]) * n; }
  double code(int b, double n) const { return kMargin * code_per_instr[b] * n; }

  // One compiled chunk: n instructions, measured peak and code bytes. The
  // first compile of a backend sets its fixed cost (the one-time first
  // touch included, so later predictions are upper bounds); afterwards the
  // model only rises, to cover every peak it has measured.
  void observe(int b, double n, double peak, double code_bytes) {
    n = std::max(1.0, n);
    code_per_instr[b] = std::max(16.0, 0.7 * code_per_instr[b] + 0.3 * code_bytes / n);
    if (!measured[b]) {
      measured[b] = true;
      fixed[b] = std::max(peak - per_instr[b] * n, peak / 2);
    }
    raise(b, n, peak);
  }
  // A peak that passed the prediction raises it (a cache load, say, or the
  // page cache having dropped LLVM's pages): the same compile then predicts
  // at least what it measured.
  void raise(int b, double n, double peak) {
    const double deficit = peak - (fixed[b] + per_instr[b] * n);
    if (deficit <= 0) return;
    if (n < 128) fixed[b] += deficit;
    else per_instr[b] += deficit / n;
  }
};

}  // namespace ember
