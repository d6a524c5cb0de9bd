// CumOp (cumsum / cumprod) along one axis or over the flattened input.
// Sequential along the axis like NumPy: y[i] = y[i-1] op x[i], computed in
// the output's float type (float32 stays float32, as np.cumsum does) or in
// int64 for integers (wraps, then narrows modularly).
#include <string>

#include "engine/ops/op.hpp"
#include "engine/ops/reduce_tree.hpp"

namespace ember {
namespace {

using reduce::Rop;
using reduce::Walker;

template <class Out>
using AccOf = std::conditional_t<std::is_floating_point_v<Out>, Out, int64_t>;

Walker walker_of(const Tensor& x, int from, int to) {
  Walker w;
  for (int i = from; i < to; ++i) {
    w.dims[w.nd] = x.dim(i);
    w.strides[w.nd] = x.strides[i];
    ++w.nd;
  }
  return w;
}

template <Rop op, class In, class Out>
void cum_typed(const Tensor& x, int axis, Out* y) {
  using A = AccOf<Out>;
  const In* xp = x.ptr<In>();
  if (axis < 0) {  // flattened, C order
    Walker w = walker_of(x, 0, x.ndim());
    const int64_t n = x.size();
    A acc{};
    for (int64_t i = 0; i < n; ++i, w.next()) {
      const A v = reduce::convert<A>(xp[w.off]);
      acc = i == 0 ? v : reduce::combine<op>(acc, v);
      y[i] = reduce::convert<Out>(acc);
    }
    return;
  }
  Walker outer = walker_of(x, 0, axis);
  Walker inner = walker_of(x, axis + 1, x.ndim());
  int64_t nouter = 1, ninner = 1;
  for (int i = 0; i < axis; ++i) nouter *= x.dim(i);
  for (int i = axis + 1; i < x.ndim(); ++i) ninner *= x.dim(i);
  const int64_t len = x.dim(axis), sa = x.strides[axis];
  if (ninner == 1) {
    // One chain per row: the running value stays in a register (a store and
    // reload per element would double the chain's latency). It goes through
    // Out as the stored value does (a narrower integer, bool).
    for (int64_t q = 0; q < nouter; ++q, outer.next()) {
      const In* row = xp + outer.off;
      Out* yq = y + q * len;
      A acc{};
      for (int64_t i = 0; i < len; ++i) {
        const A v = reduce::convert<A>(row[i * sa]);
        const Out o = reduce::convert<Out>(i == 0 ? v : reduce::combine<op>(acc, v));
        yq[i] = o;
        acc = reduce::convert<A>(o);
      }
    }
    return;
  }
  for (int64_t q = 0; q < nouter; ++q, outer.next()) {
    Out* yq = y + q * len * ninner;
    for (int64_t i = 0; i < len; ++i) {
      const In* row = xp + outer.off + i * sa;
      Out* yr = yq + i * ninner;
      inner.seek(0);
      for (int64_t p = 0; p < ninner; ++p, inner.next()) {
        const A v = reduce::convert<A>(row[inner.off]);
        yr[p] = reduce::convert<Out>(
            i == 0 ? v : reduce::combine<op>(reduce::convert<A>(yr[p - ninner]), v));
      }
    }
  }
}

class CumKernel final : public OpKernel {
 public:
  CumKernel(Rop op, int axis) : op_(op), axis_(axis) {}
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    Shape s = x.shape;
    if (axis_ < 0) {
      s.ndim = 1;
      s.dims[0] = x.size();
    }
    Tensor& y = f.alloc_out(0, s);
    if (x.size() == 0) return;
    dtype_dispatch(x.dtype, [&](auto in) {
      using In = decltype(in);
      dtype_dispatch(y.dtype, [&](auto out) {
        using Out = decltype(out);
        if (op_ == Rop::Add) cum_typed<Rop::Add, In, Out>(x, axis_, y.ptr<Out>());
        else cum_typed<Rop::Mul, In, Out>(x, axis_, y.ptr<Out>());
      });
    });
  }

 private:
  Rop op_;
  int axis_;  // -1: flattened
};

}  // namespace

std::unique_ptr<OpKernel> make_cumop(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  const std::string mode = ctx.attr_str("mode", "add");
  if (mode != "add" && mode != "mul") ctx.fail("mode", "expected \"add\" or \"mul\", got '" + mode + "'");
  const Shape& xs = ctx.in(0).static_shape;
  const Shape& ys = ctx.out(0).static_shape;
  int axis = -1;
  if (ctx.has_attr("axis") && !ctx.attr("axis").is_null()) {
    if (!ctx.attr("axis").is_number_integer()) ctx.fail("axis", "expected an integer or null");
    const int64_t a = ctx.attr_int("axis");
    const int64_t n = a < 0 ? a + xs.ndim : a;
    if (n < 0 || n >= xs.ndim)
      ctx.fail("axis", "axis " + std::to_string(a) + " is out of range for an input of " +
                           std::to_string(xs.ndim) + " dims");
    axis = static_cast<int>(n);
    if (ys.ndim != xs.ndim) ctx.fail("outputs", "output must have the input's " + std::to_string(xs.ndim) + " dims");
    for (int i = 0; i < xs.ndim; ++i)
      if (xs.dims[i] >= 0 && ys.dims[i] >= 0 && xs.dims[i] != ys.dims[i])
        ctx.fail("outputs", "output shape " + ys.str() + " differs from input shape " + xs.str());
  } else if (ys.ndim != 1) {
    ctx.fail("outputs", "with axis null the output is a vector");
  }
  return std::make_unique<CumKernel>(mode == "add" ? Rop::Add : Rop::Mul, axis);
}

}  // namespace ember
