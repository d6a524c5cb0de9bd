// MatrixIsPositiveDefinite (PyMC's PosDefMatrix, in LKJCorr's logp): true
// when a Cholesky factorisation of the matrix's upper triangle succeeds, as
// scipy.linalg.cholesky(A) does; a non-finite entry is an error there too.
#include <cmath>
#include <string>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

class PosDefKernel final : public OpKernel {
 public:
  void run(Frame& f) const override {
    const Tensor& a = f.in(0);
    const int64_t n = a.dim(0);
    if (a.dim(1) != n) f.fail("expected a square matrix, got " + a.shape.str());
    Eigen::Map<Eigen::MatrixXd> m(static_cast<double*>(f.scratch(static_cast<size_t>(n * n) * sizeof(double))), n, n);
    dtype_dispatch(a.dtype, [&](auto t) {
      using T = decltype(t);
      const T* p = a.ptr<T>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) m(i, j) = static_cast<double>(p[i * a.strides[0] + j * a.strides[1]]);
    });
    if (!m.allFinite()) f.fail("array must not contain infs or NaNs");
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>, Eigen::Upper> llt(m);  // in place: no allocation
    Shape s;
    *f.alloc_out(0, DType::Bool, s).ptr<bool>() = llt.info() == Eigen::Success;
  }
};

}  // namespace

std::unique_ptr<OpKernel> make_pos_def(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  if (ctx.in(0).static_shape.ndim != 2) ctx.fail("inputs", "the input must be a matrix");
  expect_out(ctx, 0, DType::Bool, 0);
  return std::make_unique<PosDefKernel>();
}

}  // namespace ember
