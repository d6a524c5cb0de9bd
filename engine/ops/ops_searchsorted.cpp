// SearchsortedOp, as np.searchsorted(x, v, side, sorter): for each element of
// v, the insertion point in the sorted vector x (x[sorter] when given).
// Values compare in NumPy's common type of the two dtypes (float64 once a
// float or a uint64/signed mix is involved, else int64 or uint64), NaNs
// sorting last. The search is NumPy's own, bounds carried over from the
// previous key, so a sorter index out of range fails exactly where NumPy's
// does: when the search reads it.
#include <cmath>
#include <string>
#include <type_traits>

#include "engine/ops/index_read.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

template <class A, class B>
using Common = std::conditional_t<
    std::is_floating_point_v<A> || std::is_floating_point_v<B> ||
        (std::is_same_v<A, uint64_t> && std::is_signed_v<B>) || (std::is_same_v<B, uint64_t> && std::is_signed_v<A>),
    double, std::conditional_t<std::is_unsigned_v<A> && std::is_unsigned_v<B>, uint64_t, int64_t>>;

class SearchsortedKernel final : public OpKernel {
 public:
  explicit SearchsortedKernel(bool right) : right_(right) {}

  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    const Tensor& v = f.in(1);
    const bool has_sorter = f.num_inputs() == 3;
    const int64_t n = x.size();
    if (has_sorter && f.in(2).size() != n)
      f.fail("sorter has " + std::to_string(f.in(2).size()) + " elements, x has " + std::to_string(n) +
             " (sorter.size must equal a.size)");
    Tensor& y = f.alloc_out(0, DType::Int64, v.shape);
    const int64_t m = v.size();
    if (m == 0) return;
    int64_t* out = y.ptr<int64_t>();
    dtype_dispatch(x.dtype, [&](auto tx) {
      using X = decltype(tx);
      dtype_dispatch(v.dtype, [&](auto tv) {
        using V = decltype(tv);
        using C = Common<X, V>;
        if (!has_sorter) {
          search<C, V>(m, n, out, [&](int64_t i) { return static_cast<C>(x.at<X>(i)); }, v);
          return;
        }
        const Tensor& s = f.in(2);
        search<C, V>(m, n, out, [&](int64_t i) {
          const int64_t k = index_at(s, i);
          if (k < 0 || k >= n)
            f.fail("sorter index out of range (sorter[" + std::to_string(i) + "] is " + std::to_string(k) +
                   " for " + std::to_string(n) + " elements)");
          return static_cast<C>(x.at<X>(k));
        }, v);
      });
    });
  }

 private:
  // NumPy's binsearch: key[i] in the order of x, carrying the bounds of the
  // previous key over when the keys ascend.
  template <class C, class V, class Get>
  void search(int64_t m, int64_t n, int64_t* out, Get&& get, const Tensor& v) const {
    // NumPy's comparison for the side: left x[i] < key, right x[i] <= key.
    auto cmp = [&](C a, C b) { return right_ ? !nan_last_less<C>(b, a) : nan_last_less<C>(a, b); };
    int64_t lo = 0, hi = n;
    C last = static_cast<C>(v.at<V>(0));
    for (int64_t i = 0; i < m; ++i) {
      const C key = static_cast<C>(v.at<V>(i));
      if (cmp(last, key)) {
        hi = n;
      } else {
        lo = 0;
        hi = hi < n ? hi + 1 : n;
      }
      last = key;
      while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        const C val = get(mid);
        if (cmp(val, key)) lo = mid + 1;
        else hi = mid;
      }
      out[i] = lo;
    }
  }

  bool right_;
};

}  // namespace

std::unique_ptr<OpKernel> make_searchsorted(NodeContext& ctx) {
  ctx.expect_inputs(2, 3);
  ctx.expect_outputs(1);
  const std::string side = ctx.attr_str("side", "left");
  if (side != "left" && side != "right") ctx.fail("side", "side must be 'left' or 'right', not '" + side + "'");
  if (ctx.in(0).static_shape.ndim != 1) ctx.fail("inputs", "x must be a vector");
  if (ctx.num_inputs() == 3 && (ctx.in(2).static_shape.ndim != 1 || !is_int_dtype(ctx.in(2).dtype)))
    ctx.fail("inputs", "sorter must be an integer vector");
  expect_out(ctx, 0, DType::Int64, ctx.in(1).static_shape.ndim);
  return std::make_unique<SearchsortedKernel>(side == "right");
}

}  // namespace ember
