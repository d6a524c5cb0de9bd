#include "engine/ops/ops_common.hpp"

#include <cstring>

namespace ember {

int coalesce_dims(int ndim, int64_t* dims, int nops, int64_t (*strides)[kMaxRank]) {
  int nd = 0;
  for (int i = 0; i < ndim; ++i) {  // drop size-1 dims
    if (dims[i] == 1) continue;
    dims[nd] = dims[i];
    for (int k = 0; k < nops; ++k) strides[k][nd] = strides[k][i];
    ++nd;
  }
  if (nd <= 1) return nd;
  int out = 0;  // merge outer dim into the running inner one, innermost first
  int64_t rdims[kMaxRank], rst[8][kMaxRank];
  rdims[0] = dims[nd - 1];
  for (int k = 0; k < nops; ++k) rst[k][0] = strides[k][nd - 1];
  for (int i = nd - 2; i >= 0; --i) {
    bool merge = true;
    for (int k = 0; k < nops; ++k)
      if (strides[k][i] != rst[k][out] * rdims[out]) merge = false;
    if (merge) {
      rdims[out] *= dims[i];
    } else {
      ++out;
      rdims[out] = dims[i];
      for (int k = 0; k < nops; ++k) rst[k][out] = strides[k][i];
    }
  }
  const int n = out + 1;
  for (int i = 0; i < n; ++i) {  // reverse back to outer-first order
    dims[i] = rdims[n - 1 - i];
    for (int k = 0; k < nops; ++k) strides[k][i] = rst[k][n - 1 - i];
  }
  return n;
}

namespace {
template <class D, class S>
void copy_typed(const Tensor& dst, const Tensor& src) {
  zip_each(dst.shape, dst.ptr<D>(), dst.strides, src.ptr<const S>(), src.strides,
           [](D& d, const S& s) { d = static_cast<D>(s); });
}
// Same-type copies move bytes: one instantiation per element size.
template <class U>
void copy_bits(const Tensor& dst, const Tensor& src) {
  zip_each(dst.shape, static_cast<U*>(dst.data), dst.strides, static_cast<const U*>(src.data),
           src.strides, [](U& d, const U& s) { d = s; });
}
}  // namespace

void copy_convert(const Tensor& dst, const Tensor& src) {
  if (dst.dtype == src.dtype) {
    switch (dtype_size(dst.dtype)) {
      case 1: return copy_bits<uint8_t>(dst, src);
      case 2: return copy_bits<uint16_t>(dst, src);
      case 4: return copy_bits<uint32_t>(dst, src);
      default: return copy_bits<uint64_t>(dst, src);
    }
  }
  dtype_dispatch(dst.dtype, [&](auto d) {
    dtype_dispatch(src.dtype, [&](auto s) { copy_typed<decltype(d), decltype(s)>(dst, src); });
  });
}

void fill_zero(const Tensor& dst) {
  if (dst.is_contiguous()) {
    std::memset(dst.data, 0, dst.size() * dtype_size(dst.dtype));
    return;
  }
  static const uint64_t zero = 0;
  Tensor z = dst;
  for (int i = 0; i < z.ndim(); ++i) z.strides[i] = 0;
  z.data = const_cast<uint64_t*>(&zero);
  copy_convert(dst, z);
}

bool broadcast_view(const Tensor& t, const Shape& to, Tensor& v) {
  if (t.ndim() > to.ndim) return false;
  const int off = to.ndim - t.ndim();
  // Backwards: v may be t itself (i - off <= i is read before i is written).
  for (int i = to.ndim - 1; i >= 0; --i) {
    int64_t st = 0;
    if (i >= off) {
      const int64_t d = t.shape.dims[i - off];
      if (d == to.dims[i]) st = t.strides[i - off];
      else if (d != 1) return false;
    }
    v.strides[i] = st;
    v.shape.dims[i] = to.dims[i];
  }
  v.shape.ndim = to.ndim;
  v.dtype = t.dtype;
  v.data = t.data;
  return true;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  const int na = a.ndim, nb = b.ndim, n = na > nb ? na : nb;
  // Backwards, so that out may alias a or b.
  for (int i = n - 1; i >= 0; --i) {
    const int ia = i - (n - na), ib = i - (n - nb);
    const int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da == db || db == 1) out.dims[i] = da;
    else if (da == 1) out.dims[i] = db;
    else return false;
  }
  out.ndim = n;
  return true;
}

int64_t scalar_int(const Tensor& t) {
  return dtype_dispatch(t.dtype, [&](auto v) -> int64_t {
    using T = decltype(v);
    return static_cast<int64_t>(*t.ptr<const T>());
  });
}

double scalar_double(const Tensor& t) {
  return dtype_dispatch(t.dtype, [&](auto v) -> double {
    using T = decltype(v);
    return static_cast<double>(*t.ptr<const T>());
  });
}

std::string index_error_msg(int64_t i, int axis, int64_t dim) {
  return "index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
         " with size " + std::to_string(dim);
}

SliceRange slice_range(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step,
                       int64_t dim) {
  // CPython's PySlice_AdjustIndices.
  SliceRange r;
  r.step = step;
  int64_t lo, hi;
  if (step > 0) {
    lo = 0;
    hi = dim;
  } else {
    lo = -1;
    hi = dim - 1;
  }
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += dim;
      if (x < lo) x = lo;
    } else if (x > hi) {
      x = hi;
    }
    return x;
  };
  const int64_t s = adjust(start, step > 0 ? lo : hi);
  const int64_t e = adjust(stop, step > 0 ? hi : lo);
  r.start = s;
  if (step > 0) r.len = e > s ? (e - s - 1) / step + 1 : 0;
  else r.len = s > e ? (s - e - 1) / (-step) + 1 : 0;
  if (r.len == 0) r.start = 0;
  return r;
}

bool is_int_dtype(DType t) { return dtype_is_int(t); }

void expect_int_scalar_input(const NodeContext& ctx, int i, const std::string& field) {
  const VarSpec& v = ctx.in(i);
  if (!is_int_dtype(v.dtype) || v.static_shape.ndim != 0)
    ctx.fail(field, "input " + std::to_string(i) + " must be a 0-d integer tensor, got " +
                        std::string(dtype_name(v.dtype)) + " of rank " +
                        std::to_string(v.static_shape.ndim));
}

void expect_out(const NodeContext& ctx, int i, DType dt, int ndim) {
  const VarSpec& v = ctx.out(i);
  if (v.dtype != dt)
    ctx.fail("outputs", "output " + std::to_string(i) + " has dtype " +
                            std::string(dtype_name(v.dtype)) + ", expected " +
                            std::string(dtype_name(dt)));
  if (v.static_shape.ndim != ndim)
    ctx.fail("outputs", "output " + std::to_string(i) + " has rank " +
                            std::to_string(v.static_shape.ndim) + ", expected " +
                            std::to_string(ndim));
}

void expect_out_shape(const NodeContext& ctx, int i, const Shape& computed) {
  const Shape& s = ctx.out(i).static_shape;
  for (int d = 0; d < s.ndim && d < computed.ndim; ++d)
    if (s.dims[d] >= 0 && computed.dims[d] >= 0 && s.dims[d] != computed.dims[d])
      ctx.fail("outputs", "output " + std::to_string(i) + " has static shape " + s.str() +
                              " but the op gives " + computed.str());
}

void check_out_shape(const Frame& f, int i, const Shape& stat, const Shape& got) {
  bool ok = stat.ndim == got.ndim;
  for (int d = 0; ok && d < got.ndim; ++d) ok = stat.dims[d] < 0 || stat.dims[d] == got.dims[d];
  if (ok) return;
  std::string s = "(";
  for (int d = 0; d < stat.ndim; ++d)
    s += (d ? ", " : "") + (stat.dims[d] < 0 ? std::string("?") : std::to_string(stat.dims[d]));
  f.fail("output " + std::to_string(i) + " has shape " + got.str() + " but the graph declares " + s +
         (stat.ndim == 1 ? ",)" : ")"));
}

}  // namespace ember
