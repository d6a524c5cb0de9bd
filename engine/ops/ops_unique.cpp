// Unique over the flattened input (axis=None; an axis is left to the Python
// fallback by the exporter), as NumPy < 2's np.unique: the sorted distinct
// values, then as asked the index of each one's first occurrence, the
// inverse (flat, one per input element) and the counts. All NaNs are one
// value (equal_nan), sorting last. The sort is stable, as NumPy's when it
// returns indices; without them NumPy's quicksort may keep a different one of
// two equal values (0.0 and -0.0), the only way the results can differ.
#include <algorithm>
#include <numeric>
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a == b || (a != a && b != b);
  else return a == b;
}

class UniqueKernel final : public OpKernel {
 public:
  UniqueKernel(bool index, bool inverse, bool counts) : index_(index), inverse_(inverse), counts_(counts) {}

  void run(Frame& f) const override {
    const Tensor& in = f.in(0);
    const int64_t n = in.size();
    const size_t esz = dtype_size(in.dtype);
    const size_t copy_bytes = (static_cast<size_t>(n) * esz + 63) / 64 * 64;
    char* mem = static_cast<char*>(f.scratch(copy_bytes + static_cast<size_t>(n) * sizeof(int64_t)));
    int64_t* perm = reinterpret_cast<int64_t*>(mem + copy_bytes);
    Shape flat;
    flat.ndim = 1;
    flat.dims[0] = n;
    Tensor x = Tensor::contiguous(in.dtype, in.shape, mem);  // the C-order values
    if (n) copy_convert(x, in);
    dtype_dispatch(in.dtype, [&](auto t) {
      using T = decltype(t);
      const T* xp = reinterpret_cast<const T*>(mem);
      std::iota(perm, perm + n, int64_t{0});
      std::stable_sort(perm, perm + n, [&](int64_t a, int64_t b) { return nan_last_less<T>(xp[a], xp[b]); });
      int64_t k = 0;
      for (int64_t i = 0; i < n; ++i) k += i == 0 || !same<T>(xp[perm[i]], xp[perm[i - 1]]);
      Shape ks = flat;
      ks.dims[0] = k;
      int o = 0;
      T* uniq = f.alloc_out(o++, ks).ptr<T>();
      int64_t* first = index_ ? f.alloc_out(o++, DType::Int64, ks).ptr<int64_t>() : nullptr;
      int64_t* inv = inverse_ ? f.alloc_out(o++, DType::Int64, flat).ptr<int64_t>() : nullptr;
      int64_t* cnt = counts_ ? f.alloc_out(o++, DType::Int64, ks).ptr<int64_t>() : nullptr;
      int64_t u = -1;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = perm[i];
        if (i == 0 || !same<T>(xp[p], xp[perm[i - 1]])) {
          uniq[++u] = xp[p];
          if (first) first[u] = p;
          if (cnt) cnt[u] = 0;
        }
        if (inv) inv[p] = u;
        if (cnt) ++cnt[u];
      }
    });
  }

 private:
  bool index_, inverse_, counts_;
};

}  // namespace

std::unique_ptr<OpKernel> make_unique_op(NodeContext& ctx) {
  ctx.expect_inputs(1);
  if (ctx.has_attr("axis") && !ctx.attr("axis").is_null())
    ctx.fail("axis", "only axis=None (the flattened input) is supported");
  const bool index = ctx.attr_bool("return_index", false), inverse = ctx.attr_bool("return_inverse", false),
             counts = ctx.attr_bool("return_counts", false);
  ctx.expect_outputs(1 + index + inverse + counts);
  expect_out(ctx, 0, ctx.in(0).dtype, 1);
  for (int o = 1; o < ctx.num_outputs(); ++o) expect_out(ctx, o, DType::Int64, 1);
  return std::make_unique<UniqueKernel>(index, inverse, counts);
}

}  // namespace ember
