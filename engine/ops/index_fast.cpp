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

}  // namespace ember
