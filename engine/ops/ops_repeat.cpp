// Repeat along one axis, as np.repeat(x, repeats, axis): every slice j of the
// axis copied repeats[j] times in order. A one-element repeats applies to
// every slice (NumPy broadcasts it); a negative count is an error.
#include <cstring>
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

class RepeatKernel final : public OpKernel {
 public:
  RepeatKernel(int axis, const Shape& stat) : axis_(axis), stat_(stat) {}

  void run(Frame& f) const override {
    const Tensor& in = f.in(0);
    const Tensor& rep = f.in(1);
    const int64_t n = in.dim(axis_), nr = rep.size();
    if (nr != n && nr != 1)
      f.fail("repeats has " + std::to_string(nr) + " elements for axis " + std::to_string(axis_) + " of length " +
             std::to_string(n) + " (operands could not be broadcast together)");
    const bool copy = !in.is_contiguous();
    const size_t esz = dtype_size(in.dtype);
    const size_t copy_bytes = copy ? (static_cast<size_t>(in.size()) * esz + 63) / 64 * 64 : 0;
    char* mem = static_cast<char*>(f.scratch(copy_bytes + static_cast<size_t>(nr) * sizeof(int64_t)));
    int64_t* count = reinterpret_cast<int64_t*>(mem + copy_bytes);
    int64_t total = 0;
    dtype_dispatch(rep.dtype, [&](auto t) {
      using T = decltype(t);
      for (int64_t j = 0; j < nr; ++j) {
        const T v = rep.at<T>(j);
        if constexpr (std::is_signed_v<T>)
          if (v < 0) f.fail("repeats may not contain negative values (element " + std::to_string(j) + " is " + std::to_string(static_cast<int64_t>(v)) + ")");
        count[j] = static_cast<int64_t>(v);
        if (count[j] < 0) f.fail("repeats element " + std::to_string(j) + " is too large");
        total += count[j];
      }
    });
    if (nr == 1) total = count[0] * n;
    Shape os = in.shape;
    os.dims[axis_] = total;
    check_out_shape(f, 0, stat_, os);
    Tensor& y = f.alloc_out(0, os);
    if (y.size() == 0) return;
    const char* src = static_cast<const char*>(in.data);
    if (copy) {
      Tensor c = Tensor::contiguous(in.dtype, in.shape, mem);
      copy_convert(c, in);
      src = mem;
    }
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= in.dim(d);
    for (int d = axis_ + 1; d < in.ndim(); ++d) inner *= in.dim(d);
    const size_t block = static_cast<size_t>(inner) * esz;
    char* dst = static_cast<char*>(y.data);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j, src += block)
        for (int64_t r = count[nr == 1 ? 0 : j]; r > 0; --r, dst += block) std::memcpy(dst, src, block);
  }

 private:
  int axis_;
  Shape stat_;
};

}  // namespace

std::unique_ptr<OpKernel> make_repeat(NodeContext& ctx) {
  ctx.expect_inputs(2);
  ctx.expect_outputs(1);
  const VarSpec& x = ctx.in(0);
  const VarSpec& rep = ctx.in(1);
  const int nd = x.static_shape.ndim;
  const int64_t axis = ctx.attr_int("axis");
  if (axis < 0 || axis >= nd)
    ctx.fail("axis", "axis " + std::to_string(axis) + " is out of range for " + std::to_string(nd) + " dims");
  if (rep.static_shape.ndim != 1 || !is_int_dtype(rep.dtype))
    ctx.fail("inputs", "repeats must be an integer vector");
  expect_out(ctx, 0, x.dtype, nd);
  return std::make_unique<RepeatKernel>(static_cast<int>(axis), ctx.out(0).static_shape);
}

}  // namespace ember
