// Frame: a kernel's view of its node's inputs and outputs in a Workspace.
#include <algorithm>
#include <new>

#include "engine/ops/op.hpp"
#include "engine/ops/workspace.hpp"

namespace ember {

// ---- Buffer -------------------------------------------------------------

void* Buffer::grow(size_t bytes) {
  const size_t want = std::max<size_t>((bytes + 63) / 64 * 64, 64);
  void* q = ::operator new(want, std::align_val_t(64), std::nothrow);
  if (!q) throw CallError("out of memory allocating " + std::to_string(bytes) + " bytes");
  if (p) ::operator delete(p, std::align_val_t(64));
  p = q;
  cap = want;
  return p;
}

// ---- Frame ----------------------------------------------------------------

DType Frame::out_dtype(int i) const { return step_.out_dtype[i]; }

namespace {

// 2^40 elements bound what a call may ask for; larger is a graph error.
constexpr int64_t kMaxElements = int64_t(1) << 40;

[[noreturn]] void bad_out_shape(const Frame& f, const Shape& s) {
  int64_t n = 1;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.dims[d] < 0) f.fail("negative dimension in output shape " + s.str());
    if (s.dims[d] && n > kMaxElements / s.dims[d]) f.fail("output shape " + s.str() + " is too large");
    n *= s.dims[d];
  }
  f.fail("output shape " + s.str() + " is invalid");
}

}  // namespace

// One pass from the last dim: checks the shape, sets C-order strides and
// counts elements (a failed call leaves the output's metadata half set,
// which the next call overwrites).
Tensor& Frame::alloc_out(int i, DType dt, const Shape& s) {
  Tensor& t = values_[out_[i]];
  const int nd = s.ndim;
  int64_t n = 1;
  for (int d = nd - 1; d >= 0; --d) {
    const int64_t v = s.dims[d];
    t.shape.dims[d] = v;
    t.strides[d] = n;
    if (v < 0 || __builtin_mul_overflow(n, v, &n) || n > kMaxElements) [[unlikely]]
      bad_out_shape(*this, s);
  }
  t.shape.ndim = nd;
  t.dtype = dt;
  t.data = ws_.slots[step_.out_slot[i]].reserve(static_cast<size_t>(n) * dtype_size(dt));
  return t;
}

Tensor& Frame::alloc_out(int i, const Shape& s) { return alloc_out(i, step_.out_dtype[i], s); }

void Frame::fail(const std::string& msg) const {
  throw CallError(*ws_.source + ": node " + std::to_string(step_.shown >= 0 ? step_.shown : step_.node) + " (" + step_.name +
                  "): " + msg);
}

void* Frame::scratch(size_t bytes) { return ws_.scratch.reserve(bytes); }

uint32_t& Frame::tick() { return ws_.ticks[static_cast<size_t>(step_.index)]; }

}  // namespace ember
