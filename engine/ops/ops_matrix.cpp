// Matrix constructors: Eye, FillDiagonal, FillDiagonalOffset, BlockDiagonal,
// KroneckerProduct, with the values of PyTensor's Python implementations
// (np.eye, its fill_diagonal slicing, scipy.linalg.block_diag, np.kron's
// layout). Outputs are written fresh and C-contiguous.
#include <algorithm>
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

// Element conversion as NumPy's astype (bool: nonzero).
template <class To, class From>
To cast(From v) {
  if constexpr (std::is_same_v<To, bool>) return v != From(0);
  else return static_cast<To>(v);
}

// a * b in T, wrapping for integers (no UB), logical and for bool.
template <class T>
T mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

Shape mat_shape(int64_t r, int64_t c) {
  Shape s;
  s.ndim = 2;
  s.dims[0] = r;
  s.dims[1] = c;
  return s;
}

class EyeKernel final : public OpKernel {
 public:
  void run(Frame& f) const override {
    const int64_t n = scalar_int(f.in(0)), m = scalar_int(f.in(1)), k = scalar_int(f.in(2));
    if (n < 0 || m < 0) f.fail("negative dimensions are not allowed (" + std::to_string(n) + ", " + std::to_string(m) + ")");
    Tensor& y = f.alloc_out(0, mat_shape(n, m));
    fill_zero(y);
    dtype_dispatch(y.dtype, [&](auto t) {
      using T = decltype(t);
      T* p = y.ptr<T>();
      for (int64_t i = std::max<int64_t>(0, -k); i < n && i + k < m; ++i) p[i * m + i + k] = T(1);
    });
  }
};

// FillDiagonal (offset_input -1) and FillDiagonalOffset (offset from input 2).
class FillDiagKernel final : public OpKernel {
 public:
  explicit FillDiagKernel(bool with_offset) : with_offset_(with_offset) {}
  void run(Frame& f) const override {
    const Tensor& a = f.in(0);
    Tensor& y = f.alloc_out(0, a.shape);
    if (y.size()) copy_convert(y, a);
    const int nd = a.ndim();
    // Flat positions in y (C order): PyTensor's a.flat[start:end:step], with
    // Python's slice rules (a negative end counts from the back).
    int64_t start = 0, end = 0, step = 0;
    if (nd == 2) {
      const int64_t h = a.dim(0), w = a.dim(1);
      step = w + 1;
      if (!with_offset_) {
        end = w * w;
      } else {
        const int64_t off = scalar_int(f.in(2));
        const int64_t count = off >= 0 ? std::min(std::min(w, h), w - off) : std::min(std::min(w, h), h + off);
        start = off >= 0 ? off : -off * w;
        end = start + step * count;
      }
      const int64_t n = h * w;
      start = std::min(start, n);
      end = end < 0 ? std::max<int64_t>(end + n, 0) : std::min(end, n);
    } else {  // np.fill_diagonal: every dim equal, a[i, i, ..., i]
      for (int d = 1; d < nd; ++d)
        if (a.dim(d) != a.dim(0)) f.fail("all dimensions of input must be of equal length, got " + a.shape.str());
      int64_t s = 1;
      for (int d = nd - 1; d >= 0; --d) {
        step += s;
        s *= a.dim(d);
      }
      end = a.dim(0) * step;
    }
    if (end <= start) return;
    const int64_t count = (end - start + step - 1) / step;
    const Tensor& v = f.in(1);
    dtype_dispatch(y.dtype, [&](auto t) {
      using T = decltype(t);
      const T val = dtype_dispatch(v.dtype, [&](auto u) { return cast<T>(*v.ptr<const decltype(u)>()); });
      T* p = y.ptr<T>();
      for (int64_t i = 0; i < count; ++i) p[start + i * step] = val;
    });
  }

 private:
  bool with_offset_;
};

class BlockDiagKernel final : public OpKernel {
 public:
  void run(Frame& f) const override {
    int64_t rows = 0, cols = 0;
    for (int i = 0; i < f.num_inputs(); ++i) {
      rows += f.in(i).dim(0);
      cols += f.in(i).dim(1);
    }
    Tensor& y = f.alloc_out(0, mat_shape(rows, cols));
    fill_zero(y);
    int64_t r0 = 0, c0 = 0;
    for (int i = 0; i < f.num_inputs(); ++i) {
      const Tensor& m = f.in(i);
      Tensor block = y;  // a view of y's block
      block.shape = m.shape;
      block.data = static_cast<char*>(y.data) + (r0 * cols + c0) * int64_t(dtype_size(y.dtype));
      if (m.size()) copy_convert(block, m);
      r0 += m.dim(0);
      c0 += m.dim(1);
    }
  }
};

// kron(a, b) for inputs of equal rank (the exporter pads the shorter one
// with leading unit dims): out[i*db + j] = a[i] * b[j] per dim, in the output dtype.
class KronKernel final : public OpKernel {
 public:
  void run(Frame& f) const override {
    Tensor a = f.in(0), b = f.in(1);
    const int nd = std::max(a.ndim(), b.ndim());
    for (Tensor* t : {&a, &b}) {  // leading unit dims, as the inner graph's expand_dims
      const int pad = nd - t->ndim();
      for (int d = t->ndim() - 1; d >= 0; --d) {
        t->shape.dims[d + pad] = t->shape.dims[d];
        t->strides[d + pad] = t->strides[d];
      }
      for (int d = 0; d < pad; ++d) {
        t->shape.dims[d] = 1;
        t->strides[d] = 0;
      }
      t->shape.ndim = nd;
    }
    Shape s;
    s.ndim = nd;
    for (int d = 0; d < nd; ++d) s.dims[d] = a.dim(d) * b.dim(d);
    Tensor& y = f.alloc_out(0, s);
    const int64_t n = y.size();
    if (n == 0) return;
    // Both inputs converted to the output dtype first (one dispatch, not three).
    const size_t es = dtype_size(y.dtype);
    const size_t abytes = (static_cast<size_t>(a.size()) * es + 63) / 64 * 64;
    char* mem = static_cast<char*>(f.scratch(abytes + static_cast<size_t>(b.size()) * es));
    Tensor ac = Tensor::contiguous(y.dtype, a.shape, mem), bc = Tensor::contiguous(y.dtype, b.shape, mem + abytes);
    copy_convert(ac, a);
    copy_convert(bc, b);
    dtype_dispatch(y.dtype, [&](auto t) {
      using T = decltype(t);
      T* out = y.ptr<T>();
      const T* ap = ac.ptr<T>();
      const T* bp = bc.ptr<T>();
      int64_t idx[kMaxRank] = {};
      for (int64_t o = 0; o < n; ++o) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < nd; ++d) {
          oa += (idx[d] / b.dim(d)) * ac.strides[d];
          ob += (idx[d] % b.dim(d)) * bc.strides[d];
        }
        out[o] = mul<T>(ap[oa], bp[ob]);
        for (int d = nd - 1; d >= 0 && ++idx[d] == s.dims[d]; --d) idx[d] = 0;
      }
    });
  }
};

}  // namespace

std::unique_ptr<OpKernel> make_eye(NodeContext& ctx) {
  ctx.expect_inputs(3);
  ctx.expect_outputs(1);
  for (int i = 0; i < 3; ++i) expect_int_scalar_input(ctx, i, "inputs");
  expect_out(ctx, 0, ctx.out(0).dtype, 2);
  return std::make_unique<EyeKernel>();
}

std::unique_ptr<OpKernel> make_fill_diagonal(NodeContext& ctx) {
  const bool with_offset = ctx.spec().op == "FillDiagonalOffset";
  ctx.expect_inputs(with_offset ? 3 : 2);
  ctx.expect_outputs(1);
  const VarSpec& a = ctx.in(0);
  if (a.static_shape.ndim < 2 || (with_offset && a.static_shape.ndim != 2))
    ctx.fail("inputs", with_offset ? "the input must be a matrix" : "the input must have at least 2 dims");
  if (ctx.in(1).static_shape.ndim != 0) ctx.fail("inputs", "the value must be 0-d");
  if (with_offset) expect_int_scalar_input(ctx, 2, "inputs");
  expect_out(ctx, 0, a.dtype, a.static_shape.ndim);
  return std::make_unique<FillDiagKernel>(with_offset);
}

std::unique_ptr<OpKernel> make_block_diagonal(NodeContext& ctx) {
  ctx.expect_inputs(1, -1);
  ctx.expect_outputs(1);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.in(i).static_shape.ndim != 2) ctx.fail("inputs", "input " + std::to_string(i) + " is not a matrix");
  expect_out(ctx, 0, ctx.out(0).dtype, 2);
  return std::make_unique<BlockDiagKernel>();
}

std::unique_ptr<OpKernel> make_kronecker_product(NodeContext& ctx) {
  ctx.expect_inputs(2);
  ctx.expect_outputs(1);
  const int nd = std::max(ctx.in(0).static_shape.ndim, ctx.in(1).static_shape.ndim);
  if (ctx.in(0).static_shape.ndim + ctx.in(1).static_shape.ndim < 3)
    ctx.fail("inputs", "kron needs input ranks that sum to 3 or more");
  expect_out(ctx, 0, ctx.out(0).dtype, nd);
  return std::make_unique<KronKernel>();
}

}  // namespace ember
