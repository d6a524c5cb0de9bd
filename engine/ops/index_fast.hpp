// Fast paths of the one-index-vector ops (AdvancedSubtensor1 and
// AdvancedIncSubtensor1: x[idx], out[idx] = / += y along axis 0): the index
// read in its own dtype and stride (no int64 copy), the bounds check fused
// into the copy, and for a constant index a load-time copy that is already
// normalized and checked, in the narrowest unsigned type that holds it.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {

// A constant index vector prepared at load. Valid for a call when
// usable(x.dim(0)): every entry is then in [0, dim) with no check.
class ConstIndex {
 public:
  // Reads input `idx_input` when it is a graph constant; x is input 0.
  // Stays empty (usable() false) when the index is not constant, holds
  // entries >= 2^32, or has negative entries and x's dim 0 is not static or
  // an entry out of range (the checked path then reports it per call).
  static ConstIndex make(const NodeContext& ctx, int idx_input);

  bool usable(int64_t dim) const { return width_ != 0 && max_ < dim && (exact_dim_ < 0 || dim == exact_dim_); }
  int width() const { return width_; }
  // More than 1 entry in 16 repeats its predecessor (e.g. a sorted index):
  // scatter-adds then accumulate runs in a register.
  bool runs() const { return runs_; }
  int64_t size() const { return n_; }
  const void* data() const { return bytes_.data(); }

  // A scatter-add's entries by bin, four bins at a time (prepare_bins): each
  // bin's sum runs in a register, in index order (the same sums, the same
  // bits as updates through memory), four bins' chains side by side. For a
  // few bins of many entries: through memory each update waits on the store
  // of its bin's last one, and a sorted index's runs are one chain at a time.
  struct BinGroup {
    uint32_t bin[4];       // its bins, the first nbins used
    uint32_t nbins;        // bins in the group, 1 to 4
    uint32_t common;       // steps with an entry for every bin: pos[4t + q]
    uint32_t off;          // start of the group in pos
    uint32_t tail[4];      // then each bin's other entries, in order
  };
  void prepare_bins();
  const std::vector<BinGroup>& bin_groups() const { return groups_; }
  const uint32_t* bin_pos() const { return pos_.data(); }

 private:
  int width_ = 0;         // bytes per entry: 1, 2 or 4; 0: not prepared
  int64_t n_ = 0;
  int64_t max_ = -1;      // largest stored (normalized) entry
  int64_t exact_dim_ = -1;  // >= 0: entries were normalized with this dim
  bool runs_ = false;
  std::vector<uint8_t> bytes_;
  std::vector<BinGroup> groups_;
  std::vector<uint32_t> pos_;
};

namespace fastidx {

// Calls b4(b, v0, v1, v2, v3) for b = 0, 4, 8, ... while four remain, then
// b1(b, v) for the rest, where v = get(b). get is called in order of b, so
// the first bad index is the one reported; b4 can load all four before it
// stores (a store can alias the next element's load, so a one-element loop
// waits on each store).
template <class Get, class B4, class B1>
inline void blocked(int64_t n, Get&& get, B4&& b4, B1&& b1) {
  int64_t b = 0;
  for (; b + 4 <= n; b += 4) {
    const int64_t v0 = get(b), v1 = get(b + 1), v2 = get(b + 2), v3 = get(b + 3);
    b4(b, v0, v1, v2, v3);
  }
  for (; b < n; ++b) b1(b, get(b));
}

// one(b, get(b)) for every b in order, four indices loaded ahead (blocked).
template <class Get, class One>
inline void each(int64_t n, Get&& get, One&& one) {
  blocked(
      n, get,
      [&](int64_t b, int64_t v0, int64_t v1, int64_t v2, int64_t v3) {
        one(b, v0), one(b + 1, v1), one(b + 2, v2), one(b + 3, v3);
      },
      one);
}

// get(b) for an index array of integer type I: idx[b * ist] normalized to
// [0, dim), failing (CallError naming the raw value) when out of range.
template <class I>
struct CheckedGet {
  Frame& f;
  const I* ip;
  int64_t ist, dim;
  int64_t operator()(int64_t b) const {
    const int64_t raw = static_cast<int64_t>(ip[b * ist]);
    int64_t v = raw;
    if constexpr (std::is_signed_v<I>) v += (v >> 63) & dim;  // negative: from the end
    if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(dim)) [[unlikely]]
      f.fail(index_error_msg(raw, 0, dim));
    return v;
  }
};

// get(b) over a ConstIndex's packed entries (already checked).
template <class P>
struct PackedGet {
  const P* p;
  int64_t operator()(int64_t b) const { return static_cast<int64_t>(p[b]); }
};

// Calls fn(get, n) with the index source for input `in` of a one-vector op:
// the ConstIndex when usable for x's dim 0, else the input read in its own
// dtype and stride with the bounds check.
template <class F>
inline void with_index(Frame& f, const ConstIndex& ci, int in, int64_t dim, F&& fn) {
  if (ci.usable(dim)) {
    switch (ci.width()) {
      case 1: return fn(PackedGet<uint8_t>{static_cast<const uint8_t*>(ci.data())}, ci.size());
      case 2: return fn(PackedGet<uint16_t>{static_cast<const uint16_t*>(ci.data())}, ci.size());
      default: return fn(PackedGet<uint32_t>{static_cast<const uint32_t*>(ci.data())}, ci.size());
    }
  }
  const Tensor& idx = f.in(in);
  dtype_dispatch(idx.dtype, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>)
      fn(CheckedGet<I>{f, idx.ptr<const I>(), idx.strides[0], dim}, idx.dim(0));
  });
}

}  // namespace fastidx
}  // namespace ember
