// CAReduce and its named forms (Sum, Prod, Max, Min, All, Any).
// Summation order: engine/ops/reduce_tree.hpp. Two loop shapes compute the same
// tree: "rows" (one output at a time, reduced elements gathered in blocks)
// and "columns" (a tile of outputs along the innermost kept axis at once,
// for reductions over outer axes); the faster one for the input's strides
// is picked per call. Many outputs of a few elements each skip the row
// tasks ("short rows"), and a dense (R, C) block reduced over its rows into
// at most 16 columns takes every column's lanes at once ("narrow columns").
// All give the same bits.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"
#include "engine/ops/reduce_tree.hpp"
#include "interp/scalar_op.hpp"

namespace ember {
namespace {

using reduce::Rop;
using reduce::Walker;
using reduce::kChunk;
using reduce::kLeaf;
using reduce::kLanes;

constexpr int64_t kTile = 256;  // outputs per column-mode tile (2 KB rows of float64)
constexpr int64_t kMinColumns = 8;  // fewer outputs: rows mode

struct Axes {
  int nd = 0;
  int64_t dims[kMaxRank], strides[kMaxRank];  // [0, nd) used; not zeroed per call
  void push(int64_t d, int64_t s) {  // drops size-1 axes, merges contiguous ones
    if (d == 1) return;
    if (nd > 0 && strides[nd - 1] == s * d) {
      dims[nd - 1] *= d;
      strides[nd - 1] = s;
      return;
    }
    dims[nd] = d;
    strides[nd] = s;
    ++nd;
  }
  Walker walker() const {
    Walker w;
    w.nd = nd;
    for (int i = 0; i < nd; ++i) {
      w.dims[i] = dims[i];
      w.strides[i] = strides[i];
    }
    return w;
  }
};

struct Plan {
  Axes kept, red, outer;  // outer: kept without its last axis (column mode)
  int64_t O = 1, R = 1, nc = 1;
  bool column = false;
  int64_t jdim = 1, sk = 0;
  int64_t threshold = reduce::kParallelMin;  // serial below this many elements
};

template <Rop op, class In, class A>
struct RowTask {
  const Plan& p;
  const In* x;
  A* partials;

  void operator()(int64_t t) const {
    const int64_t o = t / p.nc, c = t % p.nc;
    Walker kw = p.kept.walker();
    kw.seek(o);
    const In* base = x + kw.off;
    const int64_t lo = c * kChunk, n = std::min(kChunk, p.R - lo);
    A v;
    if constexpr (std::is_same_v<In, A>) {
      if (p.red.nd == 1 && p.red.strides[0] == 1) {
        partials[t] = reduce::tree_contiguous<op, A>(base + lo, n);  // tree(n) does not depend on lo
        return;
      }
    }
    Walker rw = p.red.walker();
    rw.seek(lo);
    A buf[kLeaf];
    auto lf = [&](int64_t, int64_t m) {
      rw.gather(base, m, buf);
      return reduce::leaf<op, A>(buf, m);
    };
    v = reduce::tree<op, A>(lo, n, lf);
    partials[t] = v;
  }
};

template <Rop op, class In, class A>
struct ColumnTask {
  const Plan& p;
  const In* x;
  A* partials;

  struct Rows {  // yields the rows of one tile in order
    Walker rw;
    const In* base;
    int64_t sk, nj;
    A buf[kTile];
    const A* next() {
      const In* row = base + rw.off;
      rw.next();
      if constexpr (std::is_same_v<In, A>)
        if (sk == 1) return row;
      for (int64_t j = 0; j < nj; ++j) buf[j] = reduce::convert<A>(row[j * sk]);
      return buf;
    }
  };

  static void leaf(Rows& rows, int64_t n, A* out) {
    const int64_t nj = rows.nj;
    const A* row = rows.next();
    if (n < kLanes) {
      for (int64_t j = 0; j < nj; ++j) out[j] = row[j];
      for (int64_t i = 1; i < n; ++i) {
        row = rows.next();
        for (int64_t j = 0; j < nj; ++j) out[j] = reduce::combine<op>(out[j], row[j]);
      }
      return;
    }
    A acc[kLanes][kTile];
    for (int k = 0; k < kLanes; ++k) {
      if (k) row = rows.next();
      for (int64_t j = 0; j < nj; ++j) acc[k][j] = row[j];
    }
    const int64_t end = n - n % kLanes;
    int64_t i = kLanes;
    for (; i < end; i += kLanes)
      for (int k = 0; k < kLanes; ++k) {
        row = rows.next();
        for (int64_t j = 0; j < nj; ++j) acc[k][j] = reduce::combine<op>(acc[k][j], row[j]);
      }
    for (int64_t j = 0; j < nj; ++j) out[j] = reduce::combine_lanes<op>(&acc[0][j], kTile);
    for (; i < n; ++i) {
      row = rows.next();
      for (int64_t j = 0; j < nj; ++j) out[j] = reduce::combine<op>(out[j], row[j]);
    }
  }

  static void tree(Rows& rows, int64_t n, A* out) {
    if (n <= kLeaf) return leaf(rows, n, out);
    const int64_t n2 = reduce::split_point(n);
    tree(rows, n2, out);
    A tmp[kTile];
    tree(rows, n - n2, tmp);
    for (int64_t j = 0; j < rows.nj; ++j) out[j] = reduce::combine<op>(out[j], tmp[j]);
  }

  void operator()(int64_t t) const {
    const int64_t ntiles = (p.jdim + kTile - 1) / kTile;
    const int64_t c = t % p.nc;
    const int64_t tile = (t / p.nc) % ntiles;
    const int64_t q = t / p.nc / ntiles;
    Walker ow = p.outer.walker();
    ow.seek(q);
    const int64_t j0 = tile * kTile;
    Rows rows;
    rows.rw = p.red.walker();
    const int64_t lo = c * kChunk, n = std::min(kChunk, p.R - lo);
    rows.rw.seek(lo);
    rows.base = x + ow.off + j0 * p.sk;
    rows.sk = p.sk;
    rows.nj = std::min(kTile, p.jdim - j0);
    A out[kTile];
    tree(rows, n, out);
    for (int64_t j = 0; j < rows.nj; ++j) partials[(q * p.jdim + j0 + j) * p.nc + c] = out[j];
  }
};

template <class Task>
void run_tasks(const Task& task, int64_t ntasks, int64_t work_per_task, int64_t threshold) {
  if (ntasks * work_per_task < threshold || ntasks == 1) {
    for (int64_t t = 0; t < ntasks; ++t) task(t);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work_per_task));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, ntasks, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t < r.end(); ++t) task(t);
                    });
}

template <Rop op, class In, class A>
void reduce_typed(const Plan& p, const Tensor& x, A* partials) {
  const In* xp = x.ptr<In>();
  if (p.column) {
    const int64_t ntiles = (p.jdim + kTile - 1) / kTile;
    const int64_t nouter = p.O / p.jdim;
    run_tasks(ColumnTask<op, In, A>{p, xp, partials}, nouter * ntiles * p.nc,
              std::min(kChunk, p.R) * std::min(kTile, p.jdim), p.threshold);
  } else {
    run_tasks(RowTask<op, In, A>{p, xp, partials}, p.O * p.nc, std::min(kChunk, p.R), p.threshold);
  }
}

template <Rop op, class A, class Out>
void finish(const Plan& p, const A* partials, Out* y) {
  for (int64_t o = 0; o < p.O; ++o) {
    const A v = p.nc == 1 ? partials[o] : reduce::reduce_contiguous<op, A>(partials + o * p.nc, p.nc);
    y[o] = reduce::convert<Out>(v);
  }
}

// Many outputs of at most one leaf each along the inner axis (logsumexp's
// Max and Sum over a mixture's components): RowTask's single leaf and
// finish's conversion per output, without a walker per output or scratch.
// Only for input, accumulator and output of one dtype (A): one instance per
// op and dtype, not per dtype triple.
template <Rop op, class A>
void reduce_short_rows(const Plan& p, const Tensor& x, Tensor& y) {
  const A* xp = x.ptr<A>();
  A* yp = y.ptr<A>();
  const int64_t R = p.R, sr = p.red.strides[0];
  Walker kw = p.kept.walker();
  const bool flat = p.kept.nd == 1;  // rows at i * ks: no walker
  const int64_t ks = p.kept.strides[0];
  auto row_at = [&](int64_t i) {
    if (flat) return xp + i * ks;
    const A* r = xp + kw.off;
    kw.next();
    return r;
  };
  if (flat && sr == 1 && ks == R && R <= kLeaf) return reduce::reduce_rows<op, A>(xp, p.O, R, yp);
  if (R < reduce::kLanes) {  // leaf's fold from the first element, read in place
    for (int64_t i = 0; i < p.O; ++i) {
      const A* row = row_at(i);
      A v = row[0];
      for (int64_t k = 1; k < R; ++k) v = reduce::combine<op>(v, row[k * sr]);
      yp[i] = v;
    }
    return;
  }
  A buf[kLeaf];
  for (int64_t i = 0; i < p.O; ++i) {
    const A* row = row_at(i);
    for (int64_t k = 0; k < R; ++k) buf[k] = row[k * sr];
    yp[i] = reduce::leaf<op, A>(buf, R);
  }
}

using ShortRowsFn = void (*)(const Plan&, const Tensor&, Tensor&);

// Few outputs along a contiguous inner axis, each over the rows of a dense
// (R, C) block (a mixture's (600, 3) summed over axis 0): every column's
// tree at once. Lane k of column c in a leaf (its rows k, k+8, ...) lives at
// acc[k * C + c], so 8 consecutive rows join the lanes as one contiguous run
// of 8C values. The same leaves and combinations as rows mode, same bits.
constexpr int64_t kNarrowMax = 16;  // columns
// CC > 0: the column count known at compile time (2, 3, 4 or 8: a mixture's
// components), so the loop over a leaf's 8 C lanes is unrolled (and up to 4
// columns held in registers); 0: C at run time.
template <Rop op, class A, int CC = 0>
void reduce_narrow_columns(Frame& f, const A* x, int64_t R, int64_t C_, A* y) {
  const int64_t C = CC > 0 ? CC : C_;
  constexpr int kMaxLeaves = static_cast<int>(kChunk / (kLeaf / 2)) + 1;
  int16_t len[kMaxLeaves];
  int count = 0;
  reduce::leaf_lengths(R, len, count);
  A* val = static_cast<A*>(f.scratch(sizeof(A) * static_cast<size_t>(count * C)));
  using reduce::combine;
  const A* b = x;
  for (int l = 0; l < count; ++l) {
    const int64_t L = len[l];
    A* out = val + l * C;
    if (L < kLanes) {
      for (int64_t c = 0; c < C; ++c) out[c] = b[c];
      for (int64_t i = 1; i < L; ++i)
        for (int64_t c = 0; c < C; ++c) out[c] = combine<op>(out[c], b[i * C + c]);
    } else {
      A acc[kLanes * kNarrowMax];
      const int64_t W = kLanes * C, end = L - L % kLanes;
      for (int64_t q = 0; q < W; ++q) acc[q] = b[q];
      int64_t i = kLanes;
      for (; i < end; i += kLanes) {
        const A* blk = b + i * C;
        for (int64_t q = 0; q < W; ++q) acc[q] = combine<op>(acc[q], blk[q]);
      }
      for (int64_t c = 0; c < C; ++c) out[c] = reduce::combine_lanes<op>(acc + c, C);
      for (; i < L; ++i)
        for (int64_t c = 0; c < C; ++c) out[c] = combine<op>(out[c], b[i * C + c]);
    }
    b += L * C;
  }
  for (int64_t c = 0; c < C; ++c) {
    int k = 0;
    auto lf = [&](int64_t, int64_t) { return val[(k++) * C + c]; };
    y[c] = reduce::tree<op, A>(0, R, lf);
  }
}
using NarrowFn = void (*)(Frame&, const void*, int64_t, int64_t, void*);
template <Rop op, class A>
void narrow_columns_fn(Frame& f, const void* x, int64_t R, int64_t C, void* y) {
  const A* a = static_cast<const A*>(x);
  A* b = static_cast<A*>(y);
  switch (C) {
    case 2: return reduce_narrow_columns<op, A, 2>(f, a, R, C, b);
    case 3: return reduce_narrow_columns<op, A, 3>(f, a, R, C, b);
    case 4: return reduce_narrow_columns<op, A, 4>(f, a, R, C, b);
    case 8: return reduce_narrow_columns<op, A, 8>(f, a, R, C, b);
    default: return reduce_narrow_columns<op, A>(f, a, R, C, b);
  }
}

template <Rop op, class In, class A>
void reduce_all(Frame& f, const Plan& p, const Tensor& x, Tensor& y) {
  A* partials = static_cast<A*>(f.scratch(sizeof(A) * static_cast<size_t>(p.O * p.nc)));
  reduce_typed<op, In, A>(p, x, partials);
  dtype_dispatch(y.dtype, [&](auto o) {
    using Out = decltype(o);
    finish<op, A, Out>(p, partials, y.ptr<Out>());
  });
}

// Above this many elements a strided or converting small reduction takes the
// general path (the fast path gathers into a stack buffer of this size).
constexpr int64_t kSmall = 256;

// One output over n elements x[0], x[st], ...: the general path's RowTask and
// finish for O == 1, nc == 1 without the plan, walkers and scratch. Gathering
// into a buffer and running tree_contiguous on it visits the same leaves and
// combinations as RowTask's gathering tree, so the bits are the same.
template <Rop op, class In, class A>
void reduce_small(const void* xv, int64_t n, int64_t st, Tensor& y) {
  const In* x = static_cast<const In*>(xv);
  A v;
  if constexpr (std::is_same_v<In, A>) {
    if (st == 1) {
      // tree_contiguous's own first case, inlined (it is not, and n is small)
      v = n <= kLeaf ? reduce::leaf<op, A>(x, n) : reduce::tree_contiguous<op, A>(x, n);
    } else {
      A buf[kSmall];
      for (int64_t i = 0; i < n; ++i) buf[i] = x[i * st];
      v = reduce::tree_contiguous<op, A>(buf, n);
    }
  } else {
    A buf[kSmall];
    for (int64_t i = 0; i < n; ++i) buf[i] = reduce::convert<A>(x[i * st]);
    v = reduce::tree_contiguous<op, A>(buf, n);
  }
  dtype_dispatch(y.dtype, [&](auto o) {
    using Out = decltype(o);
    *y.ptr<Out>() = reduce::convert<Out>(v);
  });
}

using SmallFn = void (*)(const void*, int64_t, int64_t, Tensor&);

template <class F>
void with_op(Rop op, F&& fn) {
  switch (op) {
    case Rop::Add: return fn(std::integral_constant<Rop, Rop::Add>{});
    case Rop::Mul: return fn(std::integral_constant<Rop, Rop::Mul>{});
    case Rop::Max: return fn(std::integral_constant<Rop, Rop::Max>{});
    case Rop::Min: return fn(std::integral_constant<Rop, Rop::Min>{});
    case Rop::And: return fn(std::integral_constant<Rop, Rop::And>{});
    case Rop::Or: return fn(std::integral_constant<Rop, Rop::Or>{});
    case Rop::MulNZ: return fn(std::integral_constant<Rop, Rop::MulNZ>{});
  }
}

const char* rop_name(Rop op) {
  switch (op) {
    case Rop::Add: return "sum";
    case Rop::Mul: return "prod";
    case Rop::Max: return "maximum";
    case Rop::Min: return "minimum";
    case Rop::And: return "all";
    case Rop::Or: return "any";
    case Rop::MulNZ: return "prod";
  }
  return "?";
}

// The small path's function for (op, input dtype, accumulator), picked at
// load so a call does not dispatch on them again.
// direct: the input is the accumulator type, so a contiguous input needs no
// buffer and may take the small path up to one chunk.
SmallFn pick_small(Rop rop, DType in_dt, DType acc, bool& direct) {
  SmallFn fn = nullptr;
  with_op(rop, [&](auto opc) {
    constexpr Rop op = decltype(opc)::value;
    dtype_dispatch(in_dt, [&](auto in) {
      using In = decltype(in);
      if constexpr (op == Rop::And || op == Rop::Or) {
        fn = &reduce_small<op, In, bool>;
        direct = std::is_same_v<In, bool>;
      } else if constexpr (op == Rop::Max || op == Rop::Min) {
        fn = &reduce_small<op, In, In>;
        direct = true;
      } else if (acc == DType::Float64) {
        fn = &reduce_small<op, In, double>;
        direct = std::is_same_v<In, double>;
      } else if (acc == DType::Float32) {
        fn = &reduce_small<op, In, float>;
        direct = std::is_same_v<In, float>;
      } else {
        fn = &reduce_small<op, In, int64_t>;
        direct = std::is_same_v<In, int64_t>;
      }
    });
  });
  return fn;
}

// reduce_narrow_columns for (op, input dtype): sums and products in the
// input's own float or int64 type, maxima and minima; else nullptr.
NarrowFn pick_narrow(Rop rop, DType in_dt, DType acc) {
  NarrowFn fn = nullptr;
  with_op(rop, [&](auto opc) {
    constexpr Rop op = decltype(opc)::value;
    if constexpr (op == Rop::Add || op == Rop::Mul || op == Rop::Max || op == Rop::Min) {
      dtype_dispatch(in_dt, [&](auto in) {
        using In = decltype(in);
        if constexpr (std::is_same_v<In, double> || std::is_same_v<In, float> || std::is_same_v<In, int64_t>)
          if (op == Rop::Max || op == Rop::Min || acc == in_dt) fn = &narrow_columns_fn<op, In>;
      });
    }
  });
  return fn;
}

// reduce_short_rows for (op, input dtype), or nullptr when the accumulator
// is not the input's dtype (those take the row tasks).
ShortRowsFn pick_short_rows(Rop rop, DType in_dt, DType acc) {
  ShortRowsFn fn = nullptr;
  with_op(rop, [&](auto opc) {
    constexpr Rop op = decltype(opc)::value;
    dtype_dispatch(in_dt, [&](auto in) {
      using In = decltype(in);
      if constexpr (op == Rop::And || op == Rop::Or) {
        if constexpr (std::is_same_v<In, bool>) fn = &reduce_short_rows<op, bool>;
      } else if constexpr (op == Rop::Max || op == Rop::Min) {
        fn = &reduce_short_rows<op, In>;
      } else if constexpr (std::is_same_v<In, double>) {
        if (acc == DType::Float64) fn = &reduce_short_rows<op, In>;
      } else if constexpr (std::is_same_v<In, float>) {
        if (acc == DType::Float32) fn = &reduce_short_rows<op, In>;
      } else if constexpr (std::is_same_v<In, int64_t>) {
        if (acc == DType::Int64) fn = &reduce_short_rows<op, In>;
      }
    });
  });
  return fn;
}

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(Rop op, uint32_t axis_mask, DType in, DType acc, int64_t threshold)
      : op_(op), mask_(axis_mask), in_(in), acc_(acc), threshold_(threshold),
        small_(pick_small(op, in, acc, direct_)), short_rows_(pick_short_rows(op, in, acc)),
        narrow_(pick_narrow(op, in, acc)) {}

  void run(Frame& f) const override {
    const Tensor& x = f.in(0);
    // All / Any of a whole contiguous bool tensor: a byte scan (any order
    // gives the same bool; a bool is true for any nonzero byte).
    if ((op_ == Rop::And || op_ == Rop::Or) && x.dtype == DType::Bool && in_ == DType::Bool &&
        x.ndim() > 0 && mask_ == (1u << x.ndim()) - 1 && x.is_contiguous()) {
      Uninit<Shape> os;
      (*os).ndim = 0;
      return whole_bool(x, f.alloc_out(0, *os));
    }
    // A 0-d or fully reduced 1-d input: the small path without the plan.
    if (x.ndim() == 0 || (x.ndim() == 1 && mask_ == 1u)) {
      const int64_t n = x.ndim() ? x.dim(0) : 1, st = x.ndim() ? x.strides[0] : 1;
      if (n >= 1 && x.dtype == in_ && (n <= kSmall || (direct_ && st == 1 && n <= kChunk))) {
        Uninit<Shape> os;
        (*os).ndim = 0;
        return small_(x.data, n, st, f.alloc_out(0, *os));
      }
    }
    Plan p;
    p.threshold = threshold_;
    Uninit<Shape> osb;
    Shape& os = *osb;
    os.ndim = 0;
    for (int i = 0; i < x.ndim(); ++i) {
      if (mask_ & (1u << i)) {
        p.R *= x.dim(i);
      } else {
        os.dims[os.ndim++] = x.dim(i);
        p.O *= x.dim(i);
      }
    }
    Tensor& y = f.alloc_out(0, os);
    if (p.O == 0) return;
    if (p.R == 0) return fill_identity(f, y);
    for (int i = 0; i < x.ndim(); ++i) {
      Axes& a = (mask_ & (1u << i)) ? p.red : p.kept;
      a.push(x.dim(i), x.strides[i]);
    }
    // One output over a contiguous or 1-d strided run (eight schools' Sums
    // of 8): no plan, walkers or scratch. Same tree, same bits.
    if (p.O == 1 && p.red.nd <= 1 && x.dtype == in_ &&
        (p.R <= kSmall || (direct_ && p.R <= kChunk && p.red.nd == 1 && p.red.strides[0] == 1)))
      return small_(x.data, p.R, p.red.nd ? p.red.strides[0] : 1, y);
    // A dense (R, C) block reduced over its rows into a few columns.
    if (narrow_ && p.kept.nd == 1 && p.kept.strides[0] == 1 && p.O <= kNarrowMax &&
        p.red.nd == 1 && p.red.strides[0] == p.O && p.R <= kChunk && p.O * p.R < p.threshold &&
        x.dtype == in_ && y.dtype == in_)
      return narrow_(f, x.data, p.R, p.O, y.data);
    p.nc = (p.R + kChunk - 1) / kChunk;
    if (p.kept.nd > 0 && p.red.nd > 0) {
      const int64_t sk = std::llabs(p.kept.strides[p.kept.nd - 1]);
      const int64_t sr = std::llabs(p.red.strides[p.red.nd - 1]);
      // A tile of a few columns costs more per element than gathering each
      // column's run (a mixture's (600, 3) summed over axis 0).
      p.column = sk < sr && (p.O >= kMinColumns || p.R > kChunk);
    }
    if (short_rows_ && !p.column && p.red.nd == 1 && p.R <= kLeaf && p.O * p.R < p.threshold &&
        x.dtype == in_ && y.dtype == in_)
      return short_rows_(p, x, y);
    if (p.column) {
      p.jdim = p.kept.dims[p.kept.nd - 1];
      p.sk = p.kept.strides[p.kept.nd - 1];
      for (int i = 0; i + 1 < p.kept.nd; ++i) p.outer.push(p.kept.dims[i], p.kept.strides[i]);
    }
    with_op(op_, [&](auto opc) {
      constexpr Rop op = decltype(opc)::value;
      dtype_dispatch(x.dtype, [&](auto in) {
        using In = decltype(in);
        if constexpr (op == Rop::And || op == Rop::Or) {
          reduce_all<op, In, bool>(f, p, x, y);
        } else if constexpr (op == Rop::Max || op == Rop::Min) {
          reduce_all<op, In, In>(f, p, x, y);
        } else if (acc_ == DType::Float64) {
          reduce_all<op, In, double>(f, p, x, y);
        } else if (acc_ == DType::Float32) {
          reduce_all<op, In, float>(f, p, x, y);
        } else {
          reduce_all<op, In, int64_t>(f, p, x, y);
        }
      });
    });
  }

 private:
  void whole_bool(const Tensor& x, Tensor& y) const {
    const auto* b = static_cast<const unsigned char*>(x.data);
    const size_t n = static_cast<size_t>(x.size());
    bool r;
    if (op_ == Rop::And) {
      r = n == 0 || std::memchr(b, 0, n) == nullptr;
    } else {
      unsigned char any = 0;
      for (size_t i = 0; i < n; ++i) any |= b[i];
      r = any != 0;
    }
    *static_cast<bool*>(y.data) = r;  // All/Any outputs are bool (make_reduce)
  }
  void fill_identity(Frame& f, Tensor& y) const {
    if (op_ == Rop::Max || op_ == Rop::Min)
      f.fail(std::string("zero-size array to reduction operation ") + rop_name(op_) +
             " which has no identity");
    const int ident = (op_ == Rop::Mul || op_ == Rop::And) ? 1 : 0;  // MulNZ: 0, as PyTensor's
    dtype_dispatch(y.dtype, [&](auto o) {
      using Out = decltype(o);
      Out* yp = y.ptr<Out>();
      for (int64_t i = 0; i < y.size(); ++i) yp[i] = static_cast<Out>(ident);
    });
  }

  Rop op_;
  uint32_t mask_;
  DType in_, acc_;
  int64_t threshold_;
  bool direct_ = false;
  SmallFn small_;
  ShortRowsFn short_rows_;
  NarrowFn narrow_;
};

Rop parse_rop(NodeContext& ctx) {
  switch (ctx.op()) {
    case TensorOp::Sum: return Rop::Add;
    case TensorOp::Prod: return Rop::Mul;
    case TensorOp::Max: return Rop::Max;
    case TensorOp::Min: return Rop::Min;
    case TensorOp::All: return Rop::And;
    case TensorOp::Any: return Rop::Or;
    default: break;  // CAReduce: the scalar op says
  }
  const nlohmann::json& j = ctx.attr("scalar_op");
  std::string s;
  if (j.is_string()) s = j.get<std::string>();
  else if (j.is_object() && j.contains("op") && j["op"].is_string()) s = j["op"].get<std::string>();
  else ctx.fail("scalar_op", "expected {\"op\": name}");
  // The rows marked Reduce in interp/scalar_ops.def; Maximum/Minimum are PyTensor's class names.
  using interp::ScalarOp;
  std::string_view sop = s;
  if (sop == "Maximum") sop = "ScalarMaximum";
  if (sop == "Minimum") sop = "ScalarMinimum";
  if (sop == interp::kReduceOnlyOps[0]) return Rop::MulNZ;
  const auto op = interp::scalar_op_from_name(sop);
  if (op && interp::op_info(*op).has(interp::opflag::Reduce)) {
    switch (*op) {
      case ScalarOp::Add: return Rop::Add;
      case ScalarOp::Mul: return Rop::Mul;
      case ScalarOp::Maximum: return Rop::Max;
      case ScalarOp::Minimum: return Rop::Min;
      case ScalarOp::And: return Rop::And;
      case ScalarOp::Or: return Rop::Or;
      default: break;
    }
  }
  std::string names;
  for (const auto& i : interp::kScalarOps)
    if (i.has(interp::opflag::Reduce)) names += (names.empty() ? "" : ", ") + std::string(i.name);
  for (const auto n : interp::kReduceOnlyOps) names += ", " + std::string(n);
  ctx.fail("scalar_op", "CAReduce supports " + names + "; got '" + s + "'");
}

// Bit i set: axis i is reduced. As PyTensor's normalize_reduce_axis, a 0-d
// input takes axes as if it were 1-d: axis 0 (or -1) is accepted and
// reduces nothing, so the output is the element.
uint32_t parse_axes(NodeContext& ctx, int nd) {
  const uint32_t all = nd == 0 ? 0u : (nd >= 32 ? ~0u : ((1u << nd) - 1));
  if (!ctx.has_attr("axis") || ctx.attr("axis").is_null()) return all;
  const nlohmann::json& j = ctx.attr("axis");
  std::vector<int64_t> axes;
  if (j.is_number_integer()) {
    axes.push_back(j.get<int64_t>());
  } else if (j.is_array()) {
    for (const auto& e : j) {
      if (!e.is_number_integer()) ctx.fail("axis", "expected integers or null");
      axes.push_back(e.get<int64_t>());
    }
  } else {
    ctx.fail("axis", "expected a list of integers or null");
  }
  const int range = std::max(nd, 1);
  uint32_t mask = 0;
  for (int64_t a : axes) {
    const int64_t n = a < 0 ? a + range : a;
    if (n < 0 || n >= range)
      ctx.fail("axis", "axis " + std::to_string(a) + " is out of range for an input of " +
                           std::to_string(nd) + " dims");
    if (mask & (1u << n)) ctx.fail("axis", "axis " + std::to_string(a) + " is repeated");
    mask |= 1u << n;
  }
  return nd == 0 ? 0u : mask;
}

DType parse_acc(NodeContext& ctx, Rop op, DType in) {
  if (op != Rop::Add && op != Rop::Mul && op != Rop::MulNZ) return in;
  if (ctx.has_attr("acc_dtype") && !ctx.attr("acc_dtype").is_null()) {
    const std::string s = ctx.attr_str("acc_dtype");
    const auto dt = dtype_from_name(s);
    if (!dt) ctx.fail("acc_dtype", "unknown dtype '" + s + "'");
    if (*dt == DType::Float64 || *dt == DType::Float32) return *dt;
    return DType::Int64;  // narrower ints wrap identically after the final cast
  }
  return dtype_is_float(in) ? DType::Float64 : DType::Int64;
}

}  // namespace

std::unique_ptr<OpKernel> make_careduce(NodeContext& ctx) {
  ctx.expect_inputs(1);
  ctx.expect_outputs(1);
  const Rop op = parse_rop(ctx);
  const VarSpec& in = ctx.in(0);
  const VarSpec& out = ctx.out(0);
  const int nd = in.static_shape.ndim;
  const uint32_t mask = parse_axes(ctx, nd);
  Shape expect;
  for (int i = 0; i < nd; ++i)
    if (!(mask & (1u << i))) expect.dims[expect.ndim++] = in.static_shape.dims[i];
  if (out.static_shape.ndim != expect.ndim)
    ctx.fail("outputs", "output has " + std::to_string(out.static_shape.ndim) +
                            " dims; reducing " + std::to_string(nd - expect.ndim) + " of " +
                            std::to_string(nd) + " input dims leaves " +
                            std::to_string(expect.ndim));
  for (int i = 0; i < expect.ndim; ++i) {
    const int64_t a = expect.dims[i], b = out.static_shape.dims[i];
    if (a >= 0 && b >= 0 && a != b)
      ctx.fail("outputs", "output dim " + std::to_string(i) + " is " + std::to_string(b) +
                              " but the input's kept dim is " + std::to_string(a));
  }
  if ((op == Rop::And || op == Rop::Or) && out.dtype != DType::Bool)
    ctx.fail("outputs", "All/Any output must be bool, not " + std::string(dtype_name(out.dtype)));
  const DType acc = parse_acc(ctx, op, in.dtype);
  return std::make_unique<ReduceKernel>(op, mask, in.dtype, acc, ctx.options().parallel_threshold);
}

}  // namespace ember
