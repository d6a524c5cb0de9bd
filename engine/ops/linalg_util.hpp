// Helpers for the linear-algebra cores: Eigen maps (single-threaded Eigen:
// products and factorizations then depend only on the sizes), strided
// views copied to contiguous scratch, scratch carving.
#pragma once
#define EIGEN_DONT_PARALLELIZE 1
#include <Eigen/Dense>

#include <cstdint>
#include <type_traits>

#include "engine/ops/reduce_tree.hpp"
#include "ember/tensor.hpp"

namespace ember::linalg {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapM = Eigen::Map<Mat<T>>;
template <class T>
using CMapM = Eigen::Map<const Mat<T>>;

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else return DType::Int64;
}

// Sequential pieces of one scratch block, 64-byte aligned.
struct Carver {
  char* base;
  size_t used = 0;
  template <class T>
  T* take(int64_t n) {
    used = (used + 63) & ~size_t{63};
    T* p = reinterpret_cast<T*>(base + used);
    used += static_cast<size_t>(n) * sizeof(T);
    return p;
  }
};
inline size_t carve_bytes(int64_t n, size_t elt) { return static_cast<size_t>(n) * elt + 64; }

// Copies any strided view into C-order T (converted).
template <class T>
void copy_to(const Tensor& t, T* dst) {
  reduce::Walker w;
  w.nd = t.ndim();
  for (int i = 0; i < w.nd; ++i) {
    w.dims[i] = t.dim(i);
    w.strides[i] = t.strides[i];
  }
  const int64_t n = t.size();
  if (n == 0) return;
  dtype_dispatch(t.dtype, [&](auto s) {
    using S = decltype(s);
    w.gather(t.ptr<S>(), n, dst);
  });
}

// A contiguous T copy of t, or t's own memory when it already is one.
template <class T>
const T* contiguous(const Tensor& t, Carver& c) {
  if (t.dtype == dtype_of<T>() && t.is_contiguous()) return t.ptr<T>();
  T* d = c.take<T>(t.size());
  copy_to(t, d);
  return d;
}

// Where to compute an output: in place when its dtype is T, else scratch.
template <class T>
T* out_buffer(const Tensor& o, Carver& c) {
  if (o.dtype == dtype_of<T>()) return o.ptr<T>();
  return c.take<T>(o.size());
}
template <class T>
void finish_out(const Tensor& o, const T* buf) {
  if (o.dtype == dtype_of<T>()) return;
  dtype_dispatch(o.dtype, [&](auto d) {
    using D = decltype(d);
    D* p = o.ptr<D>();
    for (int64_t i = 0; i < o.size(); ++i) p[i] = reduce::convert<D>(buf[i]);
  });
}

}  // namespace ember::linalg
