// A strided view of typed memory. Strides are in elements and may be zero
// (broadcast) or negative (reversed slices). A Tensor never owns memory.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "interp/dtype.hpp"

namespace ember {

inline constexpr int kMaxRank = 16;

struct Shape {
  int ndim = 0;
  int64_t dims[kMaxRank] = {};

  int64_t size() const {
    int64_t s = 1;
    for (int i = 0; i < ndim; ++i) s *= dims[i];
    return s;
  }
  int64_t operator[](int i) const { return dims[i]; }
  bool operator==(const Shape& o) const {
    if (ndim != o.ndim) return false;
    for (int i = 0; i < ndim; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  std::string str() const;  // "(2, 3)"
};

struct Tensor {
  DType dtype = DType::Float64;
  Shape shape;
  int64_t strides[kMaxRank] = {};
  void* data = nullptr;

  int ndim() const { return shape.ndim; }
  int64_t size() const { return shape.size(); }
  int64_t dim(int i) const { return shape.dims[i]; }
  bool is_contiguous() const;  // C order
  template <class T> T* ptr() const { return static_cast<T*>(data); }
  // Element at a flat C-order index (slow path; for scalars and tests).
  template <class T> T at(int64_t flat) const { return ptr<T>()[offset_of(flat)]; }
  int64_t offset_of(int64_t flat) const;

  // A C-contiguous view of `data` with the given shape.
  static Tensor contiguous(DType dt, const Shape& s, void* data);
  // Same, in place. Copies only the used dims (dims past ndim keep stale
  // values): this is on the executor's per-node path.
  void set_contiguous(DType dt, const Shape& s, void* p) {
    dtype = dt;
    data = p;
    shape.ndim = s.ndim;
    int64_t st = 1;
    for (int i = s.ndim - 1; i >= 0; --i) {
      shape.dims[i] = s.dims[i];
      strides[i] = st;
      st *= s.dims[i];
    }
  }
  // *this = t, copying only the used dims (a Tensor is 272 bytes; most are 0-d or 1-d).
  void set_view(const Tensor& t) {
    dtype = t.dtype;
    data = t.data;
    shape.ndim = t.shape.ndim;
    for (int i = 0; i < t.shape.ndim; ++i) {
      shape.dims[i] = t.shape.dims[i];
      strides[i] = t.strides[i];
    }
  }
};

// Sets C-order strides for shape.
void contiguous_strides(const Shape& s, int64_t* strides);

}  // namespace ember
