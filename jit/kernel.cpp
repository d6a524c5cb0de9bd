// JitKernel: the block driver around compiled pieces. No LLVM here.
#include <algorithm>
#include <vector>

#include "jit/jit.hpp"

namespace ember::jit {

size_t scratch_bytes(const interp::Bytecode& bc) {
  return static_cast<size_t>(bc.num_regs + 4) * kBlock * 8;
}

JitKernel::JitKernel(const interp::Bytecode& bc, std::vector<Piece> pieces, int tier)
    : pieces_(std::move(pieces)), scratch_(scratch_bytes(bc)), tier_(tier) {
  fn = &run_fn;
}

size_t JitKernel::code_bytes() const {
  size_t n = 0;
  for (const Piece& p : pieces_) n += p.code ? p.code->bytes : 0;
  return n;
}

void JitKernel::run_fn(const ElemKernel* self, int64_t n, const interp::StridedPtr* in,
                       const interp::StridedPtr* out) {
  const auto* k = static_cast<const JitKernel*>(self);
  thread_local std::vector<double> scratch;  // grow-only; kernels never nest
  if (scratch.size() * 8 < k->scratch_) scratch.resize(k->scratch_ / 8);
  char* s = reinterpret_cast<char*>(scratch.data());
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t m = std::min(kBlock, n - base);
    for (const Piece& p : k->pieces_) p.fn(base, m, in, out, s);
  }
}

Faults& faults() {
  static Faults f;
  return f;
}

}  // namespace ember::jit
