// RavelMultiIndex and UnravelIndex, as np.ravel_multi_index and
// np.unravel_index: flat indices into an array of shape `dims` (the last
// input, a runtime vector) from coordinate arrays, and back, in C or F order.
// Negative dims are an error here (NumPy computes with them regardless).
#include <algorithm>
#include <string>

#include "engine/ops/index_read.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {
namespace {

enum class Mode { Raise, Wrap, Clip };

// The dims vector, checked: its length, no negative entries.
void read_dims(const Frame& f, const Tensor& t, int want, int64_t* dims) {
  if (t.size() != want)
    f.fail("dims has " + std::to_string(t.size()) + " entries, " + std::to_string(want) + " were expected");
  for (int d = 0; d < want; ++d) {
    dims[d] = index_at(t, d);
    if (dims[d] < 0) f.fail("dims[" + std::to_string(d) + "] is negative (" + std::to_string(dims[d]) + ")");
  }
}

// Element strides of a `dims`-shaped array in C or F order.
void place_values(const int64_t* dims, int n, bool f_order, int64_t* mult) {
  int64_t m = 1;
  for (int k = 0; k < n; ++k) {
    const int d = f_order ? k : n - 1 - k;
    mult[d] = m;
    m *= dims[d];
  }
}

class RavelKernel final : public OpKernel {
 public:
  RavelKernel(int n, Mode mode, bool f_order, const Shape& stat) : n_(n), mode_(mode), f_order_(f_order), stat_(stat) {}

  void run(Frame& f) const override {
    int64_t dims[kMaxRank], mult[kMaxRank];
    read_dims(f, f.in(n_), n_, dims);
    if (mode_ != Mode::Raise)
      for (int d = 0; d < n_; ++d)
        if (dims[d] == 0) f.fail("cannot wrap or clip a coordinate into a dimension of size 0");
    place_values(dims, n_, f_order_, mult);
    Shape bs = f.in(0).shape;
    for (int d = 1; d < n_; ++d) {
      if (!broadcast_shapes(bs, f.in(d).shape, bs)) f.fail("the coordinate arrays could not be broadcast together");
    }
    check_out_shape(f, 0, stat_, bs);
    Tensor coords[kMaxRank];
    for (int d = 0; d < n_; ++d) broadcast_view(f.in(d), bs, coords[d]);  // bs broadcasts them all
    Tensor& y = f.alloc_out(0, DType::Int64, bs);
    int64_t* out = y.ptr<int64_t>();
    for (int64_t i = 0, m = y.size(); i < m; ++i) {
      int64_t flat = 0;
      for (int d = 0; d < n_; ++d) {
        int64_t c = index_at(coords[d], i);
        if (c < 0 || c >= dims[d]) {
          if (mode_ == Mode::Raise)
            f.fail("invalid entry in coordinates array: " + std::to_string(c) + " for dimension " + std::to_string(d) +
                   " of size " + std::to_string(dims[d]));
          if (mode_ == Mode::Wrap) c = (c % dims[d] + dims[d]) % dims[d];
          else c = std::clamp<int64_t>(c, 0, dims[d] - 1);
        }
        flat += c * mult[d];
      }
      out[i] = flat;
    }
  }

 private:
  int n_;
  Mode mode_;
  bool f_order_;
  Shape stat_;
};

class UnravelKernel final : public OpKernel {
 public:
  UnravelKernel(int n, bool f_order) : n_(n), f_order_(f_order) {}

  void run(Frame& f) const override {
    const Tensor& idx = f.in(0);
    int64_t dims[kMaxRank], mult[kMaxRank];
    read_dims(f, f.in(1), n_, dims);
    place_values(dims, n_, f_order_, mult);
    int64_t size = 1;
    for (int d = 0; d < n_; ++d) size *= dims[d];
    int64_t* out[kMaxRank];
    for (int d = 0; d < n_; ++d) out[d] = f.alloc_out(d, DType::Int64, idx.shape).ptr<int64_t>();
    for (int64_t i = 0, m = idx.size(); i < m; ++i) {
      const int64_t v = index_at(idx, i);
      if (v < 0 || v >= size)
        f.fail("index " + std::to_string(v) + " is out of range for dims of size " + std::to_string(size));
      for (int d = 0; d < n_; ++d) out[d][i] = v / mult[d] % dims[d];
    }
  }

 private:
  int n_;
  bool f_order_;
};

bool read_order(NodeContext& ctx) {
  const std::string order = ctx.attr_str("order", "C");
  if (order != "C" && order != "F") ctx.fail("order", "order must be 'C' or 'F', not '" + order + "'");
  return order == "F";
}

// Input i must be an integer tensor (a vector when `vector`).
void expect_int_input(NodeContext& ctx, int i, bool vector, const char* what) {
  if (!is_int_dtype(ctx.in(i).dtype) || (vector && ctx.in(i).static_shape.ndim != 1))
    ctx.fail("inputs", std::string(what) + " must be an integer " + (vector ? "vector" : "tensor"));
}

}  // namespace

std::unique_ptr<OpKernel> make_ravel_multi_index(NodeContext& ctx) {
  ctx.expect_inputs(2, -1);
  ctx.expect_outputs(1);
  const int n = ctx.num_inputs() - 1;
  if (n > kMaxRank) ctx.fail("inputs", "more than " + std::to_string(kMaxRank) + " coordinate arrays");
  for (int i = 0; i < n; ++i) expect_int_input(ctx, i, false, "a coordinate array");
  expect_int_input(ctx, n, true, "dims");
  const int64_t len = ctx.in(n).static_shape.dims[0];
  if (len >= 0 && len != n)
    ctx.fail("inputs", "dims has " + std::to_string(len) + " entries for " + std::to_string(n) + " coordinate arrays");
  const std::string mode = ctx.attr_str("mode", "raise");
  if (mode != "raise" && mode != "wrap" && mode != "clip")
    ctx.fail("mode", "mode must be 'raise', 'wrap' or 'clip', not '" + mode + "'");
  const bool f_order = read_order(ctx);
  expect_out(ctx, 0, DType::Int64, ctx.out(0).static_shape.ndim);
  return std::make_unique<RavelKernel>(n, mode == "raise" ? Mode::Raise : mode == "wrap" ? Mode::Wrap : Mode::Clip,
                                       f_order, ctx.out(0).static_shape);
}

std::unique_ptr<OpKernel> make_unravel_index(NodeContext& ctx) {
  ctx.expect_inputs(2);
  const int n = ctx.num_outputs();
  if (n < 1 || n > kMaxRank) ctx.fail("outputs", "between 1 and " + std::to_string(kMaxRank) + " outputs expected");
  expect_int_input(ctx, 0, false, "indices");
  expect_int_input(ctx, 1, true, "dims");
  const int64_t len = ctx.in(1).static_shape.dims[0];
  if (len >= 0 && len != n)
    ctx.fail("inputs", "dims has " + std::to_string(len) + " entries for " + std::to_string(n) + " outputs");
  const bool f_order = read_order(ctx);
  for (int o = 0; o < n; ++o) expect_out(ctx, o, DType::Int64, ctx.in(0).static_shape.ndim);
  return std::make_unique<UnravelKernel>(n, f_order);
}

}  // namespace ember
