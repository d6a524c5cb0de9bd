// The matrix exponential (Expm, scipy.linalg.expm's values) and its
// pullback (ExpmGrad), both by Eigen's Pade approximant with scaling and
// squaring.
#include "engine/ops/linalg_util.hpp"  // first: single-threaded Eigen
#include <unsupported/Eigen/MatrixFunctions>

#include <cmath>
#include <limits>

#include "engine/ops/linalg_core.hpp"

namespace ember::linalg {
namespace {

using MatD = Eigen::MatrixXd;

// exp(a) of the n x n matrix at a; a matrix with a non-finite entry gives
// NaNs (Eigen's scaling would take the norm's logarithm as a squaring count).
MatD expm_of(const MatD& a) {
  if (!a.allFinite()) return MatD::Constant(a.rows(), a.cols(), std::numeric_limits<double>::quiet_NaN());
  return a.exp();
}

// Expm(A): one n x n input and output. ExpmGrad(A, G): the gradient of
// sum(G * expm(A)) with respect to A, the Frechet derivative of exp at A^T
// in the direction G: the upper-right block of exp([[A^T, G], [0, A^T]])
// (PyTensor 3's Expm.pullback builds the same block matrix).
class ExpmCore final : public Core {
 public:
  ExpmCore(const CoreDesc& d, bool grad) : grad_(grad) {
    expect_arity(d, grad ? 2 : 1, 1);
    for (int k = 0; k < (grad ? 2 : 1); ++k) {
      expect_ndim(d, true, k, 2, 2);
      expect_square(d, k);
    }
    expect_ndim(d, false, 0, 2, 2);
    expect_float_out(d, 0);
    if (grad) expect_same(d, "inputs", d.in_shape[0].dims[0], d.in_shape[1].dims[0], "G's rows differ from A's");
    num_in = grad ? 2 : 1;
    num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    run_square(f, in[0], grad_ ? "ExpmGrad" : "Expm");
    if (grad_ && (in[1].ndim != 2 || in[1].dims[0] != in[0].dims[0] || in[1].dims[1] != in[0].dims[0]))
      f.fail("ExpmGrad: G has shape " + in[1].str() + ", A " + in[0].str());
    out[0] = in[0];
  }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) * (grad_ ? 3 : 2);
  }
  void compute(Frame&, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t n = in[0].dim(0);
    const MatD a = CMapM<double>(contiguous<double>(in[0], c), n, n);
    MatD r;
    if (!grad_) {
      r = expm_of(a);
    } else {
      const MatD g = CMapM<double>(contiguous<double>(in[1], c), n, n);
      MatD m = MatD::Zero(2 * n, 2 * n);
      m.topLeftCorner(n, n) = a.transpose();
      m.topRightCorner(n, n) = g;
      m.bottomRightCorner(n, n) = a.transpose();
      r = expm_of(m).topRightCorner(n, n);
    }
    double* p = out_buffer<double>(out[0], c);
    MapM<double>(p, n, n) = r;
    finish_out(out[0], p);
  }

 private:
  bool grad_;
};

}  // namespace

std::unique_ptr<Core> make_expm_core(const CoreDesc& d) {
  if (d.op == TensorOp::Expm) return std::make_unique<ExpmCore>(d, false);
  if (d.op == TensorOp::ExpmGrad) return std::make_unique<ExpmCore>(d, true);
  return nullptr;
}

}  // namespace ember::linalg
