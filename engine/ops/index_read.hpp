// Element `flat` (C order) of an integer tensor as NumPy's intp: how the
// index-valued inputs of Searchsorted, RavelMultiIndex and UnravelIndex are
// read, whatever their integer dtype (a uint64 wraps, as NumPy's cast does).
#pragma once
#include <cstdint>

#include "ember/tensor.hpp"
#include "interp/dtype.hpp"

namespace ember {

inline int64_t index_at(const Tensor& t, int64_t flat) {
  return dtype_dispatch(t.dtype, [&](auto z) { return static_cast<int64_t>(t.at<decltype(z)>(flat)); });
}

}  // namespace ember
