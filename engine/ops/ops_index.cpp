// The Subtensor family: basic indexing (a view), integer-array gathers, and
// their set/increment counterparts (a copy of x with x[idx] updated).
#include <cstring>
#include <memory>
#include <type_traits>

#include "engine/ops/index_fast.hpp"
#include "engine/ops/index_plan.hpp"
#include "engine/ops/ops_common.hpp"

namespace ember {

namespace {

void check_x_out(const NodeContext& ctx, const IndexSpec& s) {
  expect_out(ctx, 0, ctx.in(0).dtype, s.out_ndim);
  expect_out_shape(ctx, 0, s.static_out);
}

// x[idx] for an IndexSpec of slices and integers only: a strided view of x
// into o, built directly (no Resolved): these ops are frequent and cheap.
void basic_view(Frame& f, const IndexSpec& s, const Tensor& x, Tensor& o) {
  o.dtype = x.dtype;
  int64_t off = 0;
  int ax = 0, od = 0;
  auto read = [&](const ScalarRef& r) -> int64_t {
    return r.kind == ScalarRef::Literal ? r.lit : scalar_int(f.in(r.input));
  };
  for (const IdxEntry& e : s.entries) {
    const int64_t dim = x.dim(ax), st = x.strides[ax];
    if (e.kind == IdxEntry::Index) {
      const int64_t v = read(e.value);
      const int64_t n = normalize_index(v, dim);
      if (n < 0) f.fail(index_error_msg(v, ax, dim));
      off += n * st;
    } else {
      const int64_t step = e.step.kind == ScalarRef::None ? 1 : read(e.step);
      if (step == 0) f.fail("slice step cannot be zero");
      std::optional<int64_t> a, b;
      if (e.start.kind != ScalarRef::None) a = read(e.start);
      if (e.stop.kind != ScalarRef::None) b = read(e.stop);
      const SliceRange sr = slice_range(a, b, step, dim);
      off += sr.start * st;
      o.shape.dims[od] = sr.len;
      o.strides[od++] = st * step;
    }
    ++ax;
  }
  for (; ax < x.ndim(); ++ax, ++od) {
    o.shape.dims[od] = x.dim(ax);
    o.strides[od] = x.strides[ax];
  }
  o.shape.ndim = od;
  o.data = static_cast<char*>(x.data) + off * int64_t(dtype_size(x.dtype));
}

// Slices and integers only (no arrays, no newaxis): basic_view applies.
bool is_basic(const IndexSpec& s) {
  if (s.has_array) return false;
  for (const IdxEntry& e : s.entries)
    if (e.kind != IdxEntry::Index && e.kind != IdxEntry::Slice) return false;
  return true;
}

// Basic indexing: a strided view of x.
class SubtensorK : public OpKernel {
 public:
  SubtensorK(IndexSpec s, const Shape& stat) : s_(std::move(s)), stat_(stat) {}
  void run(Frame& f) const override {
    Uninit<Tensor> ob;
    Tensor& o = *ob;
    basic_view(f, s_, f.in(0), o);
    check_out_shape(f, 0, stat_, o.shape);
    f.set_out(0, o);
  }
  int may_view(int) const override { return 0; }

 private:
  IndexSpec s_;
  Shape stat_;
};

// x[idx] with integer arrays: copies each indexed block.
void gather_generic(Frame& f, const IndexSpec& s, const Shape& stat) {
  const Tensor& x = f.in(0);
  Uninit<Resolved> ur;  // every field is set by resolve_index before it is read
  Resolved& r = *ur;
  resolve_index(f, s, x, r);
  check_out_shape(f, 0, stat, r.result);
  Tensor& o = f.alloc_out(0, x.dtype, r.result);
  const int64_t es = int64_t(dtype_size(x.dtype));
  int64_t bst[1][kMaxRank];
  Uninit<Tensor> udst, usrc;
  Tensor &dst = *udst, &src = *usrc;
  dst.set_view(r.basic);
  src.set_view(r.basic);
  r.split_strides(o.strides, dst.strides, bst[0]);
  char* xd = static_cast<char*>(x.data);
  char* od = static_cast<char*>(o.data);
  if (r.basic.ndim() == 0) {  // one element per index position
    auto one = [&](auto tag) {
      using U = decltype(tag);
      U* o = reinterpret_cast<U*>(od);
      const U* xs = reinterpret_cast<const U*>(xd);
      for_each_adv(f, r, 1, bst, [&](int64_t xo, const int64_t* oo) { o[oo[0]] = xs[xo]; });
    };
    switch (es) {
      case 1: return one(uint8_t{});
      case 2: return one(uint16_t{});
      case 4: return one(uint32_t{});
      default: return one(uint64_t{});
    }
  }
  if (r.basic.ndim() == 1 && src.strides[0] == 1 && dst.strides[0] == 1) {  // whole rows
    const size_t row = size_t(r.basic.dim(0)) * es;
    for_each_adv(f, r, 1, bst, [&](int64_t xo, const int64_t* oo) {
      std::memcpy(od + oo[0] * es, xd + xo * es, row);
    });
    return;
  }
  for_each_adv(f, r, 1, bst, [&](int64_t xo, const int64_t* oo) {
    src.data = xd + xo * es;
    dst.data = od + oo[0] * es;
    copy_convert(dst, src);
  });
}

class GatherK : public OpKernel {
 public:
  GatherK(IndexSpec s, const Shape& stat) : s_(std::move(s)), stat_(stat) {}
  void run(Frame& f) const override { gather_generic(f, s_, stat_); }

 private:
  IndexSpec s_;
  Shape stat_;
};

// AdvancedSubtensor1 (x[idx] along axis 0) when x's rows (axes 1..) are
// C-contiguous: an element or memcpy per index; otherwise the generic path.
class Gather1K : public OpKernel {
 public:
  Gather1K(IndexSpec s, const Shape& stat, ConstIndex ci)
      : s_(std::move(s)), stat_(stat), ci_(std::move(ci)) {}
  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    const Tensor& idx = f.in(1);
    int64_t row = 1;
    for (int d = x.ndim() - 1; d >= 1; --d) {
      if (x.dim(d) != 1 && x.strides[d] != row) return gather_generic(f, s_, stat_);
      row *= x.dim(d);
    }
    Uninit<Shape> rsb;
    Shape& rs = *rsb;
    rs.ndim = x.ndim();
    rs.dims[0] = idx.dim(0);
    for (int d = 1; d < x.ndim(); ++d) rs.dims[d] = x.dim(d);
    check_out_shape(f, 0, stat_, rs);
    Tensor& o = f.alloc_out(0, x.dtype, rs);
    const int64_t dim = x.dim(0), xs0 = x.strides[0];
    const int64_t es = int64_t(dtype_size(x.dtype));
    const char* xd = static_cast<const char*>(x.data);
    char* od = static_cast<char*>(o.data);
    fastidx::with_index(f, ci_, 1, dim, [&](auto get, int64_t) {
      if (row != 1) {
        const int64_t rb = row * es;
        auto rows = [&](auto bytes) {  // bytes: rb, or a constant the copy is inlined for
          auto one = [&](int64_t b, int64_t v) {
            if (bytes) std::memcpy(od + b * bytes, xd + v * xs0 * es, size_t(bytes));
          };
          fastidx::each(rs.dims[0], get, one);
        };
        // Short rows (a category table's rows of a few float64s): a call of
        // memcpy per row costs more than the copy.
        switch (rb) {
          case 16: return rows(std::integral_constant<int64_t, 16>{});
          case 24: return rows(std::integral_constant<int64_t, 24>{});
          case 32: return rows(std::integral_constant<int64_t, 32>{});
          case 64: return rows(std::integral_constant<int64_t, 64>{});
          default: return rows(rb);
        }
      }
      auto elems = [&](auto tag) {
        using U = decltype(tag);
        U* op = reinterpret_cast<U*>(od);
        const U* xp = reinterpret_cast<const U*>(xd);
        auto go = [&](auto stride) {  // stride: xs0, or the constant 1
          fastidx::blocked(
              rs.dims[0], get,
              [&](int64_t b, int64_t v0, int64_t v1, int64_t v2, int64_t v3) {
                const U a0 = xp[v0 * stride], a1 = xp[v1 * stride], a2 = xp[v2 * stride], a3 = xp[v3 * stride];
                op[b] = a0, op[b + 1] = a1, op[b + 2] = a2, op[b + 3] = a3;
              },
              [&](int64_t b, int64_t v) { op[b] = xp[v * stride]; });
        };
        if (xs0 == 1) go(std::integral_constant<int64_t, 1>{});
        else go(xs0);
      };
      switch (es) {
        case 1: return elems(uint8_t{});
        case 2: return elems(uint16_t{});
        case 4: return elems(uint32_t{});
        default: return elems(uint64_t{});
      }
    });
  }

 private:
  IndexSpec s_;
  Shape stat_;
  ConstIndex ci_;
};

// Output 0 as a copy of x, or x's own buffer when the planner handed it over
// (may_overwrite): x then dies here, and its values already are the copy.
Tensor& out_as_copy(Frame& f, const Tensor& x) {
  Tensor& o = f.alloc_out(0, x.dtype, x.shape);
  if (o.data != x.data) copy_convert(o, x);
  return o;
}

// out = x; out[idx] = y, or += y (sequentially, so duplicates accumulate like
// np.add.at), or with ignore_duplicates out[idx] = x[idx] + y (last wins).
class IncK : public OpKernel {
 public:
  enum Mode { Inc, Set, IncNoDup };
  IncK(IndexSpec s, Mode m) : s_(std::move(s)), mode_(m), basic_(is_basic(s_)) {}
  // AdvancedIncSubtensor1: one index vector (input 2) along axis 0.
  IncK(IndexSpec s, Mode m, ConstIndex ci) : s_(std::move(s)), mode_(m), one_(true), ci_(std::move(ci)) {
    if (mode_ == Inc) ci_.prepare_bins();
  }
  // x is a constant of zero bytes (a gradient's zeros): the output starts
  // as zeros written, not copied.
  void zero_x(const NodeContext& ctx) {
    const std::optional<Tensor> c = ctx.constant_input(0);
    if (!c) return;
    const auto* b = static_cast<const unsigned char*>(c->data);
    const size_t n = static_cast<size_t>(c->size()) * dtype_size(c->dtype);
    zero_x_ = n > 0 && b[0] == 0 && std::memcmp(b, b + 1, n - 1) == 0;
  }
  int may_overwrite(int) const override { return 0; }

  Tensor& out_of(Frame& f, const Tensor& x) const {
    if (!zero_x_) return out_as_copy(f, x);
    Tensor& o = f.alloc_out(0, x.dtype, x.shape);
    if (o.data != x.data) fill_zero(o);
    return o;
  }

  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    const Tensor& y = f.in(1);
    if (one_ && x.ndim() == 1 && y.dtype == x.dtype && y.ndim() <= 1) return run1(f, x, y);
    if (one_ && mode_ != IncNoDup && x.ndim() == 2 && y.dtype == x.dtype && rows1(f, x, y)) return;
    if (basic_ && y.dtype == x.dtype) return run_basic(f, x, y);
    Tensor& o = out_of(f, x);
    Uninit<Resolved> ur;  // every field is set by resolve_index before it is read
    Resolved& r = *ur;
    // y converted to x's dtype when they differ.
    const bool conv = y.dtype != x.dtype;
    void* ybuf = resolve_index(f, s_, o, r, conv ? y.size() * dtype_size(x.dtype) : 0);
    Uninit<Tensor> uyv;
    Tensor& yv = *uyv;
    if (!broadcast_view(y, r.result, yv))
      f.fail("shape mismatch: value array of shape " + y.shape.str() +
             " could not be broadcast to indexing result of shape " + r.result.str());
    if (conv) {
      Tensor yc = Tensor::contiguous(x.dtype, y.shape, ybuf);
      copy_convert(yc, y);
      broadcast_view(yc, r.result, yv);
    }
    if (mode_ == IncNoDup) return run_nodup(f, x, o, r, yv);
    dtype_dispatch(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      apply<T>(f, o, r, yv, mode_ == Set);
    });
  }

 private:
  template <class T>
  static void apply(Frame& f, Tensor& o, const Resolved& r, const Tensor& yv, bool set) {
    int64_t bst[2][kMaxRank];
    Uninit<Tensor> udst, usrc;
    Tensor &dst = *udst, &src = *usrc;
    dst.set_view(r.basic);
    src.set_view(r.basic);
    src.dtype = yv.dtype;
    r.split_strides(yv.strides, src.strides, bst[1]);
    for (int d = 0; d < r.B.ndim; ++d) bst[0][d] = 0;  // unused: o offsets come from idx
    T* od = o.ptr<T>();
    const T* yd = yv.ptr<const T>();
    if (r.basic.ndim() == 0 && !set && r.nadv == 1 && r.B.ndim == 1) {
      // The gradient of a gather (`out[idx] += y`, idx often sorted): a run
      // of equal indices accumulates in a register, in the same order as
      // element-by-element updates through memory (same bits), without a
      // store-to-load round trip per element.
      const int64_t* ip = r.adv_ptr[0];
      const int64_t ist = r.adv_bst[0][0], dim = r.adv_dim[0], ts = r.adv_tstride[0], ys = bst[1][0];
      const int64_t n = r.B.dims[0];
      T* base = od + r.base_off;
      int64_t cur = -1;
      T acc{};
      for (int64_t b = 0; b < n; ++b, ip += ist) {
        const int64_t v = normalize_index(*ip, dim);
        if (v < 0) [[unlikely]] {
          if (cur >= 0) base[cur * ts] = acc;
          f.fail(index_error_msg(*ip, r.adv_axis[0], dim));
        }
        if (v != cur) {
          if (cur >= 0) base[cur * ts] = acc;
          cur = v;
          acc = base[v * ts];
        }
        acc += yd[b * ys];
      }
      if (cur >= 0) base[cur * ts] = acc;
      return;
    }
    if (r.basic.ndim() == 0) {
      if (set)
        for_each_adv(f, r, 2, bst, [&](int64_t xo, const int64_t* oo) { od[xo] = yd[oo[1]]; });
      else
        for_each_adv(f, r, 2, bst, [&](int64_t xo, const int64_t* oo) { od[xo] += yd[oo[1]]; });
      return;
    }
    if (r.basic.ndim() == 1) {  // rows: a plain strided loop
      const int64_t n = r.basic.dim(0), ds = dst.strides[0], ss = src.strides[0];
      if (ds == 1 && ss == 1 && !set && r.nadv == 1 && r.B.ndim == 1) {
        // Rows of a table picked by one index vector (an embedding's or a
        // category table's gradient): each row added in index order, as below.
        const int64_t* ip = r.adv_ptr[0];
        const int64_t ist = r.adv_bst[0][0], dim = r.adv_dim[0], ts = r.adv_tstride[0], ys = bst[1][0];
        T* base = od + r.base_off;
        // Short rows (factor or category tables of 2-4 columns) with their
        // length a constant: a vectorized loop and its remainder cost more
        // than the row. The same additions in the same order.
        auto rows = [&](auto len) {
          const int64_t w = len.value > 0 ? int64_t{len.value} : n;
          for (int64_t b = 0; b < r.B.dims[0]; ++b, ip += ist) {
            const int64_t v = normalize_index(*ip, dim);
            if (v < 0) [[unlikely]]
              f.fail(index_error_msg(*ip, r.adv_axis[0], dim));
            T* d = base + v * ts;
            const T* s = yd + b * ys;
            for (int64_t k = 0; k < w; ++k) d[k] += s[k];
          }
        };
        switch (n) {
          case 2: return rows(std::integral_constant<int, 2>{});
          case 3: return rows(std::integral_constant<int, 3>{});
          case 4: return rows(std::integral_constant<int, 4>{});
          default: return rows(std::integral_constant<int, 0>{});
        }
      }
      for_each_adv(f, r, 2, bst, [&](int64_t xo, const int64_t* oo) {
        T* d = od + xo;
        const T* s = yd + oo[1];
        if (set)
          for (int64_t k = 0; k < n; ++k) d[k * ds] = s[k * ss];
        else
          for (int64_t k = 0; k < n; ++k) d[k * ds] += s[k * ss];
      });
      return;
    }
    for_each_adv(f, r, 2, bst, [&](int64_t xo, const int64_t* oo) {
      T* d = od + xo;
      const T* s = yd + oo[1];
      if (set)
        zip_each(dst.shape, d, dst.strides, s, src.strides, [](T& a, const T& b) { a = b; });
      else
        zip_each(dst.shape, d, dst.strides, s, src.strides, [](T& a, const T& b) { a += b; });
    });
  }

  // Slices and integers, y of x's dtype: the view of the output updated in
  // place, each element once in the view's order (as the general path).
  void run_basic(Frame& f, const Tensor& x, const Tensor& y) const {
    Tensor& o = out_of(f, x);
    Uninit<Tensor> vb;
    Tensor& v = *vb;
    basic_view(f, s_, o, v);
    Uninit<Tensor> ub;
    Tensor& yb = *ub;
    if (!broadcast_view(y, v.shape, yb))
      f.fail("shape mismatch: value array of shape " + y.shape.str() +
             " could not be broadcast to indexing result of shape " + v.shape.str());
    dtype_dispatch(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* d = v.ptr<T>();
      const T* s = yb.ptr<const T>();
      if (mode_ == Set) zip_each(v.shape, d, v.strides, s, yb.strides, [](T& a, const T& b) { a = b; });
      else zip_each(v.shape, d, v.strides, s, yb.strides, [](T& a, const T& b) { a += b; });
    });
  }

  // One index vector into the rows of a matrix x, y one row per index with
  // its row contiguous (an embedding's or factor table's gradient): each
  // row added (or set) in index order, as the general path does, with the
  // index read as run1 reads it. Short rows have their length a constant
  // (a loop and its remainder cost more than a row of 2-4). False, having
  // done nothing, for other layouts.
  bool rows1(Frame& f, const Tensor& x, const Tensor& y) const {
    const int64_t n = f.in(2).dim(0), cols = x.dim(1);
    if (y.ndim() != 2 || y.dim(0) != n || y.dim(1) != cols || (cols > 1 && y.strides[1] != 1)) return false;
    Tensor& o = out_of(f, x);
    if (o.ndim() != 2 || (cols > 1 && o.strides[1] != 1)) [[unlikely]]
      return false;  // not reached: outputs are allocated C-contiguous
    const int64_t dim = x.dim(0), os = o.strides[0], ys = y.strides[0];
    const bool set = mode_ == Set;
    dtype_dispatch(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* base = o.ptr<T>();
      const T* yd = y.ptr<const T>();
      fastidx::with_index(f, ci_, 2, dim, [&](auto get, int64_t m) {
        auto rows = [&](auto len) {
          const int64_t w = len.value > 0 ? int64_t{len.value} : cols;
          auto one = [&](int64_t b, int64_t v) {
            T* d = base + v * os;
            const T* s = yd + b * ys;
            if (set)
              for (int64_t k = 0; k < w; ++k) d[k] = s[k];
            else
              for (int64_t k = 0; k < w; ++k) d[k] += s[k];
          };
          fastidx::each(m, get, one);
        };
        switch (cols) {
          case 2: return rows(std::integral_constant<int, 2>{});
          case 3: return rows(std::integral_constant<int, 3>{});
          case 4: return rows(std::integral_constant<int, 4>{});
          default: return rows(std::integral_constant<int, 0>{});
        }
      });
    });
    return true;
  }

  // One index vector into a vector x, y of x's dtype: the index read in its
  // own dtype (or the load-time ConstIndex), the bounds check in the loop.
  void run1(Frame& f, const Tensor& x, const Tensor& y) const {
    const int64_t n = f.in(2).dim(0);
    int64_t ys = 0;
    if (y.ndim() == 1 && y.dim(0) != 1) {
      if (y.dim(0) != n) {
        Shape res;
        res.ndim = 1;
        res.dims[0] = n;
        f.fail("shape mismatch: value array of shape " + y.shape.str() +
               " could not be broadcast to indexing result of shape " + res.str());
      }
      ys = y.strides[0];
    }
    Tensor& o = out_of(f, x);
    const int64_t dim = x.dim(0);
    dtype_dispatch(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* base = o.ptr<T>();
      const T* yd = y.ptr<const T>();
      fastidx::with_index(f, ci_, 2, dim, [&](auto get, int64_t n) {
        const bool constant = ci_.usable(dim);
        if (mode_ == Inc && constant && !ci_.bin_groups().empty()) return add_by_bins(base, yd, ys);
        if (mode_ == Set || (constant && !ci_.runs())) {
          // In order through memory: last write wins / sequential sums.
          if (mode_ == Set) fastidx::each(n, get, [&](int64_t b, int64_t v) { base[v] = yd[b * ys]; });
          else fastidx::each(n, get, [&](int64_t b, int64_t v) { base[v] += yd[b * ys]; });
          return;
        }
        // A run of equal indices (idx is often sorted) accumulates in a
        // register, in the same order as element-by-element updates through
        // memory (same bits), without a store-to-load round trip per element.
        int64_t cur = -1;
        T acc{};
        for (int64_t b = 0; b < n; ++b) {
          const int64_t v = get(b);
          if (v != cur) {
            if (cur >= 0) base[cur] = acc;
            cur = v;
            acc = base[v];
          }
          acc += yd[b * ys];
        }
        if (cur >= 0) base[cur] = acc;
      });
    });
  }

  // base[idx[b]] += y[b] for every b, bin by bin (ConstIndex::prepare_bins).
  template <class T>
  void add_by_bins(T* base, const T* yd, int64_t ys) const {
    const uint32_t* pos = ci_.bin_pos();
    for (const ConstIndex::BinGroup& g : ci_.bin_groups()) {
      const uint32_t* p = pos + g.off;
      T a[4] = {};
      for (uint32_t q = 0; q < g.nbins; ++q) a[q] = base[g.bin[q]];
      T a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];  // four chains in registers
      for (uint32_t t = 0; t < g.common; ++t, p += 4) {
        a0 += yd[p[0] * ys];
        a1 += yd[p[1] * ys];
        a2 += yd[p[2] * ys];
        a3 += yd[p[3] * ys];
      }
      a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
      for (uint32_t q = 0; q < g.nbins; ++q) {
        T v = a[q];
        for (uint32_t t = 0; t < g.tail[q]; ++t) v += yd[*p++ * ys];
        base[g.bin[q]] = v;
      }
    }
  }

  // NumPy's buffered `out[idx] += y`: tmp = x[idx]; tmp += y; out[idx] = tmp.
  void run_nodup(Frame& f, const Tensor& x, Tensor& o, const Resolved& r,
                 const Tensor& yv) const {
    dtype_dispatch(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      std::unique_ptr<T[]> tmp(new T[static_cast<size_t>(r.result.size())]);
      Tensor tv = Tensor::contiguous(x.dtype, r.result, tmp.get());
      // Gather from o (still equal to x) into tmp, add y, then set.
      int64_t bst[2][kMaxRank];
      Tensor tb = r.basic;
      r.split_strides(tv.strides, tb.strides, bst[0]);
      Tensor ys = r.basic;
      r.split_strides(yv.strides, ys.strides, bst[1]);
      T* od = o.ptr<T>();
      const T* yd = yv.ptr<const T>();
      for_each_adv(f, r, 2, bst, [&](int64_t xo, const int64_t* oo) {
        zip_each(tb.shape, tmp.get() + oo[0], tb.strides, od + xo, r.basic.strides,
                 [](T& a, const T& b) { a = b; });
        zip_each(tb.shape, tmp.get() + oo[0], tb.strides, yd + oo[1], ys.strides,
                 [](T& a, const T& b) { a += b; });
      });
      for_each_adv(f, r, 2, bst, [&](int64_t xo, const int64_t* oo) {
        zip_each(tb.shape, od + xo, r.basic.strides, tmp.get() + oo[0], tb.strides,
                 [](T& a, const T& b) { a = b; });
      });
    });
  }

  IndexSpec s_;
  Mode mode_;
  bool basic_ = false;  // is_basic(s_)
  bool one_ = false;
  bool zero_x_ = false;  // zero_x()
  ConstIndex ci_;
};

void check_inc_y(const NodeContext& ctx, const IndexSpec& s, bool set) {
  const VarSpec& x = ctx.in(0);
  const VarSpec& y = ctx.in(1);
  if (y.static_shape.ndim > s.out_ndim)
    ctx.fail("inputs", "y has rank " + std::to_string(y.static_shape.ndim) +
                           " but x[idx] has rank " + std::to_string(s.out_ndim));
  // An integer y of another width or sign is cast to x's dtype, as PyTensor's
  // kernels do (bincount adds an int8 1 to an unsigned count); a y that would
  // make x a float, or a wider float, is refused as PyTensor refuses it.
  if (!set && dtype_upcast(x.dtype, y.dtype) != x.dtype && (dtype_is_float(x.dtype) || dtype_is_float(y.dtype)))
    ctx.fail("inputs", "incrementing " + std::string(dtype_name(x.dtype)) + " x by " +
                           std::string(dtype_name(y.dtype)) + " y would need a wider result");
  const int off = s.out_ndim - y.static_shape.ndim;
  for (int d = 0; d < y.static_shape.ndim; ++d) {
    const int64_t yd = y.static_shape.dims[d], rd = s.static_out.dims[off + d];
    if (yd >= 0 && yd != 1 && rd >= 0 && yd != rd)
      ctx.fail("inputs", "y of static shape " + y.static_shape.str() +
                             " cannot be broadcast to x[idx] of static shape " + s.static_out.str());
  }
  expect_out(ctx, 0, x.dtype, x.static_shape.ndim);
  expect_out_shape(ctx, 0, x.static_shape);
}

}  // namespace

std::unique_ptr<OpKernel> make_subtensor(NodeContext& ctx) {
  ctx.expect_inputs(1, -1);
  ctx.expect_outputs(1);
  IndexSpec s = IndexSpec::parse(ctx, 1, false);
  check_x_out(ctx, s);
  return std::make_unique<SubtensorK>(std::move(s), ctx.out(0).static_shape);
}

std::unique_ptr<OpKernel> make_advanced_subtensor(NodeContext& ctx) {
  ctx.expect_inputs(1, -1);
  ctx.expect_outputs(1);
  IndexSpec s = IndexSpec::parse(ctx, 1, true);
  check_x_out(ctx, s);
  return std::make_unique<GatherK>(std::move(s), ctx.out(0).static_shape);
}

std::unique_ptr<OpKernel> make_advanced_subtensor1(NodeContext& ctx) {
  ctx.expect_inputs(2);
  ctx.expect_outputs(1);
  IndexSpec s = IndexSpec::gather0(ctx, 1);
  check_x_out(ctx, s);
  return std::make_unique<Gather1K>(std::move(s), ctx.out(0).static_shape, ConstIndex::make(ctx, 1));
}

std::unique_ptr<OpKernel> make_inc_subtensor(NodeContext& ctx) {
  ctx.expect_inputs(2, -1);
  ctx.expect_outputs(1);
  IndexSpec s = IndexSpec::parse(ctx, 2, false);
  const bool set = ctx.attr_bool("set_instead_of_inc", false);
  check_inc_y(ctx, s, set);
  auto k = std::make_unique<IncK>(std::move(s), set ? IncK::Set : IncK::Inc);
  k->zero_x(ctx);
  return k;
}

std::unique_ptr<OpKernel> make_advanced_inc_subtensor(NodeContext& ctx) {
  ctx.expect_inputs(2, -1);
  ctx.expect_outputs(1);
  IndexSpec s = IndexSpec::parse(ctx, 2, true);
  const bool set = ctx.attr_bool("set_instead_of_inc", false);
  const bool nodup = ctx.attr_bool("ignore_duplicates", false);
  check_inc_y(ctx, s, set);
  auto k = std::make_unique<IncK>(std::move(s), set ? IncK::Set : nodup ? IncK::IncNoDup : IncK::Inc);
  k->zero_x(ctx);
  return k;
}

std::unique_ptr<OpKernel> make_advanced_inc_subtensor1(NodeContext& ctx) {
  ctx.expect_inputs(3);
  ctx.expect_outputs(1);
  IndexSpec s = IndexSpec::gather0(ctx, 2);
  const bool set = ctx.attr_bool("set_instead_of_inc", false);
  check_inc_y(ctx, s, set);
  auto k = std::make_unique<IncK>(std::move(s), set ? IncK::Set : IncK::Inc, ConstIndex::make(ctx, 2));
  k->zero_x(ctx);
  return k;
}

}  // namespace ember
