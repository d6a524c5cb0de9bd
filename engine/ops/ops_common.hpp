// Helpers shared by the data-movement ops: strided loops, element
// conversion, broadcasting views, index and slice normalization.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "engine/ops/op.hpp"
#include "ember/tensor.hpp"

namespace ember {

// Storage for a per-call Shape or Tensor that is not zero-initialized (they
// are 136 and 272 bytes; zeroing them was a visible share of a small node's
// cost). Only fields the caller writes may be read: ndim, dims/strides below
// ndim, dtype, data. The bytes implicitly create the object (C++20).
template <class T> struct Uninit {
  alignas(T) std::byte raw[sizeof(T)];
  T& operator*() { return *std::launder(reinterpret_cast<T*>(raw)); }
};
// The same for a per-call array of N (operand tables: 8 Tensors are 2 KB).
template <class T, int N> struct UninitArray {
  alignas(T) std::byte raw[N * sizeof(T)];
  T* data() { return std::launder(reinterpret_cast<T*>(raw)); }
  T& operator[](int i) { return data()[i]; }
};

// Simplifies an n-operand strided loop: drops size-1 dims and merges dims
// that are contiguous with their inner neighbour in every operand. Returns the
// new rank (0 means a single element); dims/strides are rewritten in place.
int coalesce_dims(int ndim, int64_t* dims, int nops, int64_t (*strides)[kMaxRank]);

// NumPy's sort order: NaNs after every number (and equal to each other).
template <class T>
bool nan_last_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a < b || (b != b && a == a);
  else return a < b;
}

// Calls f(a, b) for every element pair of two same-shaped strided views, C
// order. f's writes through a must not change b (a row broadcasting b reads
// it once).
template <class A, class B, class F>
void zip_each(const Shape& shape, A* a, const int64_t* sa, B* b, const int64_t* sb, F&& f) {
  int64_t dims[kMaxRank];
  int64_t st[2][kMaxRank];
  for (int i = 0; i < shape.ndim; ++i) {
    dims[i] = shape.dims[i];
    st[0][i] = sa[i];
    st[1][i] = sb[i];
    if (dims[i] == 0) return;
  }
  const int nd = coalesce_dims(shape.ndim, dims, 2, st);
  if (nd == 0) {
    f(*a, *b);
    return;
  }
  const int64_t n = dims[nd - 1], ia = st[0][nd - 1], ib = st[1][nd - 1];
  // The inner loop with its common strides as constants (contiguous pairs
  // and a broadcast b), so the compiler vectorizes it: rows of a few
  // elements through runtime strides cost ~1 ns per element.
  auto row = [&](A* pa, B* pb) {
    if (ia == 1 && ib == 1)
      for (int64_t k = 0; k < n; ++k) f(pa[k], pb[k]);
    else if (ia == 1 && ib == 0) {
      // Read once: through the reference, every store to a could change *pb,
      // so the loop reloaded it per element and was not vectorized.
      const std::remove_const_t<B> v = *pb;
      for (int64_t k = 0; k < n; ++k) f(pa[k], v);
    }
    else
      for (int64_t k = 0; k < n; ++k) f(pa[k * ia], pb[k * ib]);
  };
  // Rows of 2-8 contiguous elements in both (a slice of a matrix's columns,
  // the gradient of p[:, 1:]): the row length a compile-time constant, so a
  // row is straight-line code and rows run back to back.
  if (nd == 2 && ia == 1 && ib == 1 && n >= 2 && n <= 8) {
    auto rows = [&](auto len) {
      for (int64_t r = 0; r < dims[0]; ++r, a += st[0][0], b += st[1][0])
        for (int k = 0; k < decltype(len)::value; ++k) f(a[k], b[k]);
    };
    switch (n) {
      case 2: return rows(std::integral_constant<int, 2>{});
      case 3: return rows(std::integral_constant<int, 3>{});
      case 4: return rows(std::integral_constant<int, 4>{});
      case 5: return rows(std::integral_constant<int, 5>{});
      case 6: return rows(std::integral_constant<int, 6>{});
      case 7: return rows(std::integral_constant<int, 7>{});
      default: return rows(std::integral_constant<int, 8>{});
    }
  }
  int64_t idx[kMaxRank];  // [0, nd-1) used; not all 16 zeroed per call
  for (int d = 0; d + 1 < nd; ++d) idx[d] = 0;
  for (;;) {
    row(a, b);
    int d = nd - 2;
    for (; d >= 0; --d) {
      a += st[0][d];
      b += st[1][d];
      if (++idx[d] < dims[d]) break;
      a -= st[0][d] * dims[d];
      b -= st[1][d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Copies src into dst (same shape), converting the element type as NumPy's
// unsafe cast does. src may have zero strides (broadcast).
void copy_convert(const Tensor& dst, const Tensor& src);
// dst[...] = 0.
void fill_zero(const Tensor& dst);

// v = `t` viewed broadcast to `to` (NumPy rules: right-aligned, dims of 1
// stretch), writing only v's used fields (a node's per-call path). False,
// v unspecified, when the shapes are incompatible.
bool broadcast_view(const Tensor& t, const Shape& to, Tensor& v);
// out = the NumPy broadcast of a and b (out may be a or b), used dims only;
// false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

// A 0-d (or one-element) integer or bool tensor read as int64.
int64_t scalar_int(const Tensor& t);
// A 0-d tensor of any dtype read as double (ints exactly when |v| < 2^53).
double scalar_double(const Tensor& t);

// Python's index rule: -dim <= i < dim. Returns the normalized index, or -1
// when out of bounds.
inline int64_t normalize_index(int64_t i, int64_t dim) {
  if (i < 0) i += dim;
  return (i < 0 || i >= dim) ? -1 : i;
}
// NumPy's IndexError text, for Frame::fail.
std::string index_error_msg(int64_t i, int axis, int64_t dim);

// Python's slice.indices(): start, element count and step for one axis.
struct SliceRange {
  int64_t start = 0, len = 0, step = 1;
};
// step must be non-zero (checked by the caller).
SliceRange slice_range(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step,
                       int64_t dim);

// Load-time checks shared by the ops.
bool is_int_dtype(DType t);  // integer (not bool)
// Fails unless input i is a 0-d integer tensor.
void expect_int_scalar_input(const NodeContext& ctx, int i, const std::string& field);
// Fails unless the output's dtype and rank are as given.
void expect_out(const NodeContext& ctx, int i, DType dt, int ndim);
// Fails unless every dim known in both `computed` (-1: unknown) and the
// output's static shape agrees.
void expect_out_shape(const NodeContext& ctx, int i, const Shape& computed);

// Run-time check that output i's shape agrees with its static shape (later
// nodes were validated against it).
void check_out_shape(const Frame& f, int i, const Shape& stat, const Shape& got);

}  // namespace ember
