// Matrix decompositions and the solvers built on them, as linalg::Cores:
// CholeskySolve (potrs), LUFactor (getrf), LU (scipy.linalg.lu),
// PivotToPermutations, Eigh/Eigvalsh (also generalized, with B), QR, SVD
// and MatrixPinv.
// Each computes in float64 whatever the dtypes (one Eigen instantiation per
// decomposition keeps this file's compile time down) and casts on output.
// Semantics follow SciPy/NumPy; where LAPACK's choice of signs is not
// reproducible (eigenvectors, singular vectors) Eigen's is kept (see
// docs/python.md, the semantic differences).
#include "engine/ops/linalg_util.hpp"  // first: single-threaded Eigen

#include <Eigen/Eigenvalues>
#include <Eigen/Householder>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/ops/linalg_core.hpp"

namespace ember::linalg {
namespace {

using MatD = Eigen::MatrixXd;  // the one matrix type the decompositions see
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool all_finite(const double* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

void expect_int_out(const CoreDesc& d, int out) {
  if (!dtype_is_int(d.out_dt[out]))
    d.fail("outputs", d.name + " output " + std::to_string(out) + " must be an integer, not " +
                          std::string(dtype_name(d.out_dt[out])));
}

void write_ints(const Tensor& o, const int64_t* v) {
  dtype_dispatch(o.dtype, [&](auto t) {
    using D = decltype(t);
    D* p = o.ptr<D>();
    for (int64_t i = 0; i < o.size(); ++i) p[i] = static_cast<D>(v[i]);
  });
}

// Copies a core's float64 result into an output of any float dtype.
template <class M>
void store(const Tensor& o, const M& m, Carver& c) {
  double* p = out_buffer<double>(o, c);
  MapM<double>(p, m.rows(), m.cols()) = m;
  finish_out(o, p);
}

// The full symmetric matrix whose `lower` (or upper) triangle is that of the
// C-order n x n matrix s, as LAPACK's ?syev* read it.
MatD symmetric_from(const double* s, int64_t n, bool lower) {
  MatD a(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) a(i, j) = a(j, i) = lower ? s[i * n + j] : s[j * n + i];
  return a;
}

// ---- CholeskySolve ------------------------------------------------------------
// x = (C C^T)^-1 b (lower) or (C^T C)^-1 b: two triangular solves, no checks,
// as potrs (a zero on C's diagonal gives infs/NaNs, not an error).

class CholeskySolveCore final : public Core {
 public:
  explicit CholeskySolveCore(const CoreDesc& d) {
    expect_arity(d, 2, 1);
    expect_square(d, 0);
    parse_b_ndim(d, 1);
    expect_same(d, "inputs", d.in_shape[0].dims[0], d.in_shape[1].dims[0], "b's rows differ from C's");
    expect_float_out(d, 0);
    lower_ = d.get_bool("lower", false);
    num_in = 2;
    num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    solve_shapes(f, in, out, "CholeskySolve");
  }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) + carve_bytes(in[1].size(), 8);
  }
  void compute(Frame&, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t m = in[0].dim(0), n = in[1].ndim() == 2 ? in[1].dim(1) : 1;
    MapM<double> C(const_cast<double*>(contiguous<double>(in[0], c)), m, m);
    double* xp = out_buffer<double>(out[0], c);
    copy_to(in[1], xp);
    MapM<double> X(xp, m, n);
    if (m > 0 && n > 0) {
      if (lower_) {
        C.triangularView<Eigen::Lower>().solveInPlace(X);
        C.transpose().triangularView<Eigen::Upper>().solveInPlace(X);
      } else {
        C.transpose().triangularView<Eigen::Lower>().solveInPlace(X);
        C.triangularView<Eigen::Upper>().solveInPlace(X);
      }
    }
    finish_out(out[0], xp);
  }

 private:
  bool lower_;
};

// ---- LU with partial pivoting -------------------------------------------------
// Eigen's partial_lu picks, like LAPACK's getrf, the first largest |entry| of
// each column and records the row swaps as getrf's 0-based ipiv.

int64_t lu_inplace(double* lu, int64_t m, int* piv) {
  int nb = 0;
  return Eigen::internal::partial_lu_impl<double, Eigen::RowMajor, int>::blocked_lu(m, m, lu, m, piv, nb);
}

class LUFactorCore final : public Core {
 public:
  explicit LUFactorCore(const CoreDesc& d) {
    expect_arity(d, 1, 2);
    expect_square(d, 0);
    expect_ndim(d, false, 0, 2, 2);
    expect_ndim(d, false, 1, 1, 1);
    expect_float_out(d, 0);
    expect_int_out(d, 1);
    num_in = 1;
    num_out = 2;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    run_square(f, in[0], "LUFactor");
    out[0] = in[0];
    out[1] = Shape{1, {in[0].dims[0]}};
  }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) + 2 * carve_bytes(in[0].dims[0], 8);
  }
  void compute(Frame&, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t m = in[0].dim(0);
    double* lu = out_buffer<double>(out[0], c);
    copy_to(in[0], lu);
    int* piv = c.take<int>(m);
    int64_t* p64 = c.take<int64_t>(m);
    if (m > 0 && lu_inplace(lu, m, piv) >= 0) std::fill(lu, lu + m * m, kNaN);  // getrf's info > 0
    for (int64_t i = 0; i < m; ++i) p64[i] = piv[i];
    finish_out(out[0], lu);
    write_ints(out[1], p64);
  }
};

// scipy.linalg.lu: P, L, U with A = P L U; or (p_indices) p, L, U with
// A = L[p] U; or (permute_l) P L, U. Non-finite input is an error (check_finite).
class LUCore final : public Core {
 public:
  explicit LUCore(const CoreDesc& d) {
    permute_l_ = d.get_bool("permute_l", false);
    p_indices_ = d.get_bool("p_indices", false);
    if (permute_l_ && p_indices_) d.fail(d.attr_prefix + "p_indices", "permute_l and p_indices exclude each other");
    expect_arity(d, 1, permute_l_ ? 2 : 3);
    expect_square(d, 0);
    for (int k = 0; k < num_out_of(); ++k) {
      const bool vec = p_indices_ && k == 0;
      expect_ndim(d, false, k, vec ? 1 : 2, vec ? 1 : 2);
      if (vec) expect_int_out(d, k);
      else expect_float_out(d, k);
    }
    num_in = 1;
    num_out = num_out_of();
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    run_square(f, in[0], "LU");
    for (int k = 0; k < num_out; ++k) out[k] = in[0];
    if (p_indices_) out[0] = Shape{1, {in[0].dims[0]}};
  }
  size_t scratch_bytes(const Shape* in) const override {
    const int64_t m = in[0].dims[0];
    return 5 * carve_bytes(m * m, 8) + 3 * carve_bytes(m, 8);
  }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t m = in[0].dim(0);
    double* lu = c.take<double>(m * m);
    copy_to(in[0], lu);
    if (!all_finite(lu, m * m)) f.fail("array must not contain infs or NaNs");
    int* piv = c.take<int>(m);
    int64_t* perm = c.take<int64_t>(m);  // (L U)[i] = A[perm[i]]
    if (m > 0) lu_inplace(lu, m, piv);
    for (int64_t i = 0; i < m; ++i) perm[i] = i;
    for (int64_t i = 0; i < m; ++i) std::swap(perm[i], perm[piv[i]]);
    const MapM<double> LU(lu, m, m);
    const int li = permute_l_ ? 0 : 1;
    double* lp = out_buffer<double>(out[li], c);
    MapM<double> L(lp, m, m);
    L = LU.triangularView<Eigen::StrictlyLower>();
    L.diagonal().setOnes();
    if (permute_l_) {  // rows of L to where A's rows are: (P L)[perm[i]] = L[i]
      double* t = c.take<double>(m * m);
      std::copy(lp, lp + m * m, t);
      for (int64_t i = 0; i < m; ++i) std::copy(t + i * m, t + (i + 1) * m, lp + perm[i] * m);
    }
    finish_out(out[li], lp);
    store(out[li + 1], MatD(LU.triangularView<Eigen::Upper>()), c);
    if (permute_l_) return;
    if (p_indices_) {  // A = L[p] U: p[perm[i]] = i
      int64_t* p = c.take<int64_t>(m);
      for (int64_t i = 0; i < m; ++i) p[perm[i]] = i;
      write_ints(out[0], p);
    } else {
      double* pp = out_buffer<double>(out[0], c);
      std::fill(pp, pp + m * m, 0.0);
      for (int64_t i = 0; i < m; ++i) pp[perm[i] * m + i] = 1.0;
      finish_out(out[0], pp);
    }
  }

 private:
  int num_out_of() const { return permute_l_ ? 2 : 3; }
  bool permute_l_, p_indices_;
};

// getrf's row swaps -> the permutation they make (inverse) or its inverse.
class PivotToPermutationsCore final : public Core {
 public:
  explicit PivotToPermutationsCore(const CoreDesc& d) {
    expect_arity(d, 1, 1);
    expect_ndim(d, true, 0, 1, 1);
    expect_ndim(d, false, 0, 1, 1);
    if (!dtype_is_int(d.in_dt[0])) d.fail("inputs", "PivotToPermutations takes integer pivots");
    expect_int_out(d, 0);
    inverse_ = d.get_bool("inverse", true);
    num_in = num_out = 1;
  }
  void shapes(Frame&, const Shape* in, Shape* out) const override { out[0] = in[0]; }
  size_t scratch_bytes(const Shape* in) const override { return 3 * carve_bytes(in[0].size(), 8); }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t n = in[0].dim(0);
    int64_t* piv = c.take<int64_t>(n);
    copy_to(in[0], piv);
    int64_t* p = c.take<int64_t>(n);
    for (int64_t i = 0; i < n; ++i) p[i] = i;
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = piv[i] < 0 ? piv[i] + n : piv[i];  // NumPy's negative indices
      if (j < 0 || j >= n)
        f.fail("pivot " + std::to_string(piv[i]) + " is out of bounds for " + std::to_string(n) + " rows");
      std::swap(p[i], p[j]);
    }
    if (!inverse_) {
      int64_t* q = c.take<int64_t>(n);
      for (int64_t i = 0; i < n; ++i) q[p[i]] = i;
      p = q;
    }
    write_ints(out[0], p);
  }

 private:
  bool inverse_;
};

// ---- Eigh, Eigvalsh -----------------------------------------------------------
// Eigenvalues ascending. With B, the generalized problem A v = w B v reduced
// through B's Cholesky factor as LAPACK's sygvd does: V^T B V = I.

class EighCore final : public Core {
 public:
  EighCore(const CoreDesc& d, bool vectors) : vectors_(vectors) {
    const int nin = static_cast<int>(d.in_dt.size());
    if (nin != 1 && nin != 2) d.fail("inputs", d.name + " takes 1 or 2 inputs, got " + std::to_string(nin));
    expect_arity(d, nin, vectors ? 2 : 1);
    for (int k = 0; k < nin; ++k) expect_square(d, k);
    if (nin == 2) expect_same(d, "inputs", d.in_shape[0].dims[0], d.in_shape[1].dims[0], "a and b differ in size");
    expect_ndim(d, false, 0, 1, 1);
    expect_float_out(d, 0);
    if (vectors) {
      expect_ndim(d, false, 1, 2, 2);
      expect_float_out(d, 1);
    }
    lower_ = d.get_bool("lower", true);
    if (d.get("UPLO")) {  // NumPy's spelling (PyTensor 2.x Eigh)
      const std::string u = d.get_str("UPLO", "L");
      if (u != "L" && u != "U") d.fail(d.attr_prefix + "UPLO", "expected \"L\" or \"U\", got '" + u + "'");
      lower_ = u == "L";
    }
    const std::string drv = d.get_str("driver", "evr");
    if (drv != "evr" && drv != "evd" && drv != "ev")
      d.fail(d.attr_prefix + "driver", "expected \"evr\", \"evd\" or \"ev\", got '" + drv + "'");
    num_in = nin;
    num_out = vectors ? 2 : 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    const char* op = vectors_ ? "Eigh" : "Eigvalsh";
    for (int k = 0; k < num_in; ++k) run_square(f, in[k], op);
    if (num_in == 2 && in[1].dims[0] != in[0].dims[0])
      f.fail(std::string(op) + ": b is " + in[1].str() + " but a is " + in[0].str());
    out[0] = Shape{1, {in[0].dims[0]}};
    if (vectors_) out[1] = in[0];
  }
  size_t scratch_bytes(const Shape* in) const override { return 4 * carve_bytes(in[0].size(), 8); }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t n = in[0].dim(0);
    double* s = c.take<double>(n * n);
    copy_to(in[0], s);
    if (!all_finite(s, n * n)) f.fail("array must not contain infs or NaNs");
    MatD a = symmetric_from(s, n, lower_);
    Eigen::LLT<MatD> chol;
    if (num_in == 2) {
      copy_to(in[1], s);
      if (!all_finite(s, n * n)) f.fail("array must not contain infs or NaNs");
      chol.compute(symmetric_from(s, n, lower_));
      bool ok = chol.info() == Eigen::Success;
      for (int64_t i = 0; ok && i < n; ++i) ok = chol.matrixLLT()(i, i) > 0;
      if (!ok) f.fail("b is not positive definite");
      chol.matrixL().solveInPlace(a);                           // L^-1 A
      chol.matrixU().solveInPlace<Eigen::OnTheRight>(a);        // L^-1 A L^-T
    }
    Eigen::SelfAdjointEigenSolver<MatD> es;
    if (n > 0) {
      es.compute(a, vectors_ ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
      if (es.info() != Eigen::Success) f.fail("eigenvalues did not converge");
    }
    double* w = out_buffer<double>(out[0], c);
    for (int64_t i = 0; i < n; ++i) w[i] = es.eigenvalues()[i];
    finish_out(out[0], w);
    if (!vectors_) return;
    if (n == 0) return;
    MatD v = es.eigenvectors();
    if (num_in == 2) chol.matrixU().solveInPlace(v);  // back to A's basis: L^-T y
    store(out[1], v, c);
  }

 private:
  bool vectors_, lower_ = true;
};

// ---- QR ----------------------------------------------------------------------
// Eigen's Householder reflectors follow LAPACK's dlarfg (beta = -sign(a00)|x|),
// so Q, R, H and tau match geqrf/orgqr up to rounding, signs included.

enum class QrMode { Full, Economic, R, Raw };

class QRCore final : public Core {
 public:
  explicit QRCore(const CoreDesc& d) {
    const std::string mode = d.get_str("mode", "full");
    if (mode == "full") mode_ = QrMode::Full;
    else if (mode == "economic") mode_ = QrMode::Economic;
    else if (mode == "r") mode_ = QrMode::R;
    else if (mode == "raw") mode_ = QrMode::Raw;
    else d.fail(d.attr_prefix + "mode", "expected \"full\", \"economic\", \"r\" or \"raw\", got '" + mode + "'");
    if (d.get_bool("pivoting", false)) d.fail(d.attr_prefix + "pivoting", "column pivoting (geqp3) is not supported");
    const int nout = mode_ == QrMode::R ? 1 : mode_ == QrMode::Raw ? 3 : 2;
    expect_arity(d, 1, nout);
    expect_ndim(d, true, 0, 2, 2);
    for (int k = 0; k < nout; ++k) {
      const bool vec = mode_ == QrMode::Raw && k == 1;
      expect_ndim(d, false, k, vec ? 1 : 2, vec ? 1 : 2);
      expect_float_out(d, k);
    }
    num_in = 1;
    num_out = nout;
  }
  void shapes(Frame&, const Shape* in, Shape* out) const override {
    const int64_t m = in[0].dims[0], n = in[0].dims[1], k = std::min(m, n);
    switch (mode_) {
      case QrMode::Full: out[0] = Shape{2, {m, m}}; out[1] = in[0]; break;
      case QrMode::Economic: out[0] = Shape{2, {m, k}}; out[1] = Shape{2, {k, n}}; break;
      case QrMode::R: out[0] = in[0]; break;
      case QrMode::Raw: out[0] = in[0]; out[1] = Shape{1, {k}}; out[2] = Shape{2, {k, n}}; break;
    }
  }
  size_t scratch_bytes(const Shape* in) const override {
    const int64_t m = in[0].dims[0], n = in[0].dims[1];
    return 3 * carve_bytes(m * n, 8) + carve_bytes(m * m, 8) + carve_bytes(std::min(m, n), 8);
  }
  void compute(Frame&, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t m = in[0].dim(0), n = in[0].dim(1), k = std::min(m, n);
    const double* a = contiguous<double>(in[0], c);
    Eigen::HouseholderQR<MatD> qr(CMapM<double>(a, m, n));
    const MatD& h = qr.matrixQR();
    const int ri = mode_ == QrMode::R ? 0 : mode_ == QrMode::Raw ? 2 : 1;
    const int64_t rrows = mode_ == QrMode::Full || mode_ == QrMode::R ? m : k;
    store(out[ri], MatD(h.topRows(rrows).triangularView<Eigen::Upper>()), c);
    if (mode_ == QrMode::R) return;
    if (mode_ == QrMode::Raw) {
      store(out[0], h, c);
      store(out[1], MatD(qr.hCoeffs()), c);
      return;
    }
    const int64_t qcols = mode_ == QrMode::Full ? m : k;
    store(out[0], MatD(qr.householderQ() * MatD::Identity(m, qcols)), c);
  }

 private:
  QrMode mode_ = QrMode::Full;
};

// ---- SVD ---------------------------------------------------------------------
// Singular values descending. Eigen's one-sided Jacobi SVD (QR-preconditioned)
// is accurate for every shape; its singular vectors may differ from LAPACK's
// gesdd by a sign per pair (u_i, v_i), and within repeated singular values.

class SVDCore final : public Core {
 public:
  explicit SVDCore(const CoreDesc& d) {
    full_ = d.get_bool("full_matrices", true);
    uv_ = d.get_bool("compute_uv", true);
    const int nout = uv_ ? 3 : 1;
    expect_arity(d, 1, nout);
    expect_ndim(d, true, 0, 2, 2);
    for (int k = 0; k < nout; ++k) {
      const bool vec = !uv_ || k == 1;
      expect_ndim(d, false, k, vec ? 1 : 2, vec ? 1 : 2);
      expect_float_out(d, k);
    }
    num_in = 1;
    num_out = nout;
  }
  void shapes(Frame&, const Shape* in, Shape* out) const override {
    const int64_t m = in[0].dims[0], n = in[0].dims[1], k = std::min(m, n);
    if (!uv_) {
      out[0] = Shape{1, {k}};
      return;
    }
    out[0] = Shape{2, {m, full_ ? m : k}};
    out[1] = Shape{1, {k}};
    out[2] = Shape{2, {full_ ? n : k, n}};
  }
  size_t scratch_bytes(const Shape* in) const override {
    const int64_t m = in[0].dims[0], n = in[0].dims[1];
    return carve_bytes(m * n, 8) + carve_bytes(m * m, 8) + carve_bytes(n * n, 8) + carve_bytes(std::min(m, n), 8);
  }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t m = in[0].dim(0), n = in[0].dim(1), k = std::min(m, n);
    const double* a = contiguous<double>(in[0], c);
    if (!all_finite(a, m * n)) f.fail("SVD did not converge (the matrix has infs or NaNs)");
    unsigned opts = 0;
    if (uv_) opts = full_ ? Eigen::ComputeFullU | Eigen::ComputeFullV : Eigen::ComputeThinU | Eigen::ComputeThinV;
    Eigen::JacobiSVD<MatD> svd;
    if (k > 0) svd.compute(CMapM<double>(a, m, n), opts);
    const int si = uv_ ? 1 : 0;
    double* s = out_buffer<double>(out[si], c);
    for (int64_t i = 0; i < k; ++i) s[i] = svd.singularValues()[i];
    finish_out(out[si], s);
    if (!uv_) return;
    const int64_t uc = full_ ? m : k, vr = full_ ? n : k;
    if (k > 0) {
      store(out[0], svd.matrixU(), c);
      store(out[2], MatD(svd.matrixV().transpose()), c);
    } else {  // an empty matrix: U and V^T are identities (or empty)
      store(out[0], MatD(MatD::Identity(m, uc)), c);
      store(out[2], MatD(MatD::Identity(vr, n)), c);
    }
  }

 private:
  bool full_, uv_;
};

// ---- MatrixPinv ----------------------------------------------------------------
// NumPy's pinv: singular values at most 1e-15 times the largest count as zero;
// hermitian: from the eigen decomposition of the lower triangle. Either way
// the result does not depend on the vectors' signs.

class MatrixPinvCore final : public Core {
 public:
  explicit MatrixPinvCore(const CoreDesc& d) {
    expect_arity(d, 1, 1);
    expect_ndim(d, true, 0, 2, 2);
    expect_ndim(d, false, 0, 2, 2);
    expect_float_out(d, 0);
    hermitian_ = d.get_bool("hermitian", false);
    if (hermitian_) expect_square(d, 0);
    num_in = num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    if (hermitian_) run_square(f, in[0], "MatrixPinv");
    out[0] = Shape{2, {in[0].dims[1], in[0].dims[0]}};
  }
  size_t scratch_bytes(const Shape* in) const override { return 2 * carve_bytes(in[0].size(), 8); }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    Carver c{scratch};
    const int64_t m = in[0].dim(0), n = in[0].dim(1);
    const double* a = contiguous<double>(in[0], c);
    if (!all_finite(a, m * n)) f.fail("SVD did not converge (the matrix has infs or NaNs)");
    if (m == 0 || n == 0) return store(out[0], MatD(n, m), c);
    constexpr double rcond = 1e-15;
    if (hermitian_) {
      Eigen::SelfAdjointEigenSolver<MatD> es(symmetric_from(a, m, true));
      if (es.info() != Eigen::Success) f.fail("eigenvalues did not converge");
      Eigen::VectorXd w = es.eigenvalues();
      const double cut = rcond * w.cwiseAbs().maxCoeff();
      for (Eigen::Index i = 0; i < w.size(); ++i) w[i] = std::abs(w[i]) > cut ? 1.0 / w[i] : 0.0;
      return store(out[0], MatD(es.eigenvectors() * w.asDiagonal() * es.eigenvectors().transpose()), c);
    }
    Eigen::JacobiSVD<MatD> svd(CMapM<double>(a, m, n), Eigen::ComputeThinU | Eigen::ComputeThinV);
    Eigen::VectorXd s = svd.singularValues();
    const double cut = rcond * s.maxCoeff();
    for (Eigen::Index i = 0; i < s.size(); ++i) s[i] = s[i] > cut ? 1.0 / s[i] : 0.0;
    store(out[0], MatD(svd.matrixV() * s.asDiagonal() * svd.matrixU().transpose()), c);
  }

 private:
  bool hermitian_;
};

}  // namespace

std::unique_ptr<Core> make_decomp_core(const CoreDesc& d) {
  switch (d.op) {
    case TensorOp::CholeskySolve: return std::make_unique<CholeskySolveCore>(d);
    case TensorOp::LUFactor: return std::make_unique<LUFactorCore>(d);
    case TensorOp::LU: return std::make_unique<LUCore>(d);
    case TensorOp::PivotToPermutations: return std::make_unique<PivotToPermutationsCore>(d);
    case TensorOp::Eigh: return std::make_unique<EighCore>(d, true);
    case TensorOp::Eigvalsh: return std::make_unique<EighCore>(d, false);
    case TensorOp::QR: return std::make_unique<QRCore>(d);
    case TensorOp::SVD: return std::make_unique<SVDCore>(d);
    case TensorOp::MatrixPinv: return std::make_unique<MatrixPinvCore>(d);
    case TensorOp::AdvancedSubtensor1: return make_take_core(d);
    case TensorOp::Expm:
    case TensorOp::ExpmGrad: return make_expm_core(d);
    default: return nullptr;
  }
}

}  // namespace ember::linalg
