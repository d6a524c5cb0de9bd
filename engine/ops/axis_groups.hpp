// Ops that work on 1-d slices along one axis (softmax, sort, argmax): the
// slices of a tensor along `axis`, every position of the other axes in C
// order. Slice g of a C-contiguous result of the same shape starts at
// (g / inner) * len * inner + g % inner with stride inner; in a result
// with the axis removed it is element g.
#pragma once
#include <cstdint>

#include "engine/ops/reduce_tree.hpp"
#include "ember/tensor.hpp"

namespace ember {

struct AxisGroups {
  int64_t count = 1;  // number of slices
  int64_t len = 1;    // elements per slice
  int64_t stride = 0;  // input stride along the axis
  int64_t inner = 1;   // product of the dims after the axis
  reduce::Walker rest;  // the other axes of the input

  AxisGroups(const Tensor& x, int axis) {
    len = x.dim(axis);
    stride = x.strides[axis];
    for (int d = 0; d < x.ndim(); ++d) {
      if (d == axis) continue;
      rest.dims[rest.nd] = x.dim(d);
      rest.strides[rest.nd] = x.strides[d];
      ++rest.nd;
      count *= x.dim(d);
      if (d > axis) inner *= x.dim(d);
    }
  }
  int64_t out_offset(int64_t g) const { return (g / inner) * len * inner + g % inner; }

  // f(g, input offset of slice g) for every slice, in order.
  template <class F>
  void each(F&& f) {
    if (count == 0) return;
    rest.seek(0);
    for (int64_t g = 0; g < count; ++g, rest.next()) f(g, rest.off);
  }
};

}  // namespace ember
