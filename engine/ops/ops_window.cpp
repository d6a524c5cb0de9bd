// Bartlett, as np.bartlett(M): the triangular window of M points, float64,
// computed as NumPy does (1 -/+ n/(M-1) for n = 1-M, 3-M, ..., M-1) so the
// bits agree; empty when M < 1.
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

class BartlettKernel final : public OpKernel {
 public:
  void run(Frame& f) const override {
    const double m = scalar_double(f.in(0));
    Shape s;
    s.ndim = 1;
    s.dims[0] = m < 1 ? 0 : static_cast<int64_t>(m);
    double* y = f.alloc_out(0, DType::Float64, s).ptr<double>();
    if (s.dims[0] == 1) y[0] = 1.0;
    if (s.dims[0] < 2) return;
    for (int64_t i = 0; i < s.dims[0]; ++i) {
      const double n = (1 - m) + 2.0 * static_cast<double>(i);
      y[i] = n <= 0 ? 1 + n / (m - 1) : 1 - n / (m - 1);
    }
  }
};

}  // namespace

std::unique_ptr<OpKernel> make_bartlett(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  if (ctx.in(0).static_shape.ndim != 0 || !is_int_dtype(ctx.in(0).dtype))
    ctx.fail("inputs", "M must be a 0-d integer");
  expect_out(ctx, 0, DType::Float64, 1);
  return std::make_unique<BartlettKernel>();
}

}  // namespace ember
