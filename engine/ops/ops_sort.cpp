// SortOp and ArgSortOp along one axis (null: the flattened input), in
// NumPy's order: ascending, NaNs last. The sort is stable, so ties keep
// their input order: NumPy's "stable"/"mergesort" exactly; its default
// quicksort agrees whenever the values differ.
#include <algorithm>
#include <numeric>
#include <string>

#include "engine/ops/axis_groups.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

class SortKernel final : public OpKernel {
 public:
  SortKernel(bool arg, int axis) : arg_(arg), axis_(axis) {}

  void run(Frame& f) const override {
    const Tensor& in = f.in(0);
    const bool flat = axis_ < 0, copy = flat && !in.is_contiguous();
    const int64_t n = flat ? in.size() : in.dim(axis_);
    const size_t copy_bytes = copy ? (static_cast<size_t>(in.size()) * dtype_size(in.dtype) + 63) / 64 * 64 : 0;
    char* mem = static_cast<char*>(f.scratch(copy_bytes + static_cast<size_t>(n) * sizeof(int64_t)));
    int64_t* idx = reinterpret_cast<int64_t*>(mem + copy_bytes);
    Tensor x = in;
    if (copy) {
      x = Tensor::contiguous(in.dtype, in.shape, mem);
      if (in.size()) copy_convert(x, in);
    }
    if (flat) {  // the flattened input: a C-order vector
      Shape s;
      s.ndim = 1;
      s.dims[0] = in.size();
      x = Tensor::contiguous(x.dtype, s, x.data);
    }
    const int axis = flat ? 0 : axis_;
    Tensor& y = f.alloc_out(0, x.shape);
    if (x.size() == 0) return;
    AxisGroups g(x, axis);
    const int64_t os = g.inner;
    dtype_dispatch(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T* xp = x.ptr<T>();
      g.each([&](int64_t gi, int64_t off) {
        const T* s = xp + off;
        const int64_t st = g.stride;
        std::iota(idx, idx + n, int64_t{0});
        std::stable_sort(idx, idx + n, [&](int64_t a, int64_t b) { return nan_last_less<T>(s[a * st], s[b * st]); });
        const int64_t o = g.out_offset(gi);
        if (arg_) {
          int64_t* yp = y.ptr<int64_t>() + o;
          for (int64_t i = 0; i < n; ++i) yp[i * os] = idx[i];
        } else {
          T* yp = y.ptr<T>() + o;
          for (int64_t i = 0; i < n; ++i) yp[i * os] = s[idx[i] * st];
        }
      });
    });
  }

 private:
  bool arg_;
  int axis_;  // -1: flattened
};

}  // namespace

std::unique_ptr<OpKernel> make_sort(NodeContext& ctx) {
  const bool arg = ctx.spec().op == "ArgSortOp";
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  const VarSpec& x = ctx.in(0);
  const int nd = x.static_shape.ndim;
  const std::string kind = ctx.attr_str("kind", "quicksort");
  if (kind != "quicksort" && kind != "mergesort" && kind != "heapsort" && kind != "stable")
    ctx.fail("kind", "unknown sort kind '" + kind + "'");
  int axis = -1;
  if (ctx.has_attr("axis") && !ctx.attr("axis").is_null()) {
    const int64_t a = ctx.attr_int("axis");
    if (a < -nd || a >= nd) ctx.fail("axis", "axis " + std::to_string(a) + " is out of range for " + std::to_string(nd) + " dims");
    axis = static_cast<int>(a < 0 ? a + nd : a);
  }
  if (nd == 0) ctx.fail("inputs", "cannot sort a 0-d array");
  expect_out(ctx, 0, arg ? DType::Int64 : x.dtype, axis < 0 ? 1 : nd);
  return std::make_unique<SortKernel>(arg, axis);
}

}  // namespace ember
