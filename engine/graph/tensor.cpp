#include <cstdlib>
#include <cstring>
#include <new>

#include "ember/ember.hpp"

namespace ember {

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  if (ndim == 1) s += ",";
  return s + ")";
}

void contiguous_strides(const Shape& s, int64_t* strides) {
  int64_t st = 1;
  for (int i = s.ndim - 1; i >= 0; --i) {
    strides[i] = st;
    st *= s.dims[i];
  }
}

bool Tensor::is_contiguous() const {
  int64_t st = 1;
  for (int i = shape.ndim - 1; i >= 0; --i) {
    if (shape.dims[i] != 1 && strides[i] != st) return false;
    st *= shape.dims[i];
  }
  return true;
}

int64_t Tensor::offset_of(int64_t flat) const {
  int64_t off = 0;
  for (int i = shape.ndim - 1; i >= 0; --i) {
    const int64_t d = shape.dims[i];
    off += (flat % d) * strides[i];
    flat /= d;
  }
  return off;
}

Tensor Tensor::contiguous(DType dt, const Shape& s, void* data) {
  Tensor t;
  t.set_contiguous(dt, s, data);
  return t;
}

Array Array::empty(DType dt, const Shape& s) {
  const size_t bytes = std::max<size_t>(static_cast<size_t>(s.size()) * dtype_size(dt), 1);
  void* mem = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!mem) throw std::bad_alloc();
  std::memset(mem, 0, bytes);
  Array a;
  a.mem = std::shared_ptr<void>(mem, std::free);
  a.t = Tensor::contiguous(dt, s, mem);
  return a;
}

Array Array::copy_of(const Tensor& t) {
  Array a = empty(t.dtype, t.shape);
  const size_t es = dtype_size(t.dtype);
  const int64_t n = t.size();
  if (t.is_contiguous()) {
    if (n) std::memcpy(a.t.data, t.data, n * es);
  } else {
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(static_cast<char*>(a.t.data) + i * es,
                  static_cast<const char*>(t.data) + t.offset_of(i) * static_cast<int64_t>(es), es);
  }
  return a;
}

}  // namespace ember
