#include "engine/tensor.hpp"

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

}  // namespace ember
