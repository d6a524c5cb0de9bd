#include "engine/ops/index_fast.hpp"

#include <algorithm>

namespace ember {

ConstIndex ConstIndex::make(const NodeContext& ctx, int idx_input) {
  ConstIndex ci;
  const std::optional<Tensor> c = ctx.constant_input(idx_input);
  if (!c || c->ndim() != 1 || !is_int_dtype(c->dtype)) return ci;
  const int64_t n = c->dim(0);
  std::vector<int64_t> v(static_cast<size_t>(n));
  Tensor vt = Tensor::contiguous(DType::Int64, c->shape, v.data());
  copy_convert(vt, *c);
  int64_t lo = 0, hi = -1;
  for (int64_t e : v) {
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  if (lo < 0) {  // negative entries: only with a static dim to normalize by
    const int64_t dim = ctx.in(0).static_shape.dims[0];
    if (dim < 0) return ci;
    hi = -1;
    for (int64_t& e : v) {
      e = normalize_index(e, dim);
      if (e < 0) return ci;  // out of range: the checked path reports it per call
      hi = std::max(hi, e);
    }
    ci.exact_dim_ = dim;
  }
  if (hi >= (int64_t{1} << 32)) return ci;
  int64_t repeats = 0;
  for (int64_t b = 1; b < n; ++b) repeats += v[b] == v[b - 1];
  ci.runs_ = repeats * 16 > n;
  ci.width_ = hi < 256 ? 1 : hi < 65536 ? 2 : 4;
  ci.n_ = n;
  ci.max_ = hi;
  ci.bytes_.resize(static_cast<size_t>(n) * ci.width_ + 1);  // +1: never empty
  auto pack = [&](auto tag) {
    using P = decltype(tag);
    P* p = reinterpret_cast<P*>(ci.bytes_.data());
    for (int64_t b = 0; b < n; ++b) p[b] = static_cast<P>(v[b]);
  };
  if (ci.width_ == 1) pack(uint8_t{});
  else if (ci.width_ == 2) pack(uint16_t{});
  else pack(uint32_t{});
  return ci;
}

void ConstIndex::prepare_bins() {
  // Many bins keep a bin's updates far apart already (85 bins of ~11 entries
  // were slower this way). A sorted index's runs are one chain at a time;
  // here four run side by side.
  constexpr int64_t kMaxBins = 64, kMinPerBin = 16;
  if (width_ == 0 || max_ + 1 > kMaxBins || n_ < kMinPerBin * (max_ + 1) || n_ >= (int64_t{1} << 32))
    return;
  const int64_t bins = max_ + 1;
  std::vector<std::vector<uint32_t>> at(static_cast<size_t>(bins));
  for (int64_t b = 0; b < n_; ++b) {
    const int64_t v = width_ == 1 ? bytes_[b]
                      : width_ == 2 ? reinterpret_cast<const uint16_t*>(bytes_.data())[b]
                                    : reinterpret_cast<const uint32_t*>(bytes_.data())[b];
    at[v].push_back(static_cast<uint32_t>(b));
  }
  std::vector<uint32_t> used;  // bins with entries
  for (int64_t v = 0; v < bins; ++v)
    if (!at[v].empty()) used.push_back(static_cast<uint32_t>(v));
  // Bins of similar counts side by side: longer common runs, shorter tails.
  std::stable_sort(used.begin(), used.end(), [&](uint32_t a, uint32_t b) { return at[a].size() > at[b].size(); });
  for (size_t g = 0; g < used.size(); g += 4) {
    BinGroup G{};
    G.nbins = static_cast<uint32_t>(std::min<size_t>(4, used.size() - g));
    G.off = static_cast<uint32_t>(pos_.size());
    size_t common = SIZE_MAX;
    for (uint32_t q = 0; q < G.nbins; ++q) {
      G.bin[q] = used[g + q];
      common = std::min(common, at[G.bin[q]].size());
    }
    if (G.nbins < 4) common = 0;  // a short group runs each bin alone
    G.common = static_cast<uint32_t>(common);
    for (size_t t = 0; t < common; ++t)
      for (uint32_t q = 0; q < 4; ++q) pos_.push_back(at[G.bin[q]][t]);
    for (uint32_t q = 0; q < G.nbins; ++q) {
      const auto& e = at[G.bin[q]];
      G.tail[q] = static_cast<uint32_t>(e.size() - common);
      pos_.insert(pos_.end(), e.begin() + static_cast<std::ptrdiff_t>(common), e.end());
    }
    groups_.push_back(G);
  }
}

}  // namespace ember
