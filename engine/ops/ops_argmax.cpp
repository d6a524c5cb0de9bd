// Argmax over a set of axes (null: all), as PyTensor's perform computes it:
// the reduced axes flattened in C order, the index of the first maximum
// (a NaN counts as the maximum, as np.argmax). int64 output with the kept dims.
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"
#include "engine/ops/reduce_tree.hpp"

namespace ember {
namespace {

template <class T>
bool better(T v, T best) {
  if constexpr (std::is_floating_point_v<T>) return best == best && (v > best || v != v);
  else return v > best;
}

class ArgmaxKernel final : public OpKernel {
 public:
  explicit ArgmaxKernel(uint32_t mask) : mask_(mask) {}

  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    reduce::Walker kept, red;
    Shape os;
    int64_t R = 1;
    for (int d = 0; d < x.ndim(); ++d) {
      reduce::Walker& w = (mask_ >> d) & 1u ? red : kept;
      w.dims[w.nd] = x.dim(d);
      w.strides[w.nd++] = x.strides[d];
      if ((mask_ >> d) & 1u) R *= x.dim(d);
      else os.dims[os.ndim++] = x.dim(d);
    }
    Tensor& y = f.alloc_out(0, DType::Int64, os);
    const int64_t O = y.size();
    if (O == 0) return;
    if (R == 0) f.fail("attempt to get argmax of an empty sequence");
    int64_t* out = y.ptr<int64_t>();
    dtype_dispatch(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T* xp = x.ptr<T>();
      kept.seek(0);
      for (int64_t o = 0; o < O; ++o, kept.next()) {
        const T* base = xp + kept.off;
        red.seek(0);
        T best = base[red.off];
        int64_t at = 0;
        red.next();
        for (int64_t i = 1; i < R; ++i, red.next())
          if (better<T>(base[red.off], best)) {
            best = base[red.off];
            at = i;
          }
        out[o] = at;
      }
    });
  }

 private:
  uint32_t mask_;  // bit d: axis d is reduced
};

}  // namespace

std::unique_ptr<OpKernel> make_argmax(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  const int nd = ctx.in(0).static_shape.ndim;
  uint32_t mask = nd == 0 ? 0u : (1u << nd) - 1;
  if (ctx.has_attr("axis") && !ctx.attr("axis").is_null()) {
    mask = 0;
    for (int64_t a : ctx.attr_ints("axis")) {
      const int64_t n = a < 0 ? a + nd : a;
      if (n < 0 || n >= nd) ctx.fail("axis", "axis " + std::to_string(a) + " is out of range for " + std::to_string(nd) + " dims");
      if (mask & (1u << n)) ctx.fail("axis", "axis " + std::to_string(a) + " is repeated");
      mask |= 1u << n;
    }
  }
  expect_out(ctx, 0, DType::Int64, nd - __builtin_popcount(mask));
  return std::make_unique<ArgmaxKernel>(mask);
}

}  // namespace ember
