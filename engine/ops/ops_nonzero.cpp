// Nonzero, as np.nonzero: one int64 vector per input dim, the coordinates of
// the nonzero elements in C order (NaN counts as nonzero, -0.0 as zero).
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

class NonzeroKernel final : public OpKernel {
 public:
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    const int nd = x.ndim();
    const int64_t n = x.size();
    dtype_dispatch(x.dtype, [&](auto t) {
      using T = decltype(t);
      int64_t k = 0;
      for (int64_t i = 0; i < n; ++i) k += x.at<T>(i) != T(0);
      Shape ks;
      ks.ndim = 1;
      ks.dims[0] = k;
      int64_t* out[kMaxRank];
      for (int d = 0; d < nd; ++d) out[d] = f.alloc_out(d, DType::Int64, ks).ptr<int64_t>();
      if (k == 0) return;
      int64_t idx[kMaxRank] = {};
      for (int64_t i = 0, j = 0; i < n; ++i) {
        if (x.at<T>(i) != T(0)) {
          for (int d = 0; d < nd; ++d) out[d][j] = idx[d];
          ++j;
        }
        for (int d = nd - 1; d >= 0 && ++idx[d] == x.dim(d); --d) idx[d] = 0;
      }
    });
  }
};

}  // namespace

std::unique_ptr<OpKernel> make_nonzero(NodeContext& ctx) {
  ctx.expect_inputs(1);
  const int nd = ctx.in(0).static_shape.ndim;
  if (nd == 0) ctx.fail("inputs", "Nonzero only supports non-scalar arrays");
  ctx.expect_outputs(nd);
  for (int o = 0; o < nd; ++o) expect_out(ctx, o, DType::Int64, 1);
  return std::make_unique<NonzeroKernel>();
}

}  // namespace ember
