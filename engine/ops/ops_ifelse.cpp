// IfElse: inputs (condition, then_0..then_{n-1}, else_0..else_{n-1}), n
// outputs, each a copy of the taken branch's value (PyTensor's as_view=False).
// The kernel reads only the taken branch; the loader's lazy schedule
// (engine/program/lazy_branches.cpp) skips the steps only the other needs.
#include <memory>
#include <string>
#include <vector>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

class IfElseK final : public OpKernel {
 public:
  explicit IfElseK(std::vector<Shape> out_shapes) : n_(static_cast<int>(out_shapes.size())), shapes_(std::move(out_shapes)) {}
  void run(Frame& f) const override {
    // Python's truth of a 0-d value: non-zero (NaN is true).
    const bool take_then = scalar_double(f.in(0)) != 0;
    for (int o = 0; o < n_; ++o) {
      const Tensor& src = f.in(1 + o + (take_then ? 0 : n_));
      check_out_shape(f, o, shapes_[o], src.shape);
      Tensor& dst = f.alloc_out(o, src.shape);
      copy_convert(dst, src);
    }
  }

 private:
  int n_;
  std::vector<Shape> shapes_;  // outputs' static shapes
};

}  // namespace

std::unique_ptr<OpKernel> make_ifelse(NodeContext& ctx) {
  const int n = ctx.num_outputs();
  if (n < 1) ctx.fail("outputs", "IfElse needs at least one output");
  ctx.expect_inputs(1 + 2 * n);
  if (ctx.has_attr("n_outs") && ctx.attr_int("n_outs") != n)
    ctx.fail("n_outs", "is " + S(ctx.attr_int("n_outs")) + " but the node has " + S(n) + " outputs");
  if (ctx.in(0).static_shape.ndim != 0) ctx.fail("inputs", "input 0 (the condition) must be 0-d");
  std::vector<Shape> shapes;
  for (int o = 0; o < n; ++o) {
    const VarSpec& out = ctx.out(o);
    shapes.push_back(out.static_shape);
    for (int b = 0; b < 2; ++b) {
      const int i = 1 + o + b * n;
      const VarSpec& x = ctx.in(i);
      const std::string which = "input " + S(i) + (b ? " (else branch of output " : " (then branch of output ") +
                                S(o) + ")";
      if (x.dtype != out.dtype)
        ctx.fail("inputs", which + " has dtype " + std::string(dtype_name(x.dtype)) + ", the output " +
                               std::string(dtype_name(out.dtype)));
      if (x.static_shape.ndim != out.static_shape.ndim)
        ctx.fail("inputs", which + " has rank " + S(x.static_shape.ndim) + ", the output " +
                               S(out.static_shape.ndim));
      expect_out_shape(ctx, o, x.static_shape);
    }
  }
  return std::make_unique<IfElseK>(std::move(shapes));
}

}  // namespace ember
