// Shape and layout ops: views (DimShuffle, Reshape, passthroughs), shape
// queries, checks, and the ops that build tensors (Alloc, Join, Split, ...).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/ops/ops_common.hpp"

namespace ember {

namespace {

std::string S(int64_t v) { return std::to_string(v); }
std::string dts(DType t) { return std::string(dtype_name(t)); }

// Reads an integer vector (any int dtype, any strides).
void read_ints(const Tensor& t, int64_t* out) {
  const int64_t n = t.size();
  dtype_dispatch(t.dtype, [&](auto v) {
    using T = decltype(v);
    if (t.ndim() <= 1) {  // a shape vector (or one 0-d value): by its stride, no flat-index division
      const int64_t st = t.ndim() == 1 ? t.strides[0] : 0;
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(t.ptr<const T>()[i * st]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(t.at<T>(i));
    }
  });
}

bool all_true(const Tensor& t) {
  bool ok = true;
  dtype_dispatch(t.dtype, [&](auto v) {
    using T = decltype(v);
    zip_each(t.shape, t.ptr<const T>(), t.strides, t.ptr<const T>(), t.strides,
             [&](const T& a, const T&) { ok = ok && a != T(0); });
  });
  return ok;
}

Tensor offset_view(const Tensor& t, int64_t elems) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + elems * int64_t(dtype_size(t.dtype));
  return v;
}

int normalize_axis(const NodeContext& ctx, int64_t axis, int ndim, const std::string& field) {
  if (axis < -ndim || axis >= ndim)
    ctx.fail(field, "axis " + S(axis) + " is out of range for rank " + S(ndim));
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

// Publishes input 0 unchanged.
class PassK : public OpKernel {
 public:
  void run(Frame& f) const override { f.set_out(0, f.in(0)); }
  int may_view(int) const override { return 0; }
};

class DimShuffleK : public OpKernel {
 public:
  int nout = 0, nin = 0;
  int order[kMaxRank];     // -1: new broadcast axis
  bool dropped[kMaxRank];  // input axes not in order (must have length 1)
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    for (int i = 0; i < nin; ++i)
      if (dropped[i] && x.dim(i) != 1)
        f.fail("DimShuffle drops axis " + S(i) + " of length " + S(x.dim(i)) + " (must be 1)");
    Uninit<Tensor> ob;
    Tensor& o = *ob;
    o.dtype = x.dtype;
    o.data = x.data;
    o.shape.ndim = nout;
    for (int i = 0; i < nout; ++i) {
      o.shape.dims[i] = order[i] < 0 ? 1 : x.dim(order[i]);
      o.strides[i] = order[i] < 0 ? 0 : x.strides[order[i]];
    }
    f.set_out(0, o);
  }
  int may_view(int) const override { return 0; }
};

class ReshapeK : public OpKernel {
 public:
  int ndim = 0;
  Shape stat;
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    const Tensor& sh = f.in(1);
    if (sh.size() != ndim) f.fail("shape has " + S(sh.size()) + " entries, expected " + S(ndim));
    int64_t d[kMaxRank];
    read_ints(sh, d);
    Shape s;
    s.ndim = ndim;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; ++i) {
      if (d[i] == -1) {
        if (infer >= 0) f.fail("can only specify one unknown dimension (-1)");
        infer = i;
        s.dims[i] = 1;
      } else if (d[i] < 0) {
        f.fail("negative dimension " + S(d[i]) + " in shape");
      } else {
        s.dims[i] = d[i];
        known *= d[i];
      }
    }
    const int64_t n = x.size();
    if (infer >= 0) {
      if (known == 0 || n % known != 0)
        f.fail("cannot reshape array of size " + S(n) + " into shape with -1");
      s.dims[infer] = n / known;
    }
    if (s.size() != n)
      f.fail("cannot reshape array of size " + S(n) + " into shape " + s.str());
    check_out_shape(f, 0, stat, s);
    if (x.is_contiguous()) {
      f.set_out_contiguous(0, x.dtype, s, x.data);
      return;
    }
    Tensor& o = f.alloc_out(0, x.dtype, s);
    Tensor ov = Tensor::contiguous(x.dtype, x.shape, o.data);  // same C order
    copy_convert(ov, x);
  }
  int may_view(int) const override { return 0; }
};

class ShapeK : public OpKernel {
 public:
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    Shape s;
    s.ndim = 1;
    s.dims[0] = x.ndim();
    Tensor& o = f.alloc_out(0, s);
    dtype_dispatch(o.dtype, [&](auto v) {
      using T = decltype(v);
      for (int i = 0; i < x.ndim(); ++i) o.ptr<T>()[i] = static_cast<T>(x.dim(i));
    });
  }
};

class ShapeIK : public OpKernel {
 public:
  int i = 0;
  void run(Frame& f) const override {
    Tensor& o = f.alloc_out(0, Shape{});
    const int64_t v = f.in(0).dim(i);
    dtype_dispatch(o.dtype, [&](auto t) { *o.ptr<decltype(t)>() = static_cast<decltype(t)>(v); });
  }
};

class SpecifyShapeK : public OpKernel {
 public:
  int ndim = 0;
  int input[kMaxRank];  // -1: free
  Shape stat;
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    for (int d = 0; d < ndim; ++d) {
      if (input[d] < 0) continue;
      const int64_t want = scalar_int(f.in(input[d]));
      if (x.dim(d) != want)
        f.fail("SpecifyShape: dim " + S(d) + " of input has shape " + S(x.dim(d)) +
               ", expected " + S(want));
    }
    check_out_shape(f, 0, stat, x.shape);
    f.set_out(0, x);
  }
  int may_view(int) const override { return 0; }
};

class CheckK : public OpKernel {
 public:
  std::string msg;
  void run(Frame& f) const override {
    for (int i = 1; i < f.num_inputs(); ++i)
      if (!all_true(f.in(i))) f.fail(msg);
    f.set_out(0, f.in(0));
  }
  int may_view(int) const override { return 0; }
};

// Reads 0-d int inputs first..first+n-1 as a shape.
Shape dims_from_inputs(Frame& f, int first, int n) {
  Shape s;
  s.ndim = n;
  for (int i = 0; i < n; ++i) {
    s.dims[i] = scalar_int(f.in(first + i));
    if (s.dims[i] < 0) f.fail("negative dimension " + S(s.dims[i]) + " for axis " + S(i));
  }
  return s;
}

class AllocK : public OpKernel {
 public:
  Shape stat;
  void run(Frame& f) const override {
    const Tensor& v = f.in(0);
    const Shape s = dims_from_inputs(f, 1, f.num_inputs() - 1);
    check_out_shape(f, 0, stat, s);
    Uninit<Tensor> ub;
    if (!broadcast_view(v, s, *ub)) f.fail("Alloc: value of shape " + v.shape.str() + " cannot be broadcast to " + s.str());
    Tensor& o = f.alloc_out(0, s);
    copy_convert(o, *ub);
  }
};

class AllocEmptyK : public OpKernel {
 public:
  Shape stat;
  void run(Frame& f) const override {
    const Shape s = dims_from_inputs(f, 0, f.num_inputs());
    check_out_shape(f, 0, stat, s);
    Tensor& o = f.alloc_out(0, s);
    fill_zero(o);
  }
};

class JoinK : public OpKernel {
 public:
  int first = 0;        // first tensor input
  int axis = 0;         // used when !axis_input
  bool axis_input = false;
  int ndim = 0;
  Shape stat;
  void run(Frame& f) const override {
    int ax = axis;
    if (axis_input) {
      const int64_t a = scalar_int(f.in(0));
      if (a < -ndim || a >= ndim) f.fail("Join: axis " + S(a) + " is out of range for rank " + S(ndim));
      ax = static_cast<int>(a < 0 ? a + ndim : a);
    }
    const Tensor& t0 = f.in(first);
    Shape s = t0.shape;
    s.dims[ax] = 0;
    for (int i = first; i < f.num_inputs(); ++i) {
      const Tensor& t = f.in(i);
      for (int d = 0; d < ndim; ++d)
        if (d != ax && t.dim(d) != t0.dim(d))
          f.fail("Join: input " + S(i) + " has shape " + t.shape.str() + ", incompatible with " +
                 t0.shape.str() + " outside axis " + S(ax));
      s.dims[ax] += t.dim(ax);
    }
    check_out_shape(f, 0, stat, s);
    Tensor& o = f.alloc_out(0, s);
    int64_t pos = 0;
    const size_t es = dtype_size(o.dtype);
    for (int i = first; i < f.num_inputs(); ++i) {
      const Tensor& t = f.in(i);
      // Along axis 0 each piece is a contiguous block of the (contiguous)
      // output: a C-contiguous piece of the same dtype is one memcpy (small
      // models join (1,) and (n,) gradient pieces).
      if (ax == 0 && t.dtype == o.dtype && t.is_contiguous()) {
        const int64_t n = t.size();
        if (n) std::memcpy(static_cast<char*>(o.data) + static_cast<size_t>(pos * o.strides[0]) * es, t.data,
                           static_cast<size_t>(n) * es);
        pos += t.dim(0);
        continue;
      }
      Tensor dst = offset_view(o, pos * o.strides[ax]);
      dst.shape = t.shape;
      copy_convert(dst, t);
      pos += t.dim(ax);
    }
  }
};

class SplitK : public OpKernel {
 public:
  int n = 0, axis = 0, ndim = 0;
  bool axis_input = false;
  int splits_input = 1;
  std::vector<Shape> stat;
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    int ax = axis;
    if (axis_input) {
      const int64_t a = scalar_int(f.in(1));
      if (a < -ndim || a >= ndim) f.fail("Split: axis " + S(a) + " is out of range for rank " + S(ndim));
      ax = static_cast<int>(a < 0 ? a + ndim : a);
    }
    const Tensor& sp = f.in(splits_input);
    if (sp.size() != n) f.fail("Split: splits has " + S(sp.size()) + " entries, expected " + S(n));
    std::vector<int64_t> sizes(static_cast<size_t>(n));
    read_ints(sp, sizes.data());
    int64_t total = 0;
    for (int64_t v : sizes) {
      if (v < 0) f.fail("Split: negative split size " + S(v));
      total += v;
    }
    if (total != x.dim(ax))
      f.fail("Split: split sizes sum to " + S(total) + " but axis " + S(ax) + " has length " +
             S(x.dim(ax)));
    int64_t pos = 0;
    for (int i = 0; i < n; ++i) {
      Tensor v = offset_view(x, sizes[i] ? pos * x.strides[ax] : 0);
      v.shape.dims[ax] = sizes[i];
      check_out_shape(f, i, stat[i], v.shape);
      f.set_out(i, v);
      pos += sizes[i];
    }
  }
  int may_view(int) const override { return 0; }
};

class MakeVectorK : public OpKernel {
 public:
  void run(Frame& f) const override {
    Uninit<Shape> sb;
    Shape& s = *sb;
    s.ndim = 1;
    s.dims[0] = f.num_inputs();
    Tensor& o = f.alloc_out(0, s);
    const size_t es = dtype_size(o.dtype);
    for (int i = 0; i < f.num_inputs(); ++i) {
      const Tensor& x = f.in(i);
      if (x.dtype == o.dtype) {  // the usual case: one element's bytes
        std::memcpy(static_cast<char*>(o.data) + i * es, x.data, es);
        continue;
      }
      Uninit<Tensor> db;
      Tensor& dst = *db;
      dst.dtype = o.dtype;
      dst.shape.ndim = 0;
      dst.data = static_cast<char*>(o.data) + i * es;
      copy_convert(dst, x);
    }
  }
};

// np.arange(start, stop, step, dtype): length from Python arithmetic, values
// start + i*delta in the output type with delta = T(start+step) - T(start).
class ARangeK : public OpKernel {
 public:
  bool int_inputs = true;
  Shape stat;
  void run(Frame& f) const override {
    const Tensor &a = f.in(0), &b = f.in(1), &c = f.in(2);
    int64_t len = 0;
    int64_t is = 0, inext = 0;
    double ds = 0, dnext = 0;
    if (int_inputs) {
      is = scalar_int(a);
      const int64_t e = scalar_int(b), st = scalar_int(c);
      if (st == 0) f.fail("ARange: step must not be zero");
      const int64_t diff = e - is;
      if (diff != 0) {
        const double q = std::ceil(double(diff) / double(st));
        len = q > 0 ? static_cast<int64_t>(q) : 0;
      }
      inext = is + st;
    } else {
      ds = scalar_double(a);
      const double e = scalar_double(b), st = scalar_double(c);
      if (st == 0) f.fail("ARange: step must not be zero");
      const double diff = e - ds;
      if (diff != 0) {
        const double q = std::ceil(diff / st);
        if (!std::isfinite(q)) f.fail("ARange: cannot compute length");
        len = q > 0 ? static_cast<int64_t>(std::min(q, 9e18)) : 0;
      }
      dnext = ds + st;
    }
    if (len > (int64_t(1) << 31)) f.fail("ARange: length " + S(len) + " is too large");
    Shape s;
    s.ndim = 1;
    s.dims[0] = len;
    check_out_shape(f, 0, stat, s);
    Tensor& o = f.alloc_out(0, s);
    dtype_dispatch(o.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = o.ptr<T>();
      if (len == 0) return;
      auto cast = [&](int64_t iv, double dv) -> T {
        if (int_inputs) return static_cast<T>(iv);
        if constexpr (std::is_integral_v<T>) {
          if (!(dv > -9.2e18 && dv < 9.2e18)) f.fail("ARange: value out of range for the dtype");
          return static_cast<T>(static_cast<int64_t>(dv));
        } else {
          return static_cast<T>(dv);
        }
      };
      p[0] = cast(is, ds);
      if (len == 1) return;
      p[1] = cast(inext, dnext);
      const T start = p[0];
      T delta = p[1];
      delta -= start;
      for (int64_t i = 2; i < len; ++i) p[i] = static_cast<T>(start + i * delta);
    });
  }
};

class ExtractDiagK : public OpKernel {
 public:
  int64_t offset = 0;
  int a1 = 0, a2 = 1;
  Shape stat;
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    const int64_t d1 = x.dim(a1), d2 = x.dim(a2);
    int64_t len = 0, start = 0;
    if (offset >= 0) {
      len = std::min(d1, d2 - offset);
      start = offset * x.strides[a2];
    } else {
      len = std::min(d1 + offset, d2);
      start = -offset * x.strides[a1];
    }
    if (len <= 0) {
      len = 0;
      start = 0;
    }
    Tensor o;
    o.dtype = x.dtype;
    o.data = static_cast<char*>(x.data) + start * int64_t(dtype_size(x.dtype));
    for (int d = 0; d < x.ndim(); ++d) {
      if (d == a1 || d == a2) continue;
      o.shape.dims[o.shape.ndim] = x.dim(d);
      o.strides[o.shape.ndim++] = x.strides[d];
    }
    o.shape.dims[o.shape.ndim] = len;
    o.strides[o.shape.ndim++] = x.strides[a1] + x.strides[a2];
    check_out_shape(f, 0, stat, o.shape);
    f.set_out(0, o);
  }
  int may_view(int) const override { return 0; }
};

void expect_same_as_x(const NodeContext& ctx) {
  expect_out(ctx, 0, ctx.in(0).dtype, ctx.in(0).static_shape.ndim);
}

}  // namespace

std::unique_ptr<OpKernel> make_passthrough(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  expect_same_as_x(ctx);
  const TensorOp op = ctx.op();
  if ((op == TensorOp::ScalarFromTensor || op == TensorOp::TensorFromScalar) && ctx.in(0).static_shape.ndim != 0)
    ctx.fail("inputs", "input 0 must be 0-d");
  if (op != TensorOp::Unbroadcast) expect_out_shape(ctx, 0, ctx.in(0).static_shape);
  return std::make_unique<PassK>();
}

std::unique_ptr<OpKernel> make_dimshuffle(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  const VarSpec& x = ctx.in(0);
  const nlohmann::json& no = ctx.attr("new_order");
  if (!no.is_array() || no.size() > size_t(kMaxRank))
    ctx.fail("new_order", "must be a list of at most 16 axis numbers and \"x\"");
  auto k = std::make_unique<DimShuffleK>();
  k->nin = x.static_shape.ndim;
  k->nout = static_cast<int>(no.size());
  for (int i = 0; i < k->nin; ++i) k->dropped[i] = true;
  Shape out;
  out.ndim = k->nout;
  for (int i = 0; i < k->nout; ++i) {
    const nlohmann::json& e = no[i];
    if (e.is_string() && e.get<std::string>() == "x") {
      k->order[i] = -1;
      out.dims[i] = 1;
      continue;
    }
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= k->nin)
      ctx.fail("new_order", "entry " + S(i) + " (" + e.dump() + ") is not \"x\" or an axis of rank-" +
                                S(k->nin) + " input");
    const int a = static_cast<int>(e.get<int64_t>());
    if (!k->dropped[a]) ctx.fail("new_order", "axis " + S(a) + " appears twice");
    k->dropped[a] = false;
    k->order[i] = a;
    out.dims[i] = x.static_shape.dims[a];
  }
  // A dropped axis of unknown length is checked when the node runs
  // (pt.squeeze of a vector); one known to be longer than 1 never works.
  for (int a = 0; a < k->nin; ++a)
    if (k->dropped[a] && x.static_shape.dims[a] >= 0 && x.static_shape.dims[a] != 1)
      ctx.fail("new_order", "drops axis " + S(a) + " of static length " + S(x.static_shape.dims[a]));
  expect_out(ctx, 0, x.dtype, k->nout);
  expect_out_shape(ctx, 0, out);
  return k;
}

std::unique_ptr<OpKernel> make_reshape(NodeContext& ctx) {
  ctx.expect_inputs(2);
  ctx.expect_outputs(1);
  auto k = std::make_unique<ReshapeK>();
  k->stat = ctx.out(0).static_shape;
  k->ndim = static_cast<int>(ctx.attr_int("ndim", ctx.out(0).static_shape.ndim));
  if (k->ndim < 0 || k->ndim > kMaxRank) ctx.fail("ndim", "must be in 0..16");
  const VarSpec& sh = ctx.in(1);
  if (!is_int_dtype(sh.dtype) || sh.static_shape.ndim != 1)
    ctx.fail("inputs", "input 1 (shape) must be an integer vector");
  if (sh.static_shape.dims[0] >= 0 && sh.static_shape.dims[0] != k->ndim)
    ctx.fail("inputs", "shape has length " + S(sh.static_shape.dims[0]) + " but ndim is " + S(k->ndim));
  expect_out(ctx, 0, ctx.in(0).dtype, k->ndim);
  if (auto c = ctx.constant_input(1)) {
    int n_infer = 0;
    for (int64_t i = 0; i < c->size(); ++i) {
      const int64_t v = dtype_dispatch(c->dtype, [&](auto t) { return int64_t(c->at<decltype(t)>(i)); });
      if (v == -1) ++n_infer;
      else if (v < 0) ctx.fail("inputs", "constant shape has negative entry " + S(v));
    }
    if (n_infer > 1) ctx.fail("inputs", "constant shape has more than one -1");
  }
  return k;
}

std::unique_ptr<OpKernel> make_shape(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  const VarSpec& o = ctx.out(0);
  if (!is_int_dtype(o.dtype) || o.static_shape.ndim != 1)
    ctx.fail("outputs", "output must be an integer vector");
  Shape s;
  s.ndim = 1;
  s.dims[0] = ctx.in(0).static_shape.ndim;
  expect_out_shape(ctx, 0, s);
  return std::make_unique<ShapeK>();
}

std::unique_ptr<OpKernel> make_shape_i(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  auto k = std::make_unique<ShapeIK>();
  const int64_t i = ctx.attr_int("i");
  if (i < 0 || i >= ctx.in(0).static_shape.ndim)
    ctx.fail("i", "axis " + S(i) + " is out of range for rank " + S(ctx.in(0).static_shape.ndim));
  k->i = static_cast<int>(i);
  const VarSpec& o = ctx.out(0);
  if (!is_int_dtype(o.dtype) || o.static_shape.ndim != 0)
    ctx.fail("outputs", "output must be a 0-d integer");
  return k;
}

std::unique_ptr<OpKernel> make_specify_shape(NodeContext& ctx) {
  ctx.expect_inputs(1, -1);
  ctx.expect_outputs(1);
  expect_same_as_x(ctx);
  auto k = std::make_unique<SpecifyShapeK>();
  k->stat = ctx.out(0).static_shape;
  k->ndim = ctx.in(0).static_shape.ndim;
  const nlohmann::json& sh = ctx.attr("shape");
  if (!sh.is_array() || int(sh.size()) != k->ndim)
    ctx.fail("shape", "must list one entry per dim of input 0 (rank " + S(k->ndim) + ")");
  std::vector<bool> used(ctx.num_inputs(), false);
  for (int d = 0; d < k->ndim; ++d) {
    const nlohmann::json& e = sh[d];
    k->input[d] = -1;
    if (e.is_null()) continue;
    if (!e.is_object() || !e.contains("input") || !e["input"].is_number_integer())
      ctx.fail("shape", "entry " + S(d) + " must be null or {\"input\": k}");
    const int64_t in = e["input"].get<int64_t>();
    if (in < 1 || in >= ctx.num_inputs())
      ctx.fail("shape", "entry " + S(d) + " refers to missing input " + S(in));
    expect_int_scalar_input(ctx, static_cast<int>(in), "shape");
    k->input[d] = static_cast<int>(in);
    used[in] = true;
  }
  for (int i = 1; i < ctx.num_inputs(); ++i)
    if (!used[i]) ctx.fail("shape", "input " + S(i) + " is not used");
  return k;
}

std::unique_ptr<OpKernel> make_check_and_raise(NodeContext& ctx) {
  ctx.expect_inputs(1, -1);
  ctx.expect_outputs(1);
  expect_same_as_x(ctx);
  auto k = std::make_unique<CheckK>();
  k->msg = ctx.attr_str("msg", "Assertion failed");
  return k;
}

std::unique_ptr<OpKernel> make_alloc(NodeContext& ctx) {
  ctx.expect_inputs(1, -1);
  ctx.expect_outputs(1);
  const int n = ctx.num_inputs() - 1;
  for (int i = 1; i <= n; ++i) expect_int_scalar_input(ctx, i, "inputs");
  const VarSpec& v = ctx.in(0);
  const VarSpec& o = ctx.out(0);
  if (o.static_shape.ndim != n)
    ctx.fail("outputs", "output has rank " + S(o.static_shape.ndim) + " but " + S(n) + " dims are given");
  if (v.static_shape.ndim > n)
    ctx.fail("inputs", "value has rank " + S(v.static_shape.ndim) + ", more than the " + S(n) + " output dims");
  for (int d = 0; d < v.static_shape.ndim; ++d) {
    const int64_t vd = v.static_shape.dims[d], od = o.static_shape.dims[n - v.static_shape.ndim + d];
    if (vd >= 0 && vd != 1 && od >= 0 && vd != od)
      ctx.fail("inputs", "value of static shape " + v.static_shape.str() +
                             " cannot be broadcast to " + o.static_shape.str());
  }
  if (o.dtype == DType::Bool && v.dtype != DType::Bool)
    ctx.fail("outputs", "bool output from " + dts(v.dtype) + " value");
  auto k = std::make_unique<AllocK>();
  k->stat = o.static_shape;
  return k;
}

std::unique_ptr<OpKernel> make_alloc_empty(NodeContext& ctx) {
  ctx.expect_inputs(0, -1);
  ctx.expect_outputs(1);
  for (int i = 0; i < ctx.num_inputs(); ++i) expect_int_scalar_input(ctx, i, "inputs");
  const VarSpec& o = ctx.out(0);
  const std::string want = ctx.attr_str("dtype", dts(o.dtype));
  if (want != dts(o.dtype)) ctx.fail("dtype", "is " + want + " but the output is " + dts(o.dtype));
  if (o.static_shape.ndim != ctx.num_inputs())
    ctx.fail("outputs", "output has rank " + S(o.static_shape.ndim) + " but " +
                            S(ctx.num_inputs()) + " dims are given");
  auto k = std::make_unique<AllocEmptyK>();
  k->stat = o.static_shape;
  return k;
}

std::unique_ptr<OpKernel> make_join(NodeContext& ctx) {
  ctx.expect_outputs(1);
  auto k = std::make_unique<JoinK>();
  k->stat = ctx.out(0).static_shape;
  k->ndim = ctx.out(0).static_shape.ndim;
  if (k->ndim == 0) ctx.fail("outputs", "Join output must have rank >= 1");
  if (ctx.has_attr("axis")) {
    ctx.expect_inputs(1, -1);
    k->first = 0;
    k->axis = normalize_axis(ctx, ctx.attr_int("axis"), k->ndim, "axis");
  } else {
    ctx.expect_inputs(2, -1);
    k->first = 1;
    expect_int_scalar_input(ctx, 0, "inputs");
    if (auto c = ctx.constant_input(0)) k->axis = normalize_axis(ctx, scalar_int(*c), k->ndim, "inputs");
    else k->axis_input = true;
  }
  for (int i = k->first; i < ctx.num_inputs(); ++i) {
    const VarSpec& v = ctx.in(i);
    if (v.static_shape.ndim != k->ndim)
      ctx.fail("inputs", "input " + S(i) + " has rank " + S(v.static_shape.ndim) + ", expected " + S(k->ndim));
    if (ctx.out(0).dtype == DType::Bool && v.dtype != DType::Bool)
      ctx.fail("inputs", "input " + S(i) + " is " + dts(v.dtype) + " but the output is bool");
  }
  return k;
}

std::unique_ptr<OpKernel> make_split(NodeContext& ctx) {
  auto k = std::make_unique<SplitK>();
  const VarSpec& x = ctx.in(0);
  k->ndim = x.static_shape.ndim;
  if (k->ndim == 0) ctx.fail("inputs", "cannot split a 0-d tensor");
  const int64_t n = ctx.attr_int("len_splits");
  if (n < 1 || n > 100000) ctx.fail("len_splits", "must be positive");
  k->n = static_cast<int>(n);
  ctx.expect_outputs(k->n);
  if (ctx.has_attr("axis")) {
    ctx.expect_inputs(2);
    k->axis = normalize_axis(ctx, ctx.attr_int("axis"), k->ndim, "axis");
    k->splits_input = 1;
  } else {
    ctx.expect_inputs(3);
    expect_int_scalar_input(ctx, 1, "inputs");
    if (auto c = ctx.constant_input(1)) k->axis = normalize_axis(ctx, scalar_int(*c), k->ndim, "inputs");
    else k->axis_input = true;
    k->splits_input = 2;
  }
  const VarSpec& sp = ctx.in(k->splits_input);
  if (!is_int_dtype(sp.dtype) || sp.static_shape.ndim != 1)
    ctx.fail("inputs", "splits must be an integer vector");
  if (sp.static_shape.dims[0] >= 0 && sp.static_shape.dims[0] != n)
    ctx.fail("inputs", "splits has length " + S(sp.static_shape.dims[0]) + " but len_splits is " + S(n));
  for (int i = 0; i < k->n; ++i) {
    expect_out(ctx, i, x.dtype, k->ndim);
    k->stat.push_back(ctx.out(i).static_shape);
  }
  return k;
}

std::unique_ptr<OpKernel> make_make_vector(NodeContext& ctx) {
  ctx.expect_inputs(0, -1);
  ctx.expect_outputs(1);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.in(i).static_shape.ndim != 0) ctx.fail("inputs", "input " + S(i) + " must be 0-d");
  const VarSpec& o = ctx.out(0);
  if (o.static_shape.ndim != 1) ctx.fail("outputs", "output must be a vector");
  Shape s;
  s.ndim = 1;
  s.dims[0] = ctx.num_inputs();
  expect_out_shape(ctx, 0, s);
  return std::make_unique<MakeVectorK>();
}

std::unique_ptr<OpKernel> make_arange(NodeContext& ctx) {
  ctx.expect_inputs(3);
  ctx.expect_outputs(1);
  auto k = std::make_unique<ARangeK>();
  for (int i = 0; i < 3; ++i) {
    if (ctx.in(i).static_shape.ndim != 0) ctx.fail("inputs", "input " + S(i) + " must be 0-d");
    if (dtype_is_float(ctx.in(i).dtype)) k->int_inputs = false;
  }
  const VarSpec& o = ctx.out(0);
  if (o.static_shape.ndim != 1 || o.dtype == DType::Bool)
    ctx.fail("outputs", "output must be a numeric vector");
  if (ctx.has_attr("dtype") && ctx.attr_str("dtype") != dts(o.dtype))
    ctx.fail("dtype", "is " + ctx.attr_str("dtype") + " but the output is " + dts(o.dtype));
  k->stat = o.static_shape;
  return k;
}

std::unique_ptr<OpKernel> make_extract_diag(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  auto k = std::make_unique<ExtractDiagK>();
  const int nd = ctx.in(0).static_shape.ndim;
  if (nd < 2) ctx.fail("inputs", "input must have rank >= 2");
  k->offset = ctx.attr_int("offset", 0);
  k->a1 = normalize_axis(ctx, ctx.attr_int("axis1", 0), nd, "axis1");
  k->a2 = normalize_axis(ctx, ctx.attr_int("axis2", 1), nd, "axis2");
  if (k->a1 == k->a2) ctx.fail("axis2", "axis1 and axis2 must differ");
  expect_out(ctx, 0, ctx.in(0).dtype, nd - 1);
  k->stat = ctx.out(0).static_shape;
  return k;
}

}  // namespace ember
