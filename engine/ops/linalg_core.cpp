// Core linear-algebra kernels (Eigen, single-threaded): Dot, Cholesky,
// SolveTriangular, Solve, MatrixInverse, Det, SLogDet (the decompositions
// are in engine/ops/linalg_decomp.cpp). Semantics follow
// NumPy/SciPy; failures SciPy raises become CallErrors.
#include "engine/ops/linalg_core.hpp"

#include <cmath>
#include <limits>

#include "engine/ops/linalg_gemv.hpp"
#include "engine/ops/linalg_util.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember::linalg {

void CoreDesc::fail(const std::string& field, const std::string& msg) const {
  on_fail(field, msg);
  throw LoadError(field + ": " + msg);  // on_fail always throws; keeps [[noreturn]] honest
}

const nlohmann::json* CoreDesc::get(const char* name) const {
  if (!attrs.is_object()) return nullptr;
  auto it = attrs.find(name);
  if (it == attrs.end() || it->is_null()) return nullptr;
  return &*it;
}

bool CoreDesc::get_bool(const char* name, bool dflt) const {
  const nlohmann::json* j = get(name);
  if (!j) return dflt;
  if (j->is_boolean()) return j->get<bool>();
  if (j->is_number_integer() && (j->get<int64_t>() == 0 || j->get<int64_t>() == 1))
    return j->get<int64_t>() != 0;
  fail(attr_prefix + name, "expected true or false");
}

std::string CoreDesc::get_str(const char* name, const std::string& dflt) const {
  const nlohmann::json* j = get(name);
  if (!j) return dflt;
  if (!j->is_string()) fail(attr_prefix + name, "expected a string");
  return j->get<std::string>();
}

// ---- load- and call-time checks shared by the cores ------------------------

void expect_float_out(const CoreDesc& d, int out) {
  if (!dtype_is_float(d.out_dt[out]))
    d.fail("outputs", d.name + " output " + std::to_string(out) + " must be float, not " +
                          std::string(dtype_name(d.out_dt[out])));
}

void expect_arity(const CoreDesc& d, int nin, int nout) {
  if (static_cast<int>(d.in_dt.size()) != nin)
    d.fail("inputs", d.name + " takes " + std::to_string(nin) + " inputs, got " +
                         std::to_string(d.in_dt.size()));
  if (static_cast<int>(d.out_dt.size()) != nout)
    d.fail("outputs", d.name + " has " + std::to_string(nout) + " outputs, got " +
                          std::to_string(d.out_dt.size()));
}

void expect_ndim(const CoreDesc& d, bool input, int k, int lo, int hi) {
  const Shape& s = input ? d.in_shape[k] : d.out_shape[k];
  if (s.ndim < lo || s.ndim > hi)
    d.fail(input ? "inputs" : "outputs",
           std::string(input ? "input " : "output ") + std::to_string(k) + " of " + d.name + " has " +
               std::to_string(s.ndim) + " dims; expected " +
               (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)));
}

// Static dims that must agree (unknown dims, -1, agree with anything).
void expect_same(const CoreDesc& d, const char* field, int64_t a, int64_t b, const std::string& what) {
  if (a >= 0 && b >= 0 && a != b)
    d.fail(field, what + " (" + std::to_string(a) + " vs " + std::to_string(b) + ")");
}

void expect_square(const CoreDesc& d, int k) {
  expect_ndim(d, true, k, 2, 2);
  expect_same(d, "inputs", d.in_shape[k].dims[0], d.in_shape[k].dims[1],
              "input " + std::to_string(k) + " of " + d.name + " must be square");
}

void run_square(Frame& f, const Shape& s, const char* op) {
  if (s.ndim != 2 || s.dims[0] != s.dims[1])
    f.fail(std::string(op) + " needs a square matrix, got shape " + s.str());
}

int parse_b_ndim(const CoreDesc& d, int k) {
  int b_ndim = d.in_shape[k].ndim;
  if (const nlohmann::json* j = d.get("b_ndim")) {
    if (!j->is_number_integer() || (j->get<int64_t>() != 1 && j->get<int64_t>() != 2))
      d.fail(d.attr_prefix + "b_ndim", "expected 1 or 2");
    b_ndim = static_cast<int>(j->get<int64_t>());
  }
  expect_ndim(d, true, k, b_ndim, b_ndim);
  if (b_ndim != 1 && b_ndim != 2) d.fail("inputs", "b must be a vector or a matrix");
  expect_ndim(d, false, 0, b_ndim, b_ndim);
  return b_ndim;
}

void solve_shapes(Frame& f, const Shape* in, Shape* out, const char* op) {
  run_square(f, in[0], op);
  if (in[1].dims[0] != in[0].dims[0])
    f.fail(std::string(op) + ": b has " + std::to_string(in[1].dims[0]) + " rows but A is " +
           in[0].str());
  out[0] = in[1];
}

namespace {

enum class CT { F64, F32, I64 };

template <class F>
void with_ct(CT ct, F&& fn) {
  switch (ct) {
    case CT::F64: return fn(double{});
    case CT::F32: return fn(float{});
    case CT::I64: return fn(int64_t{});
  }
}

CT float_ct(const CoreDesc& d, int out) {
  expect_float_out(d, out);
  return d.out_dt[out] == DType::Float32 ? CT::F32 : CT::F64;
}

// ---- Dot ------------------------------------------------------------------

class DotCore final : public Core {
  static constexpr int64_t kSmallDotOut = 64, kSmallDotInner = 16;

 public:
  explicit DotCore(const CoreDesc& d) {
    expect_arity(d, 2, 1);
    expect_ndim(d, true, 0, 1, 2);
    expect_ndim(d, true, 1, 1, 2);
    const Shape &a = d.in_shape[0], &b = d.in_shape[1];
    expect_ndim(d, false, 0, a.ndim + b.ndim - 2, a.ndim + b.ndim - 2);
    expect_same(d, "inputs", a.dims[a.ndim - 1], b.dims[0], "Dot: inner dims differ");
    const DType o = d.out_dt[0];
    ct_ = o == DType::Float64 ? CT::F64 : o == DType::Float32 ? CT::F32 : CT::I64;
    if (dtype_is_float(o) != (dtype_is_float(d.in_dt[0]) || dtype_is_float(d.in_dt[1])))
      d.fail("outputs", "Dot output dtype " + std::string(dtype_name(o)) + " does not match inputs " +
                            std::string(dtype_name(d.in_dt[0])) + ", " +
                            std::string(dtype_name(d.in_dt[1])));
    num_in = 2;
    num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    const Shape &a = in[0], &b = in[1];
    const int64_t k = a.dims[a.ndim - 1];
    if (k != b.dims[0])
      f.fail("shapes " + a.str() + " and " + b.str() + " not aligned: " + std::to_string(k) +
             " (dim " + std::to_string(a.ndim - 1) + ") != " + std::to_string(b.dims[0]) + " (dim 0)");
    out[0] = Shape{};
    if (a.ndim == 2) out[0].dims[out[0].ndim++] = a.dims[0];
    if (b.ndim == 2) out[0].dims[out[0].ndim++] = b.dims[1];
  }
  size_t scratch_bytes(const Shape* in) const override {
    const int64_t m = in[0].ndim == 2 ? in[0].dims[0] : 1, n = in[1].ndim == 2 ? in[1].dims[1] : 1;
    return carve_bytes(in[0].size(), 8) + carve_bytes(in[1].size(), 8) + carve_bytes(m * n, 8) +
           carve_bytes(in[0].ndim == 2 ? in[0].dims[1] : 1, 8);  // a column of b
  }
  void compute(Frame&, const Tensor* in, const Tensor* out, char* scratch) const override {
    with_ct(ct_, [&](auto t) {
      using T = decltype(t);
      Carver c{scratch};
      const Tensor &a = in[0], &b = in[1];
      const int64_t m = a.ndim() == 2 ? a.dim(0) : 1, k = a.dim(a.ndim() - 1);
      const int64_t n = b.ndim() == 2 ? b.dim(1) : 1;
      if constexpr (std::is_same_v<T, double>) {
        // A matrix times a vector, or a vector (or one row, (1, k): a CAR
        // prior's phi @ W) times a matrix (the matrix's transpose times it):
        // one summation order for every layout, the matrix read in place
        // when its rows or columns are contiguous.
        const bool mv = a.ndim() == 2 && n == 1, vm = !mv && (a.ndim() == 1 || m == 1) && b.ndim() == 2;
        if ((mv || vm) && k > 0 && a.dtype == DType::Float64 && b.dtype == DType::Float64) {
          const Tensor& M = mv ? a : b;
          const Tensor& v = mv ? b : a;
          const int64_t rows = mv ? m : n;
          int64_t s0 = M.strides[0], s1 = M.strides[1];
          if (vm) std::swap(s0, s1);
          if (rows == 1) s0 = 1;  // a size-1 axis's stride is never used
          if (k == 1) s1 = 1;
          const double* mp = M.ptr<double>();
          if (!(s1 == 1 || s0 == 1)) {  // neither layout: a C-order copy, rows contiguous
            mp = contiguous<double>(M, c);
            s0 = mv ? k : 1;
            s1 = mv ? 1 : n;
          }
          const double* xp = contiguous<double>(v, c);
          double* yp = out_buffer<double>(out[0], c);
          linalg::gemv_f64(mp, s0, s1, xp, rows, k, yp);
          return;
        }
        // A few outputs over a long inner dim (an MvNormal gradient's sum of
        // outer products, (3, 200) @ (200, 3)): a matrix-vector product per
        // column of b, as above; a blocked product costs more in packing.
        if (a.ndim() == 2 && b.ndim() == 2 && m * n <= kSmallDotOut && k >= kSmallDotInner &&
            a.dtype == DType::Float64 && b.dtype == DType::Float64) {
          int64_t s0 = m == 1 ? 1 : a.strides[0], s1 = a.strides[1];
          const double* ap = a.ptr<double>();
          if (!(s1 == 1 || s0 == 1)) {
            ap = contiguous<double>(a, c);
            s0 = k;
            s1 = 1;
          }
          double* col = c.take<double>(k);
          double* yp = out_buffer<double>(out[0], c);
          double ycol[kSmallDotOut];
          for (int64_t j = 0; j < n; ++j) {
            const double* bj = b.ptr<double>() + j * b.strides[1];
            if (b.strides[0] != 1) {
              for (int64_t t = 0; t < k; ++t) col[t] = bj[t * b.strides[0]];
              bj = col;
            }
            linalg::gemv_f64(ap, s0, s1, bj, m, k, ycol);
            for (int64_t i = 0; i < m; ++i) yp[i * n + j] = ycol[i];
          }
          finish_out(out[0], yp);
          return;
        }
      }
      const T* ap = contiguous<T>(a, c);
      const T* bp = contiguous<T>(b, c);
      T* yp = out_buffer<T>(out[0], c);
      MapM<T> y(yp, m, n);
      if (k == 0) y.setZero();
      else y.noalias() = CMapM<T>(ap, m, k) * CMapM<T>(bp, k, n);
      finish_out(out[0], yp);
    });
  }

 private:
  CT ct_;
};

// ---- Cholesky ---------------------------------------------------------------

class CholeskyCore final : public Core {
 public:
  explicit CholeskyCore(const CoreDesc& d) {
    expect_arity(d, 1, 1);
    expect_square(d, 0);
    expect_ndim(d, false, 0, 2, 2);
    ct_ = float_ct(d, 0);
    lower_ = d.get_bool("lower", true);
    const std::string e = d.get_str("on_error", "raise");
    if (e != "raise" && e != "nan") d.fail(d.attr_prefix + "on_error", "expected \"raise\" or \"nan\", got '" + e + "'");
    nan_on_error_ = e == "nan";
    num_in = num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    run_square(f, in[0], "Cholesky");
    out[0] = in[0];
  }
  size_t scratch_bytes(const Shape* in) const override { return carve_bytes(in[0].size(), 8); }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    with_ct(ct_, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        Carver c{scratch};
        const int64_t m = in[0].dim(0);
        T* lp = out_buffer<T>(out[0], c);
        copy_to(in[0], lp);
        MapM<T> L(lp, m, m);
        bool ok;
        if (lower_) {
          Eigen::LLT<Eigen::Ref<Mat<T>>, Eigen::Lower> llt(L);
          ok = llt.info() == Eigen::Success;
          L.template triangularView<Eigen::StrictlyUpper>().setZero();
        } else {
          Eigen::LLT<Eigen::Ref<Mat<T>>, Eigen::Upper> llt(L);
          ok = llt.info() == Eigen::Success;
          L.template triangularView<Eigen::StrictlyLower>().setZero();
        }
        for (int64_t i = 0; ok && i < m; ++i) ok = !std::isnan(L(i, i));  // LAPACK rejects NaN pivots
        if (!ok) {
          if (!nan_on_error_) f.fail("matrix is not positive definite");
          L.setConstant(std::numeric_limits<T>::quiet_NaN());
        }
        finish_out(out[0], lp);
      }
    });
  }

 private:
  CT ct_;
  bool lower_, nan_on_error_;
};

template <class T>
bool has_zero_diag(const MapM<T>& a, int64_t* at) {
  for (int64_t i = 0; i < a.rows(); ++i)
    if (a(i, i) == T(0)) {
      *at = i;
      return true;
    }
  return false;
}

// ---- SolveTriangular --------------------------------------------------------

class SolveTriangularCore final : public Core {
 public:
  explicit SolveTriangularCore(const CoreDesc& d) {
    expect_arity(d, 2, 1);
    // Square only when it runs (solve_shapes): PyTensor's gradient of a full QR
    // of a tall matrix holds such a solve on a path that never runs.
    expect_ndim(d, true, 0, 2, 2);
    parse_b_ndim(d, 1);
    expect_same(d, "inputs", d.in_shape[0].dims[0], d.in_shape[1].dims[0], "b's rows differ from A's");
    ct_ = float_ct(d, 0);
    lower_ = d.get_bool("lower", false);
    unit_ = d.get_bool("unit_diagonal", false);
    if (const nlohmann::json* j = d.get("trans")) {
      if (j->is_number_integer() && j->get<int64_t>() >= 0 && j->get<int64_t>() <= 2) trans_ = j->get<int64_t>() != 0;
      else if (j->is_string() && (*j == "N" || *j == "T" || *j == "C")) trans_ = *j != "N";
      else d.fail(d.attr_prefix + "trans", "expected 0, 1, 2, \"N\", \"T\" or \"C\"");
    }
    num_in = 2;
    num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    solve_shapes(f, in, out, "SolveTriangular");
  }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) + carve_bytes(in[1].size(), 8);
  }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    with_ct(ct_, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        Carver c{scratch};
        const int64_t m = in[0].dim(0), n = in[1].ndim() == 2 ? in[1].dim(1) : 1;
        MapM<T> A(const_cast<T*>(contiguous<T>(in[0], c)), m, m);
        T* xp = out_buffer<T>(out[0], c);
        copy_to(in[1], xp);
        MapM<T> X(xp, m, n);
        int64_t at;
        if (!unit_ && has_zero_diag(A, &at))
          f.fail("singular matrix: resolution failed at diagonal " + std::to_string(at));
        if (m > 0 && n > 0) {
          const bool lo = lower_ != trans_;  // A^T of a lower matrix is upper
          if (trans_) {
            auto At = A.transpose();
            if (lo) unit_ ? At.template triangularView<Eigen::UnitLower>().solveInPlace(X)
                          : At.template triangularView<Eigen::Lower>().solveInPlace(X);
            else unit_ ? At.template triangularView<Eigen::UnitUpper>().solveInPlace(X)
                       : At.template triangularView<Eigen::Upper>().solveInPlace(X);
          } else {
            if (lo) unit_ ? A.template triangularView<Eigen::UnitLower>().solveInPlace(X)
                          : A.template triangularView<Eigen::Lower>().solveInPlace(X);
            else unit_ ? A.template triangularView<Eigen::UnitUpper>().solveInPlace(X)
                       : A.template triangularView<Eigen::Upper>().solveInPlace(X);
          }
        }
        finish_out(out[0], xp);
      }
    });
  }

 private:
  CT ct_;
  bool lower_, unit_, trans_ = false;
};

// ---- Solve ------------------------------------------------------------------

enum class Assume { Gen, Sym, Pos };

class SolveCore final : public Core {
 public:
  explicit SolveCore(const CoreDesc& d) {
    expect_arity(d, 2, 1);
    expect_square(d, 0);
    parse_b_ndim(d, 1);
    expect_same(d, "inputs", d.in_shape[0].dims[0], d.in_shape[1].dims[0], "b's rows differ from A's");
    ct_ = float_ct(d, 0);
    lower_ = d.get_bool("lower", false);
    const std::string a = d.get_str("assume_a", "gen");
    if (a == "gen" || a == "general" || a == "tridiagonal" || a == "banded") assume_ = Assume::Gen;
    else if (a == "sym" || a == "her" || a == "symmetric" || a == "hermitian") assume_ = Assume::Sym;
    else if (a == "pos" || a == "positive definite") assume_ = Assume::Pos;
    else d.fail(d.attr_prefix + "assume_a", "expected gen, sym, her or pos, got '" + a + "'");
    num_in = 2;
    num_out = 1;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override { solve_shapes(f, in, out, "Solve"); }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) + 2 * carve_bytes(in[1].size(), 8);
  }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    with_ct(ct_, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        Carver c{scratch};
        const int64_t m = in[0].dim(0), n = in[1].ndim() == 2 ? in[1].dim(1) : 1;
        T* ap = c.take<T>(m * m);
        copy_to(in[0], ap);
        MapM<T> A(ap, m, m);
        T* bp = c.take<T>(m * n);
        copy_to(in[1], bp);
        MapM<T> B(bp, m, n);
        T* xp = out_buffer<T>(out[0], c);
        MapM<T> X(xp, m, n);
        if (m == 0 || n == 0) return finish_out(out[0], xp);
        if (assume_ == Assume::Pos) {
          bool ok;
          if (lower_) {
            Eigen::LLT<Eigen::Ref<Mat<T>>, Eigen::Lower> llt(A);
            ok = llt.info() == Eigen::Success;
            if (ok) X = llt.solve(B);
          } else {
            Eigen::LLT<Eigen::Ref<Mat<T>>, Eigen::Upper> llt(A);
            ok = llt.info() == Eigen::Success;
            if (ok) X = llt.solve(B);
          }
          for (int64_t i = 0; ok && i < m; ++i) ok = !std::isnan(A(i, i));
          if (!ok) f.fail("matrix is not positive definite");
        } else {
          if (assume_ == Assume::Sym) {  // use only the named triangle
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = i + 1; j < m; ++j) {
                if (lower_) A(i, j) = A(j, i);
                else A(j, i) = A(i, j);
              }
          }
          Eigen::PartialPivLU<Eigen::Ref<Mat<T>>> lu(A);
          int64_t at;
          MapM<T> LU(ap, m, m);
          if (has_zero_diag(LU, &at)) f.fail("matrix is singular");
          X = lu.solve(B);
        }
        finish_out(out[0], xp);
      }
    });
  }

 private:
  CT ct_;
  bool lower_;
  Assume assume_ = Assume::Gen;
};

// ---- MatrixInverse, Det, SLogDet ------------------------------------------------

enum class LuKind { Inverse, Det, SLogDet };

class LuCore final : public Core {
 public:
  LuCore(const CoreDesc& d, LuKind kind) : kind_(kind) {
    const int nout = kind == LuKind::SLogDet ? 2 : 1;
    expect_arity(d, 1, nout);
    expect_square(d, 0);
    for (int k = 0; k < nout; ++k) {
      expect_ndim(d, false, k, kind == LuKind::Inverse ? 2 : 0, kind == LuKind::Inverse ? 2 : 0);
      ct_ = float_ct(d, k);
    }
    num_in = 1;
    num_out = nout;
  }
  void shapes(Frame& f, const Shape* in, Shape* out) const override {
    run_square(f, in[0], kind_ == LuKind::Inverse ? "MatrixInverse" : kind_ == LuKind::Det ? "Det" : "SLogDet");
    for (int k = 0; k < num_out; ++k) out[k] = kind_ == LuKind::Inverse ? in[0] : Shape{};
  }
  size_t scratch_bytes(const Shape* in) const override {
    return carve_bytes(in[0].size(), 8) * 2 + 4 * carve_bytes(1, 8);
  }
  void compute(Frame& f, const Tensor* in, const Tensor* out, char* scratch) const override {
    with_ct(ct_, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        Carver c{scratch};
        const int64_t m = in[0].dim(0);
        T* ap = c.take<T>(m * m);
        copy_to(in[0], ap);
        MapM<T> A(ap, m, m);
        T* y0 = out_buffer<T>(out[0], c);
        T* y1 = num_out == 2 ? out_buffer<T>(out[1], c) : nullptr;
        if (m == 0) {
          if (kind_ != LuKind::Inverse) y0[0] = T(1);
          if (y1) y1[0] = T(0);
        } else {
          Eigen::PartialPivLU<Eigen::Ref<Mat<T>>> lu(A);
          const MapM<T> LU(ap, m, m);
          int64_t at;
          if (kind_ == LuKind::Inverse) {
            if (has_zero_diag(LU, &at)) f.fail("matrix is singular");
            MapM<T>(y0, m, m) = lu.inverse();
          } else if (kind_ == LuKind::Det) {
            y0[0] = lu.determinant();
          } else {
            T sign = static_cast<T>(lu.permutationP().determinant()), logabs = 0;
            for (int64_t i = 0; i < m; ++i) {
              const T u = LU(i, i);
              if (std::isnan(u)) sign = logabs = std::numeric_limits<T>::quiet_NaN();
              if (u < 0) sign = -sign;
              logabs += std::log(std::abs(u));
            }
            if (!std::isnan(sign) && has_zero_diag(LU, &at)) {
              sign = 0;
              logabs = -std::numeric_limits<T>::infinity();
            }
            y0[0] = sign;
            y1[0] = logabs;
          }
        }
        finish_out(out[0], y0);
        if (y1) finish_out(out[1], y1);
      }
    });
  }

 private:
  LuKind kind_;
  CT ct_ = CT::F64;
};

}  // namespace

std::unique_ptr<Core> make_core(const CoreDesc& d) {
  switch (d.op) {
    case TensorOp::Dot: return std::make_unique<DotCore>(d);
    case TensorOp::Cholesky: return std::make_unique<CholeskyCore>(d);
    case TensorOp::SolveTriangular: return std::make_unique<SolveTriangularCore>(d);
    case TensorOp::Solve: return std::make_unique<SolveCore>(d);
    case TensorOp::MatrixInverse: return std::make_unique<LuCore>(d, LuKind::Inverse);
    case TensorOp::Det: return std::make_unique<LuCore>(d, LuKind::Det);
    case TensorOp::SLogDet: return std::make_unique<LuCore>(d, LuKind::SLogDet);
    default: return make_decomp_core(d);
  }
}

CoreDesc desc_of(NodeContext& ctx) {
  CoreDesc d;
  d.op = ctx.op();
  d.name = ctx.spec().op;
  if (ctx.spec().attrs.is_object()) d.attrs = ctx.spec().attrs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    d.in_dt.push_back(ctx.in(i).dtype);
    d.in_shape.push_back(ctx.in(i).static_shape);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    d.out_dt.push_back(ctx.out(i).dtype);
    d.out_shape.push_back(ctx.out(i).static_shape);
  }
  d.on_fail = [&ctx](const std::string& field, const std::string& msg) { ctx.fail(field, msg); };
  return d;
}

// A plain op (no batch dims): the operands are the core views themselves,
// so no batch shape, offsets or loop (most linear-algebra nodes of a
// Kalman filter's step, 2x2 products among them).
void BatchedKernel::run_plain(Frame& f) const {
  const int nin = core_->num_in, nout = core_->num_out;
  UninitArray<Shape, 8> cin, cout;
  UninitArray<Tensor, 8> ins, ov;
  for (int k = 0; k < nin; ++k) {
    const Tensor& t = f.in(k);
    const int nd = t.ndim();
    cin[k].ndim = nd;
    ins[k].dtype = t.dtype;
    ins[k].shape.ndim = nd;
    ins[k].data = t.data;
    for (int d = 0; d < nd; ++d) {
      cin[k].dims[d] = ins[k].shape.dims[d] = t.dim(d);
      ins[k].strides[d] = t.strides[d];
    }
  }
  core_->shapes(f, cin.data(), cout.data());
  for (int k = 0; k < nout; ++k) {
    const Tensor& o = f.alloc_out(k, cout[k]);
    ov[k].set_contiguous(o.dtype, cout[k], o.data);
  }
  char* scratch = static_cast<char*>(f.scratch(core_->scratch_bytes(cin.data())));
  core_->compute(f, ins.data(), ov.data(), scratch);
}

void BatchedKernel::run(Frame& f) const {
  const int nin = core_->num_in, nout = core_->num_out;
  if (batch_nd_ == 0) {
    bool plain = true;  // ranks as loaded (the loader checked them; a call may not)
    for (int k = 0; k < nin && plain; ++k) plain = f.in(k).ndim() == core_nd_[k];
    if (plain) return run_plain(f);
  }
  Uninit<Shape> ubatch;
  Shape& batch = *ubatch;
  batch.ndim = batch_nd_;
  for (int d = 0; d < batch_nd_; ++d) batch.dims[d] = 1;
  // Operand tables not zero-initialized, and no whole-Tensor copies: 9 KB
  // of zeroing and copying was most of a 2x2 product's cost (a Kalman
  // filter's step makes 18 of them). Only fields below ndim are read.
  UninitArray<Shape, 8> cin, cout;
  for (int k = 0; k < nin; ++k) {
    const Tensor& t = f.in(k);
    const int bnd = t.ndim() - core_nd_[k];
    for (int d = 0; d < bnd; ++d) {
      int64_t& cur = batch.dims[batch_nd_ - bnd + d];
      const int64_t s = t.dim(d);
      if (s == cur || s == 1) continue;
      if (cur != 1)
        f.fail("batch dims of input " + std::to_string(k) + " " + t.shape.str() +
               " do not broadcast with the other inputs");
      cur = s;
    }
    cin[k].ndim = core_nd_[k];
    for (int d = 0; d < core_nd_[k]; ++d) cin[k].dims[d] = t.dim(bnd + d);
  }
  core_->shapes(f, cin.data(), cout.data());
  const Tensor* outs[8];
  int64_t out_core[8];
  for (int k = 0; k < nout; ++k) {
    Uninit<Shape> us;
    Shape& s = *us;
    s.ndim = batch_nd_;
    for (int d = 0; d < batch_nd_; ++d) s.dims[d] = batch.dims[d];
    for (int d = 0; d < cout[k].ndim; ++d) s.dims[s.ndim++] = cout[k].dims[d];
    outs[k] = &f.alloc_out(k, s);
    out_core[k] = cout[k].size();
  }
  const int64_t nb = batch.size();
  if (nb == 0) return;
  char* scratch = static_cast<char*>(f.scratch(core_->scratch_bytes(cin.data())));
  UninitArray<Tensor, 8> ins, ov;
  int64_t idx[kMaxRank];
  for (int d = 0; d < batch_nd_; ++d) idx[d] = 0;
  for (int64_t b = 0; b < nb; ++b) {
    for (int k = 0; k < nin; ++k) {
      const Tensor& t = f.in(k);
      const int bnd = t.ndim() - core_nd_[k];
      int64_t off = 0;
      for (int d = 0; d < bnd; ++d)
        if (t.dim(d) != 1) off += idx[batch_nd_ - bnd + d] * t.strides[d];
      ins[k].dtype = t.dtype;
      ins[k].shape.ndim = core_nd_[k];
      for (int d = 0; d < core_nd_[k]; ++d) ins[k].shape.dims[d] = cin[k].dims[d];
      for (int d = 0; d < core_nd_[k]; ++d) ins[k].strides[d] = t.strides[bnd + d];
      ins[k].data = static_cast<char*>(t.data) + off * static_cast<int64_t>(dtype_size(t.dtype));
    }
    for (int k = 0; k < nout; ++k)
      ov[k].set_contiguous(outs[k]->dtype, cout[k],
                           static_cast<char*>(outs[k]->data) +
                               b * out_core[k] * static_cast<int64_t>(dtype_size(outs[k]->dtype)));
    core_->compute(f, ins.data(), ov.data(), scratch);
    for (int d = batch_nd_ - 1; d >= 0; --d) {
      if (++idx[d] < batch.dims[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace ember::linalg
