// Softmax, LogSoftmax and SoftmaxGrad along one axis (or over everything,
// axis null), as PyTensor's Python implementations compute them (SciPy's
// softmax / log_softmax): shift by the slice's max, exp, sum. Each slice is
// computed in float64 with the math library's exp and the reduction tree's
// summation order, then stored in the output dtype.
#include <algorithm>
#include <cmath>
#include <string>

#include "engine/ops/axis_groups.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"
#include "interp/math/math.hpp"

namespace ember {
namespace {

enum class Kind { Softmax, LogSoftmax, SoftmaxGrad };

double max_of(const double* v, int64_t n) {
  double m = v[0];
  for (int64_t i = 1; i < n; ++i) m = reduce::combine<reduce::Rop::Max>(m, v[i]);
  return m;
}

// One slice in place: v holds x (Softmax, LogSoftmax) or dy*sm (SoftmaxGrad,
// with sm in w).
void slice(Kind k, double* v, const double* w, int64_t n) {
  if (k == Kind::SoftmaxGrad) {
    const double s = reduce::tree_contiguous<reduce::Rop::Add, double>(v, n);
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] - s * w[i];
    return;
  }
  double m = max_of(v, n);
  if (k == Kind::LogSoftmax && !std::isfinite(m)) m = 0;  // SciPy's log_softmax
  for (int64_t i = 0; i < n; ++i) v[i] -= m;
  if (k == Kind::Softmax) {
    math::exp(n, v, v);
    const double s = reduce::tree_contiguous<reduce::Rop::Add, double>(v, n);
    for (int64_t i = 0; i < n; ++i) v[i] /= s;
    return;
  }
  // log_softmax: tmp - log(sum(exp(tmp))); exp goes to the back half of v's buffer.
  double* e = v + n;
  math::exp(n, v, e);
  const double s = math::log(reduce::tree_contiguous<reduce::Rop::Add, double>(e, n));
  for (int64_t i = 0; i < n; ++i) v[i] -= s;
}

template <class T>
void load(const Tensor& x, int64_t off, int64_t stride, int64_t n, double* v) {
  const T* p = x.ptr<T>() + off;
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(p[i * stride]);
}

class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(Kind k, int axis) : kind_(k), axis_(axis) {}

  void run(Frame& f) const override {
    const int nin = kind_ == Kind::SoftmaxGrad ? 2 : 1;
    Tensor in[2];
    for (int i = 0; i < nin; ++i) in[i] = f.in(i);
    if (nin == 2 && !(in[0].shape == in[1].shape))
      f.fail("dy has shape " + in[0].shape.str() + " but sm has " + in[1].shape.str());
    const Shape shape = in[0].shape;
    Tensor& y = f.alloc_out(0, shape);
    const int64_t n_all = shape.size();
    if (n_all == 0) return;
    int axis = axis_ < 0 ? 0 : axis_;
    const int64_t n = axis_ < 0 ? n_all : shape.dims[axis];
    // Scratch: two slices of float64, then contiguous copies for axis null.
    size_t bytes = static_cast<size_t>(2 * n) * sizeof(double);
    if (axis_ < 0)
      for (int i = 0; i < nin; ++i) bytes += static_cast<size_t>(n_all) * 8;
    char* mem = static_cast<char*>(f.scratch(bytes));
    double* v = reinterpret_cast<double*>(mem);
    double* w = v + n;
    mem += static_cast<size_t>(2 * n) * sizeof(double);
    if (axis_ < 0) {  // everything: one flat slice (a contiguous copy if needed)
      Shape flat;
      flat.ndim = 1;
      flat.dims[0] = n_all;
      for (int i = 0; i < nin; ++i) {
        if (!in[i].is_contiguous()) {
          Tensor c = Tensor::contiguous(in[i].dtype, shape, mem);
          mem += static_cast<size_t>(n_all) * 8;
          copy_convert(c, in[i]);
          in[i] = c;
        }
        in[i] = Tensor::contiguous(in[i].dtype, flat, in[i].data);
      }
    }
    AxisGroups g0(in[0], axis);
    AxisGroups g1(in[nin - 1], axis);
    g1.rest.seek(0);
    g0.each([&](int64_t g, int64_t off) {
      dtype_dispatch(in[0].dtype, [&](auto t) { load<decltype(t)>(in[0], off, g0.stride, n, v); });
      if (nin == 2) {
        dtype_dispatch(in[1].dtype, [&](auto t) { load<decltype(t)>(in[1], g1.rest.off, g1.stride, n, w); });
        g1.rest.next();
        for (int64_t i = 0; i < n; ++i) v[i] *= w[i];
      }
      slice(kind_, v, w, n);
      const int64_t o = g0.out_offset(g), os = g0.inner;
      dtype_dispatch(y.dtype, [&](auto t) {
        using T = decltype(t);
        T* yp = y.ptr<T>() + o;
        for (int64_t i = 0; i < n; ++i) yp[i * os] = static_cast<T>(v[i]);
      });
    });
  }

 private:
  Kind kind_;
  int axis_;  // -1: over everything
};

std::unique_ptr<OpKernel> make(NodeContext& ctx, Kind k) {
  const int nin = k == Kind::SoftmaxGrad ? 2 : 1;
  ctx.expect_inputs(nin);
  ctx.expect_outputs(1);
  const VarSpec& x = ctx.in(0);
  for (int i = 0; i < nin; ++i)
    if (!dtype_is_float(ctx.in(i).dtype)) ctx.fail("inputs", "inputs must be float64 or float32");
  if (nin == 2 && ctx.in(1).static_shape.ndim != x.static_shape.ndim)
    ctx.fail("inputs", "dy and sm must have the same rank");
  expect_out(ctx, 0, ctx.out(0).dtype, x.static_shape.ndim);
  if (!dtype_is_float(ctx.out(0).dtype)) ctx.fail("outputs", "output must be float64 or float32");
  int axis = -1;
  if (ctx.has_attr("axis") && !ctx.attr("axis").is_null()) {
    const int64_t a = ctx.attr_int("axis");
    const int64_t nd = x.static_shape.ndim;
    if (a < -nd || a >= nd) ctx.fail("axis", "axis " + std::to_string(a) + " is out of range for " +
                                                 std::to_string(nd) + " dims");
    axis = static_cast<int>(a < 0 ? a + nd : a);
  }
  return std::make_unique<SoftmaxKernel>(k, axis);
}

}  // namespace

std::unique_ptr<OpKernel> make_softmax(NodeContext& ctx) { return make(ctx, Kind::Softmax); }
std::unique_ptr<OpKernel> make_log_softmax(NodeContext& ctx) { return make(ctx, Kind::LogSoftmax); }
std::unique_ptr<OpKernel> make_softmax_grad(NodeContext& ctx) { return make(ctx, Kind::SoftmaxGrad); }

}  // namespace ember
