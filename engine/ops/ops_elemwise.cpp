// Elemwise: a Composite (or one scalar op) applied over broadcast tensors.
// Runs on the interpreter; the JIT later swaps in compiled kernels through
// `active`, which each call reads once at its start.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <new>

#include <tbb/parallel_for.h>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/hot.hpp"
#include "engine/ops/scalar_loop_kernel.hpp"
#include "engine/ops/reduce_tree.hpp"
#include "engine/ops/workspace.hpp"
#include "jit/tier_manager.hpp"
#include "interp/vm.hpp"

namespace ember {

using nlohmann::json;

namespace {

interp::ScalarConst read_scalar_const(NodeContext& ctx, const json& c, const std::string& field) {
  if (!c.is_object()) ctx.fail(field, "must be an object");
  auto dt = c.contains("dtype") && c["dtype"].is_string() ? dtype_from_name(c["dtype"].get<std::string>())
                                                          : std::nullopt;
  if (!dt) ctx.fail(field + ".dtype", "missing or unknown dtype");
  if (!c.contains("value")) ctx.fail(field + ".value", "missing");
  const json& v = c["value"];
  interp::ScalarConst sc;
  sc.dtype = *dt;
  double f = 0;
  int64_t i = 0;
  bool is_int = false;
  if (v.is_boolean()) { i = v.get<bool>(); is_int = true; }
  else if (v.is_number_integer()) { i = v.get<int64_t>(); is_int = true; }
  else if (v.is_number()) f = v.get<double>();
  else if (v.is_string() && v == "nan") f = NAN;
  else if (v.is_string() && v == "inf") f = INFINITY;
  else if (v.is_string() && v == "-inf") f = -INFINITY;
  else ctx.fail(field + ".value", "must be a number, \"nan\", \"inf\" or \"-inf\"");
  if (dtype_is_float(*dt)) {
    sc.f = is_int ? static_cast<double>(i) : f;
    if (*dt == DType::Float32) sc.f = static_cast<float>(sc.f);
  } else {
    if (!is_int) {
      if (!std::isfinite(f) || f != std::floor(f)) ctx.fail(field + ".value", "not an integer");
      if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) ctx.fail(field + ".value", "out of range");
      i = static_cast<int64_t>(f);
    }
    sc.i = *dt == DType::Bool ? (i != 0) : i;
  }
  return sc;
}

}  // namespace

interp::Composite read_composite(NodeContext& ctx, const json& so, const std::vector<DType>& ins,
                                 const std::vector<DType>& outs) {
  interp::Composite c;
  if (!so.is_object() || !so.contains("op") || !so["op"].is_string())
    ctx.fail("attrs.scalar_op", "must be an object with a string 'op'");
  const std::string name = so["op"].get<std::string>();
  if (name != "Composite") {
    auto op = interp::scalar_op_from_name(name);
    if (!op) ctx.fail("attrs.scalar_op.op", "unsupported scalar op '" + name + "'");
    if (outs.size() != 1) ctx.fail("outputs", "a single scalar op has one output");
    c.inputs = ins;
    std::vector<int32_t> args;
    for (size_t k = 0; k < ins.size(); ++k) args.push_back(static_cast<int32_t>(k));
    c.nodes.push_back(interp::ScalarNode{*op, outs[0], args});
    c.outputs.push_back(static_cast<int32_t>(ins.size()));
  } else {
    auto list = [&](const char* key) -> const json& {
      if (!so.contains(key) || !so[key].is_array()) ctx.fail(std::string("attrs.scalar_op.") + key, "must be a list");
      if (so[key].size() > 10'000'000) ctx.fail(std::string("attrs.scalar_op.") + key, "too long");
      return so[key];
    };
    for (const json& d : list("inputs")) {
      auto dt = d.is_string() ? dtype_from_name(d.get<std::string>()) : std::nullopt;
      if (!dt) ctx.fail("attrs.scalar_op.inputs", "unknown dtype " + d.dump());
      c.inputs.push_back(*dt);
    }
    if (so.contains("constants")) {
      const json& cs = list("constants");
      for (size_t k = 0; k < cs.size(); ++k)
        c.constants.push_back(read_scalar_const(ctx, cs[k], "attrs.scalar_op.constants[" + std::to_string(k) + "]"));
    }
    const json& nodes = list("nodes");
    for (size_t k = 0; k < nodes.size(); ++k) {
      const std::string p = "attrs.scalar_op.nodes[" + std::to_string(k) + "]";
      const json& n = nodes[k];
      if (!n.is_object() || !n.contains("op") || !n["op"].is_string()) ctx.fail(p + ".op", "missing");
      auto op = interp::scalar_op_from_name(n["op"].get<std::string>());
      if (!op) ctx.fail(p + ".op", "unsupported scalar op '" + n["op"].get<std::string>() + "'");
      auto dt = n.contains("dtype") && n["dtype"].is_string() ? dtype_from_name(n["dtype"].get<std::string>())
                                                               : std::nullopt;
      if (!dt) ctx.fail(p + ".dtype", "missing or unknown dtype");
      interp::ScalarNode sn{*op, *dt, {}};
      if (!n.contains("inputs") || !n["inputs"].is_array()) ctx.fail(p + ".inputs", "must be a list");
      for (const json& i : n["inputs"]) {
        if (!i.is_number_integer()) ctx.fail(p + ".inputs", "must be value indices");
        const int64_t v = i.get<int64_t>();
        if (v < 0 || v > INT32_MAX) ctx.fail(p + ".inputs", "value index out of range");
        sn.inputs.push_back(static_cast<int32_t>(v));
      }
      c.nodes.push_back(std::move(sn));
    }
    for (const json& o : list("outputs")) {
      if (!o.is_number_integer() || o.get<int64_t>() < 0 || o.get<int64_t>() > INT32_MAX)
        ctx.fail("attrs.scalar_op.outputs", "must be value indices");
      c.outputs.push_back(static_cast<int32_t>(o.get<int64_t>()));
    }
  }
  if (std::string err = c.validate(); !err.empty()) ctx.fail("attrs.scalar_op", err);
  if (c.inputs.size() != ins.size())
    ctx.fail("attrs.scalar_op.inputs", "composite has " + std::to_string(c.inputs.size()) +
                                           " inputs, node has " + std::to_string(ins.size()));
  for (size_t k = 0; k < ins.size(); ++k)
    if (c.inputs[k] != ins[k])
      ctx.fail("attrs.scalar_op.inputs[" + std::to_string(k) + "]",
               "dtype " + std::string(dtype_name(c.inputs[k])) + " but tensor input is " +
                   std::string(dtype_name(ins[k])));
  if (c.outputs.size() != outs.size())
    ctx.fail("attrs.scalar_op.outputs", "composite has " + std::to_string(c.outputs.size()) +
                                            " outputs, node has " + std::to_string(outs.size()));
  for (size_t k = 0; k < outs.size(); ++k)
    if (c.value_dtype(c.outputs[k]) != outs[k])
      ctx.fail("attrs.scalar_op.outputs[" + std::to_string(k) + "]",
               "dtype " + std::string(dtype_name(c.value_dtype(c.outputs[k]))) + " but tensor output is " +
                   std::string(dtype_name(outs[k])));
  return c;
}

ElemwiseKernel::ElemwiseKernel(interp::Composite c, std::shared_ptr<const interp::Interpreted> vm, int ndim,
                               int64_t parallel_threshold)
    : composite_(std::move(c)), vm_(std::move(vm)), ndim_(ndim), parallel_threshold_(parallel_threshold) {
  active_.store(vm_.get());
  ones_.ndim = ndim;
  for (int d = 0; d < ndim; ++d) ones_.dims[d] = 1;
}

void ElemwiseKernel::set_static_output_shape(const Shape& s) {
  static_out_ = s;
  all_ones_ = ndim_ > 0 && s.ndim == ndim_;
  for (int d = 0; d < s.ndim && all_ones_; ++d) all_ones_ = s.dims[d] == 1;
}

ElemwiseKernel::~ElemwiseKernel() { TierManager::instance().detach(tier_); }

void ElemwiseKernel::attach_tier() {
  tier_ = TierManager::instance().attach(*this, vm_);
  sample_ = TierManager::sample_mask(tier_.get());
}

void ElemwiseKernel::set_reduced(std::vector<uint8_t> r, int64_t flat) {
  reduced_ = std::move(r);
  if (!tier_) return;
  // Row sums of a 2-D node: a tier-2 kernel makes them row by row
  // (ElemKernel::fn_row_sums), each row's column inputs broadcast. Only when
  // the static shape gives rows it takes: a kernel with summed outputs runs
  // every other call on the interpreter.
  const int64_t n = static_out_.dims[1];
  bool rows = ndim_ == 2 && static_out_.ndim == 2 && static_out_.dims[0] >= 0 && n >= interp::kOneBlockMin &&
              n <= interp::kOneBlockMax && static_out_.dims[0] * n < parallel_threshold_,
       any = false;
  for (uint8_t v : reduced_) rows = rows && (v == 0 || v == 2), any = any || v == 2;
  std::vector<bool> summed(reduced_.size());
  if (rows && any) {
    row_sums_ = true;
    for (size_t j = 0; j < reduced_.size(); ++j) summed[j] = reduced_[j] == 2;
    TierManager::instance().set_summed(tier_, std::move(summed), row_uniform_);
    return;
  }
  if (flat < 8 || flat >= parallel_threshold_) return;
  bool all = reduced_.size() <= static_cast<size_t>(kMaxReducedOutput);
  for (size_t j = 0; j < reduced_.size(); ++j) summed[j] = reduced_[j] == 1, all = all && summed[j];
  if (all && flat <= interp::kOneBlockMax && composite_.inputs.size() <= kQuickIns) quick_n_ = flat;
  TierManager::instance().set_summed(tier_, std::move(summed));
}

namespace {

// Inner runs shorter than this are swapped with a longer dim (run_nest).
constexpr int64_t kShortRun = 16;
// A dim at least this long, contiguous in every input, is run as rows instead of packed.
constexpr int64_t kLongRun = 64;

// A broadcast loop nest after merging: `m` dims, operand strides in elements.
struct LoopNest {
  int nin = 0, nops = 0, m = 0;
  int64_t dims[kMaxRank];            // [0, m) set; not zeroed (per-call cost)
  const int64_t* st = nullptr;       // nops x kMaxRank
  interp::StridedPtr const* base = nullptr;
  const int64_t* esize = nullptr;    // bytes per element, per operand
};

// Runs rows [r0, r1) of the nest, each over inner elements [c0, c1).
void run_rows(const interp::ElemKernel* k, const LoopNest& L, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int kSmall = 32;
  interp::StridedPtr small[kSmall];
  thread_local std::vector<interp::StridedPtr> big;
  interp::StridedPtr* ops = small;
  if (L.nops > kSmall) {
    if (big.size() < static_cast<size_t>(L.nops)) big.resize(L.nops);
    ops = big.data();
  }
  const int in = L.m - 1;
  for (int64_t r = r0; r < r1; ++r) {
    for (int i = 0; i < L.nops; ++i) {
      int64_t off = c0 * L.st[i * kMaxRank + in];
      int64_t rem = r;
      for (int d = L.m - 2; d >= 0; --d) {
        off += (rem % L.dims[d]) * L.st[i * kMaxRank + d];
        rem /= L.dims[d];
      }
      ops[i].data = static_cast<char*>(L.base[i].data) + off * L.esize[i];
      ops[i].stride = L.st[i * kMaxRank + in];
    }
    k->run(c1 - c0, ops, ops + L.nin);
  }
}

// The last two dims of a pack (below): rows x n elements, row stride s0,
// element stride s1. N > 0 is n known at compile time. Out of line: inlined
// into run_nest its loop counters spill.
template <class T, int N>
[[gnu::noinline]] void pack_2d(const T* __restrict p, int64_t rows, int64_t s0, int64_t s1, int64_t n,
                               T* __restrict o) {
  const int64_t nn = N > 0 ? N : n;
  if (s0 == 0 && rows > 1) {  // one row repeated (a (1, k) operand): copy it in doubling blocks
    for (int64_t c = 0; c < nn; ++c) o[c] = p[c * s1];
    for (int64_t done = 1; done < rows;) {
      const int64_t k = std::min(done, rows - done);
      std::memcpy(o + done * nn, o, static_cast<size_t>(k * nn) * sizeof(T));
      done += k;
    }
    return;
  }
  if (s1 == 0) {
    for (int64_t r = 0; r < rows; ++r, o += nn) {
      const T v = p[r * s0];
      for (int64_t c = 0; c < nn; ++c) o[c] = v;
    }
  } else {
    for (int64_t r = 0; r < rows; ++r, o += nn)
      for (int64_t c = 0; c < nn; ++c) o[c] = p[r * s0 + c * s1];
  }
}

// Copies an operand's elements in the nest's C order into dst, as raw bytes
// (T only gives the width): the kernel sees the same values.
template <class T>
void pack_operand(const void* src, const int64_t* st, const int64_t* dims, int m, void* dst) {
  const T* p = static_cast<const T*>(src);
  T* o = static_cast<T*>(dst);
  auto fn = &pack_2d<T, 0>;
  switch (dims[m - 1]) {
    case 2: fn = &pack_2d<T, 2>; break;
    case 3: fn = &pack_2d<T, 3>; break;
    case 4: fn = &pack_2d<T, 4>; break;
    default: break;
  }
  const int64_t rows = dims[m - 2], plane = rows * dims[m - 1];
  int64_t idx[kMaxRank], outer = 1, off = 0;  // only [0, m-2) used: no rep stos of all 16
  for (int d = 0; d < m - 2; ++d) outer *= dims[d], idx[d] = 0;
  for (int64_t q = 0; q < outer; ++q, o += plane) {
    fn(p + off, rows, st[m - 2], st[m - 1], dims[m - 1], o);
    for (int d = m - 3; d >= 0; --d) {
      off += st[d];
      if (++idx[d] < dims[d]) break;
      off -= st[d] * dims[d];
      idx[d] = 0;
    }
  }
}

// A nest with a short inner dim as one contiguous run: inputs laid out like
// the output are read in place, one-element inputs broadcast, the others are
// first copied into the output's layout. The swapped loop instead gathers or
// scatters every operand strided in the long dim, one element at a time, at
// about twice the cost of a contiguous copy. Copies differ too: a repeated
// row (a (1, k) operand) is a doubling memcpy at about a quarter of that
// cost, a repeated column (an (n, 1) one) a fill at about half. Packing is
// taken when its copies cost at most what the swap's strided operands do,
// and always when there is no longer dim to swap in. Returns false, having
// done nothing, when it does not pay or needs too much scratch.
bool run_packed(const interp::ElemKernel* k, const LoopNest& L, const int64_t* st, interp::StridedPtr* base,
                const int64_t* esize, int64_t total) {
  const int in = L.m - 1;
  int j = 0;  // the longest outer dim, which the swap would move inside
  for (int d = 1; d < in; ++d)
    if (L.dims[d] > L.dims[j]) j = d;
  const int64_t* out_st = st + L.nin * kMaxRank;  // every output: contiguous
  uint32_t pack = 0;  // inputs to copy (bit i)
  int npack = 0, nswap = 0;
  int64_t cost = 0;  // of the copies, in quarters of a contiguous copy
  int64_t bytes = 0;
  for (int i = 0; i < L.nops; ++i) {
    const int64_t* si = st + i * kMaxRank;
    if (si[j] != 0 && si[j] != 1) ++nswap;
    if (i >= L.nin) continue;
    bool flat = true, one = true;
    for (int d = 0; d < L.m; ++d) flat = flat && si[d] == out_st[d], one = one && si[d] == 0;
    if (flat || one) continue;
    pack |= 1u << i;
    ++npack;
    cost += si[in - 1] == 0 ? 1 : si[in] == 0 ? 2 : 4;
    bytes += (total * esize[i] + 63) / 64 * 64;
  }
  if (L.dims[j] > L.dims[in] && cost > 8 * nswap) return false;
  // Rows of kShortRun or more elements: one kernel call per row costs about
  // what copying a few hundred elements does (the groups of a batch, (18, 20)).
  if (L.dims[in] >= kShortRun && npack * L.dims[in] > 256) return false;
  constexpr int64_t kMaxScratch = int64_t(1) << 21;
  if (bytes > kMaxScratch) return false;
  thread_local std::vector<double> scratch;
  if (scratch.size() * sizeof(double) < static_cast<size_t>(bytes)) scratch.resize(bytes / sizeof(double));
  char* next = reinterpret_cast<char*>(scratch.data());
  constexpr int kSmall = 24;
  interp::StridedPtr ops[kSmall];
  for (int i = 0; i < L.nops; ++i) {
    const int64_t* si = st + i * kMaxRank;
    bool one = i < L.nin;
    for (int d = 0; d < L.m && one; ++d) one = si[d] == 0;
    ops[i] = {base[i].data, one ? 0 : 1};
    if (!(pack >> i & 1)) continue;
    switch (esize[i]) {
      case 8: pack_operand<uint64_t>(base[i].data, si, L.dims, L.m, next); break;
      case 4: pack_operand<uint32_t>(base[i].data, si, L.dims, L.m, next); break;
      case 2: pack_operand<uint16_t>(base[i].data, si, L.dims, L.m, next); break;
      default: pack_operand<uint8_t>(base[i].data, si, L.dims, L.m, next); break;
    }
    ops[i].data = next;
    next += (total * esize[i] + 63) / 64 * 64;
  }
  k->run(total, ops, ops + L.nin);
  return true;
}

}  // namespace

namespace {
// Where each output of a call goes: its slot, or for an output a fused Sum
// reduces (ElemwiseKernel::reduced), a slice of the step's scratch.
struct Outs {
  const std::vector<uint8_t>& reduced;
  char* at[kMaxReducedOutput];       // per reduced output: its scratch slice (set before it is read)
  int64_t lead[kMaxRank];            // the outputs' leading dims (set with the first slice)
  char* next = nullptr;
  uint32_t by_kernel = 0;            // bit o: whole sum o came from the kernel (ElemKernel::fn_sums)
  double sum[kMaxReducedOutput];     // those sums
  explicit Outs(const std::vector<uint8_t>& r) : reduced(r) {}

  void* get(Frame& f, int o, const Shape& s) {
    if (reduced.empty() || !reduced[o]) return f.alloc_out(o, s).data;
    if (!next) {
      int k = 0;
      for (uint8_t r : reduced) k += r != 0;
      next = static_cast<char*>(f.scratch(static_cast<size_t>(k) * static_cast<size_t>(s.size()) * sizeof(double)));
      for (int d = 0; d < s.ndim; ++d) lead[d] = s.dims[d];
    }
    at[o] = next;
    next += static_cast<size_t>(s.size()) * sizeof(double);
    return at[o];
  }
  // The sums, into the step's outputs, as the Sum step would: over every
  // axis (a 0-d float64), or over all but the first k - 1 axes, each row of
  // the C-contiguous slice by the same tree as a whole sum of its elements.
  void finish(Frame& f, int64_t total) {
    static const Shape scalar{};  // built once: a Shape is 136 bytes to zero
    for (size_t o = 0; o < reduced.size(); ++o) {
      if (!reduced[o]) continue;
      if (o < kMaxReducedOutput && (by_kernel >> o & 1)) {
        *static_cast<double*>(f.alloc_out(static_cast<int>(o), scalar).data) = sum[o];
        continue;
      }
      const auto* x = reinterpret_cast<const double*>(at[o]);
      if (reduced[o] == 1) {
        const double v = total > 0 ? reduce::reduce_contiguous<reduce::Rop::Add, double>(x, total) : 0.0;
        *static_cast<double*>(f.alloc_out(static_cast<int>(o), scalar).data) = v;
        continue;
      }
      Shape kept;
      kept.ndim = reduced[o] - 1;
      int64_t rows = 1;
      for (int d = 0; d < kept.ndim; ++d) rows *= kept.dims[d] = lead[d];
      auto* y = static_cast<double*>(f.alloc_out(static_cast<int>(o), kept).data);
      const int64_t n = rows > 0 ? total / rows : 0;
      if (n > 0) reduce::reduce_rows<reduce::Rop::Add, double>(x, rows, n, y);
      else std::fill(y, y + rows, 0.0);
    }
  }
};

// The broadcast loop nest; returns the element count. Out of line: its
// operand tables make a frame of several KB, which the one-element path
// (most calls on small models) should not carry.
[[gnu::noinline]] int64_t run_nest(Frame& f, Outs& outs, const interp::ElemKernel* k, int ndim,
                                   int64_t parallel_threshold) {
  const int nin = f.num_inputs(), nout = f.num_outputs(), nops = nin + nout;
  // Not zero-initialized (a Shape is 136 bytes): only dims [0, ndim) are
  // used. The bytes hold an implicitly created Shape (C++20 implicit-lifetime).
  alignas(Shape) std::byte out_raw[sizeof(Shape)];
  Shape& out = *std::launder(reinterpret_cast<Shape*>(out_raw));
  out.ndim = ndim;
  for (int d = 0; d < ndim; ++d) {
    int64_t size = 1;
    for (int i = 0; i < nin; ++i) {
      const int64_t s = f.in(i).dim(d);
      if (s == 1) continue;
      if (size != 1 && size != s)
        f.fail("input shapes do not broadcast at dim " + std::to_string(d) + ": " + std::to_string(size) +
               " vs " + std::to_string(s) + " (input " + std::to_string(i) + " has shape " +
               f.in(i).shape.str() + ")");
      size = s;
    }
    out.dims[d] = size;
  }
  // Per-operand tables on the stack for the usual operand counts (no
  // thread_local lookups, no zeroing: the merge below writes every entry it
  // reads); thread-local, grow-only beyond that.
  constexpr int kSmallOps = 24;
  int64_t st_small[kSmallOps * kMaxRank], esize_small[kSmallOps];
  interp::StridedPtr base_small[kSmallOps];
  int64_t* st = st_small;
  int64_t* esize = esize_small;
  interp::StridedPtr* base = base_small;
  if (nops > kSmallOps) {
    thread_local std::vector<int64_t> st_big, esize_big;
    thread_local std::vector<interp::StridedPtr> base_big;
    if (st_big.size() < static_cast<size_t>(nops) * kMaxRank) st_big.resize(static_cast<size_t>(nops) * kMaxRank);
    if (esize_big.size() < static_cast<size_t>(nops)) esize_big.resize(nops), base_big.resize(nops);
    st = st_big.data();
    esize = esize_big.data();
    base = base_big.data();
  }
  for (int i = 0; i < nin; ++i) {
    base[i] = {f.in(i).data, 0};
    esize[i] = static_cast<int64_t>(dtype_size(f.in(i).dtype));
  }
  for (int o = 0; o < nout; ++o) {
    base[nin + o] = {outs.get(f, o, out), 0};
    esize[nin + o] = static_cast<int64_t>(dtype_size(f.out_dtype(o)));
  }
  const int64_t total = out.size();
  if (total == 0) return 0;

  // Drop size-1 dims (broadcast inputs get stride 0), then merge dims that
  // are contiguous for every operand.
  LoopNest L;
  L.nin = nin;
  L.nops = nops;
  int64_t out_stride[kMaxRank];
  {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      out_stride[d] = s;
      s *= out.dims[d];
    }
  }
  for (int d = 0; d < ndim; ++d) {
    if (out.dims[d] == 1) continue;
    const int64_t n = out.dims[d];
    auto stride_of = [&](int i) {
      if (i >= nin) return out_stride[d];
      const Tensor& t = f.in(i);
      return t.dim(d) == 1 ? int64_t(0) : t.strides[d];
    };
    if (L.m > 0) {
      bool merge = true;
      for (int i = 0; i < nops && merge; ++i) merge = st[i * kMaxRank + L.m - 1] == stride_of(i) * n;
      if (merge) {
        for (int i = 0; i < nops; ++i) st[i * kMaxRank + L.m - 1] = stride_of(i);
        L.dims[L.m - 1] *= n;
        continue;
      }
    }
    for (int i = 0; i < nops; ++i) st[i * kMaxRank + L.m] = stride_of(i);
    L.dims[L.m++] = n;
  }
  if (L.m == 0) {  // 0-d, or every dim has size 1
    k->run(1, base, base + nin);
    return total;
  }
  // A short inner run (a (600, 3) broadcast) costs one kernel call per row:
  // run it as one packed run, or move the longest dim inside; rows up to
  // kLongRun are packed when that copies little. Elements are
  // independent, so the order they are computed in changes no bit.
  if (L.m >= 2 && L.dims[L.m - 1] < kLongRun) {
    int j = 0;
    for (int d = 1; d < L.m - 1; ++d)
      if (L.dims[d] > L.dims[j]) j = d;
    // Packing an input that is strided along the short inner dim gathers it
    // element by element. When the longest dim is long and every input reads
    // it contiguously (or broadcasts it), rows along it cost less (a Gram
    // matrix's outer products over transposed views, docs/benchmarks.md).
    bool rows = L.dims[j] >= kLongRun, strided_inner = false;
    for (int i = 0; i < nin && rows; ++i) {
      const int64_t sj = st[i * kMaxRank + j], si = st[i * kMaxRank + L.m - 1];
      rows = sj == 0 || sj == 1;
      strided_inner = strided_inner || (si != 0 && si != 1);
    }
    if (!(rows && strided_inner) && total < parallel_threshold && nops <= 24 &&
        run_packed(k, L, st, base, esize, total))
      return total;
    if (L.dims[L.m - 1] < kShortRun && L.dims[j] > L.dims[L.m - 1]) {
      std::swap(L.dims[j], L.dims[L.m - 1]);
      for (int i = 0; i < nops; ++i) std::swap(st[i * kMaxRank + j], st[i * kMaxRank + L.m - 1]);
    }
  }
  L.st = st;
  L.base = base;
  L.esize = esize;
  const int64_t inner = L.dims[L.m - 1];
  const int64_t rows = total / inner;
  if (total < parallel_threshold) {
    run_rows(k, L, 0, rows, 0, inner);
    return total;
  }
  // Fixed chunks, whatever the thread count: by rows when there are many,
  // else by pieces of the inner dim.
  constexpr int64_t kChunk = 16384;
  if (inner <= kChunk) {
    const int64_t per = std::max<int64_t>(1, kChunk / inner);
    const int64_t nchunks = (rows + per - 1) / per;
    tbb::parallel_for(int64_t(0), nchunks, [&](int64_t c) {
      run_rows(k, L, c * per, std::min(rows, (c + 1) * per), 0, inner);
    });
  } else {
    const int64_t per_row = (inner + kChunk - 1) / kChunk;
    tbb::parallel_for(int64_t(0), rows * per_row, [&](int64_t t) {
      const int64_t r = t / per_row, c = t % per_row;
      run_rows(k, L, r, r + 1, c * kChunk, std::min(inner, (c + 1) * kChunk));
    });
  }
  return total;
}
}  // namespace

namespace {
// The common vector case without the loop nest: every input either has one
// element (broadcast, stride 0) or one shared shape and C order with one
// element step (contiguous, or reversed like the x[::-1] of a cumsum's
// gradient), so the whole output is one run of `total` elements (the loop
// nest would merge all dims into the same single run; element-wise ops do
// not depend on how a run is split). Returns false, having done nothing,
// when it does not apply (then run_nest handles it, broadcast errors included).
bool run_flat(Frame& f, Outs& outs, const interp::ElemKernel* k, int ndim, int64_t parallel_threshold,
              int64_t& total) {
  const int nin = f.num_inputs(), nout = f.num_outputs(), nops = nin + nout;
  // Every output's bit fits Outs::by_kernel. A large fused node (a latent
  // per observation has 20 inputs and 8 outputs) must come this way: a
  // kernel with summed outputs runs its elements on the interpreter.
  if (nout > kMaxReducedOutput) return false;
  constexpr int kSmallOps = 64;
  interp::StridedPtr small[kSmallOps];
  thread_local std::vector<interp::StridedPtr> big;
  if (nops > kSmallOps && big.size() < static_cast<size_t>(nops)) big.resize(nops);
  interp::StridedPtr* ops = nops > kSmallOps ? big.data() : small;
  const Tensor* ref = nullptr;  // the first input of more than one element
  for (int i = 0; i < nin; ++i) {
    const Tensor& t = f.in(i);
    // The element step: the innermost stride of a dim longer than 1.
    int64_t step = 0;
    for (int d = ndim - 1; d >= 0 && step == 0; --d)
      if (t.shape.dims[d] > 1) step = t.strides[d];
    int64_t n = 1, st = step;
    bool linear = step != 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t v = t.shape.dims[d];
      linear = linear && (v == 1 || t.strides[d] == st);
      st *= v;
      n *= v;
    }
    if (n == 1) {
      ops[i] = {t.data, 0};
      continue;
    }
    if (!linear) return false;
    if (!ref) {
      ref = &t;
    } else {
      for (int d = 0; d < ndim; ++d)
        if (t.shape.dims[d] != ref->shape.dims[d]) return false;
    }
    ops[i] = {t.data, step};
  }
  if (!ref) return false;  // all one element: the caller's other paths
  total = ref->size();
  if (total >= parallel_threshold) return false;
  // Whole sums the kernel can make itself (a tier-2 JIT kernel): no elements.
  if (k->fn_sums && total >= 8 && !outs.reduced.empty()) {
    for (int o = 0; o < nout; ++o)
      if (outs.reduced[o] == 1 && k->summed[o]) outs.by_kernel |= 1u << o;
  }
  for (int o = 0; o < nout; ++o)
    ops[nin + o] = {outs.by_kernel >> o & 1 ? nullptr : outs.get(f, o, ref->shape), 1};
  if (outs.by_kernel) k->fn_sums(k, total, ops, ops + nin, outs.sum);
  else if (total > 0) k->run(total, ops, ops + nin);
  return true;
}
}  // namespace

void* fused_element(const Tensor& t, const FusedInput& fi) {
  if (!fi.pick) return t.size() == 1 ? t.data : nullptr;
  const int nd = static_cast<int>(fi.coord.size());
  if (t.ndim() != nd) return nullptr;
  int64_t off = 0;
  for (int d = 0; d < nd; ++d) {
    if (fi.coord[d] < 0 || fi.coord[d] >= t.dim(d)) return nullptr;
    off += fi.coord[d] * t.strides[d];
  }
  return static_cast<char*>(t.data) + off * static_cast<int64_t>(dtype_size(t.dtype));
}

// Static shapes promised one element (or a picked element in range); a graph
// whose other ops broke that promise gets an error here, not a stray read.
void* ElemwiseKernel::fused_input(Frame& f, int i) const {
  const Tensor& t = f.in(i);
  const FusedInput& fi = fused_in_[i];
  void* p = fused_element(t, fi);
  if (!p) [[unlikely]] {
    if (!fi.pick)
      f.fail("fused input " + std::to_string(i) + " has shape " + t.shape.str() +
             ", but its static shape says one element");
    f.fail("fused input " + std::to_string(i) + " has shape " + t.shape.str() +
           ", too small for the element its static shape promised");
  }
  return p;
}

void ElemwiseKernel::run_fused(Frame& f, const interp::ElemKernel* k) const {
  const int nin = f.num_inputs(), nout = f.num_outputs();
  const int ncomp = static_cast<int>(composite_.outputs.size()), nops = nin + ncomp;
  constexpr int kSmall = 64;
  interp::StridedPtr small[kSmall];
  thread_local std::vector<interp::StridedPtr> big;
  interp::StridedPtr* ops = small;
  if (nops > kSmall) {
    if (big.size() < static_cast<size_t>(nops)) big.resize(nops);
    ops = big.data();
  }
  for (int i = 0; i < nin; ++i) {
    const Tensor& t = f.in(i);
    // Inline: a 0-d or (1,) input (most); picks, other ranks and errors out of line.
    if (!fused_in_[i].pick && (t.shape.ndim == 0 || (t.shape.ndim == 1 && t.shape.dims[0] == 1)))
      ops[i] = {t.data, 0};
    else
      ops[i] = {fused_input(f, i), 0};
  }
  if (fused_dst_.empty()) {
    for (int o = 0; o < nout; ++o) ops[nin + o] = {f.alloc_out(o, fused_out_[o]).data, 0};
  } else {
    // Packed outputs (an absorbed Join / MakeVector): several scalar
    // outputs write elements of one tensor. Allocate each tensor once.
    interp::StridedPtr* outp = ops + nin;
    int o = -1;
    char* base = nullptr;
    size_t es = 0;
    for (int j = 0; j < ncomp; ++j) {
      const auto [to, elem] = fused_dst_[j];
      if (to != o) {
        o = to;
        Tensor& t = f.alloc_out(o, fused_out_[o]);
        base = static_cast<char*>(t.data);
        es = dtype_size(t.dtype);
      }
      outp[j] = {base + static_cast<size_t>(elem) * es, 0};
    }
  }
  k->run(1, ops, ops + nin);
}

void ElemwiseKernel::run_planned(Frame& f, interp::StridedPtr* ops, const Step& st) const {
  Hot hot(tier_.get(), sample_, f);
  hot.elements = 1;
  const interp::ElemKernel* k = active_.load(std::memory_order_seq_cst);
  uintptr_t low = 0;  // any live pointer not 8-byte aligned?
  const std::pair<int32_t, int64_t>* members = st.pick_members.data();
  for (const Step::PickRun& r : st.live_picks) {
    const Tensor& t = f.in(r.in);
    if (t.shape.ndim != 1 || t.shape.dims[0] < r.need) [[unlikely]] {
      for (int32_t m = r.first; m < r.last; ++m) ops[members[m].first].data = fused_input(f, members[m].first);
      continue;  // not reached: a vector too short fails in fused_input
    }
    char* base = static_cast<char*>(t.data);
    const int64_t step = t.strides[0] * static_cast<int64_t>(dtype_size(t.dtype));
    low |= reinterpret_cast<uintptr_t>(base) | static_cast<uintptr_t>(step);
    for (int32_t m = r.first; m < r.last; ++m) ops[members[m].first].data = base + members[m].second * step;
  }
  for (const int32_t i : st.live_in) {
    const Tensor& t = f.in(i);
    const FusedInput& fi = fused_in_[i];
    // Inline: a 0-d or (1,) input; picks of other ranks and errors out of
    // line (picks of a vector are the pick runs above).
    if (!fi.pick && (t.shape.ndim == 0 || (t.shape.ndim == 1 && t.shape.dims[0] == 1)))
      ops[i].data = t.data;
    else
      ops[i].data = fused_input(f, i);
    low |= reinterpret_cast<uintptr_t>(ops[i].data);
  }
  // Outputs (arena places) are aligned; inputs made by fused nodes too.
  if (k->fn_table && st.fixed_aligned && low % 8 == 0)
    k->fn_table(k, ops);
  else
    k->run(1, ops, ops + f.num_inputs());
}

void ElemwiseKernel::run(Frame& f) const {
  const int nin = f.num_inputs(), nout = f.num_outputs(), nops = nin + nout;
  Hot hot(tier_.get(), sample_, f);
  const interp::ElemKernel* k = active_.load(std::memory_order_seq_cst);
  if (!fused_out_.empty()) {
    hot.elements = 1;
    run_fused(f, k);
    return;
  }
  // One element: 0-d (most Composites of small models), or every dim
  // statically 1 (checked here: then the output is `ones_`). No loop nest.
  bool single = ndim_ == 0;
  if (all_ones_) {
    single = true;
    for (int i = 0; i < nin && single; ++i)
      for (int d = 0; d < ndim_; ++d) single = single && f.in(i).dim(d) == 1;
  }
  if (single) {
    constexpr int kSmall = 64;
    interp::StridedPtr small[kSmall];
    thread_local std::vector<interp::StridedPtr> big;
    interp::StridedPtr* ops = small;
    if (nops > kSmall) {
      big.resize(nops);
      ops = big.data();
    }
    for (int i = 0; i < nin; ++i) ops[i] = {f.in(i).data, 0};
    for (int o = 0; o < nout; ++o) ops[nin + o] = {f.alloc_out(o, ones_).data, 0};
    hot.elements = 1;
    k->run(1, ops, ops + nin);
    return;
  }
  if (quick_n_ && k->fn_sums && run_quick_sums(f, k)) {
    hot.elements = quick_n_;
    return;
  }
  if (row_sums_ && k->fn_row_sums) {
    const int64_t n = run_row_sums(f, k);
    if (n >= 0) {
      hot.elements = n;
      return;
    }
  }
  int64_t total = 0;
  Outs outs(reduced_);
  if (!run_flat(f, outs, k, ndim_, parallel_threshold_, total)) total = run_nest(f, outs, k, ndim_, parallel_threshold_);
  hot.elements = total;
  if (!reduced_.empty()) outs.finish(f, total);
}

// Each input one element or the whole static count in C order, every output
// summed by the kernel (ElemKernel::fn_sums); false, having done nothing,
// otherwise (the general path then names any mismatch).
bool ElemwiseKernel::run_quick_sums(Frame& f, const interp::ElemKernel* k) const {
  const int nin = f.num_inputs(), nout = f.num_outputs();
  interp::StridedPtr ops[kQuickIns + kMaxReducedOutput];
  bool full = false;  // some input has the whole count (else the call broadcasts to one element)
  for (int i = 0; i < nin; ++i) {
    const Tensor& t = f.in(i);
    int64_t st = 1;  // C-order strides over the dims longer than 1; st ends as the size
    for (int d = t.shape.ndim - 1; d >= 0; --d) {
      const int64_t v = t.shape.dims[d];
      if (v != 1 && t.strides[d] != st) return false;
      st *= v;
    }
    if (st == 1) ops[i] = {t.data, 0};
    else if (st == quick_n_) ops[i] = {t.data, 1}, full = true;
    else return false;
  }
  if (!full) return false;
  for (int o = 0; o < nout; ++o) {
    if (!k->summed[o]) return false;
    ops[nin + o] = {nullptr, 1};
  }
  double sums[kMaxReducedOutput];
  k->fn_sums(k, quick_n_, ops, ops + nin, sums);
  static const Shape scalar{};
  for (int o = 0; o < nout; ++o) *static_cast<double*>(f.alloc_out(o, scalar).data) = sums[o];
  return true;
}

// A 2-D node whose reduced outputs are row sums, through a kernel that makes
// them (ElemKernel::fn_row_sums): no packed copies of column inputs, no
// elements of the summed outputs. Returns the element count, or -1, with
// nothing published that the loop nest does not publish again, when the
// call does not fit.
int64_t ElemwiseKernel::run_row_sums(Frame& f, const interp::ElemKernel* k) const {
  const int nin = f.num_inputs(), nout = f.num_outputs();
  constexpr int kSmallOps = 64;
  if (nin + nout > kSmallOps || nout > kMaxReducedOutput) return -1;
  int64_t dims[2] = {1, 1};
  for (int i = 0; i < nin; ++i) {
    if (f.in(i).ndim() != 2) return -1;
    for (int d = 0; d < 2; ++d) {
      const int64_t s = f.in(i).dim(d);
      if (s == 1) continue;
      if (dims[d] != 1 && dims[d] != s) return -1;  // the loop nest names the mismatch
      dims[d] = s;
    }
  }
  const int64_t rows = dims[0], n = dims[1];
  if (rows * n >= parallel_threshold_) return -1;
  for (int o = 0; o < nout; ++o)
    if (reduced_[o] && !k->summed[o]) return -1;
  interp::RowPtr ops[kSmallOps];
  for (int i = 0; i < nin; ++i) {
    const Tensor& t = f.in(i);
    ops[i] = {t.data, t.dim(0) == 1 ? 0 : t.strides[0], t.dim(1) == 1 ? 0 : t.strides[1]};
  }
  double* sums[kMaxReducedOutput];
  const Shape full{2, {rows, n}}, kept{1, {rows}};
  for (int o = 0; o < nout; ++o) {
    if (reduced_[o]) {
      sums[o] = static_cast<double*>(f.alloc_out(o, kept).data);
      ops[nin + o] = {nullptr, 0, 0};
    } else {
      sums[o] = nullptr;
      ops[nin + o] = {f.alloc_out(o, full).data, n, 1};
    }
  }
  if (rows == 0) return 0;
  return k->fn_row_sums(k, rows, n, ops, ops + nin, sums) ? rows * n : -1;
}

// Declared static shapes must agree with the broadcast of the inputs' (only
// static 1s broadcast; -1 is unknown): a graph declaring (2,) for inputs of
// shape (1,) would otherwise load and give (1,) at run time.
void check_static_broadcast(NodeContext& ctx, int nd) {
  for (int d = 0; d < nd; ++d) {
    int64_t size = 1;  // the known non-1 size, or 1
    int from = -1;
    bool unknown = false;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const int64_t s = ctx.in(i).static_shape.dims[d];
      if (s < 0) unknown = true;
      if (s < 0 || s == 1) continue;
      if (from >= 0 && s != size)
        ctx.fail("inputs[" + std::to_string(i) + "]",
                 "static shape " + ctx.in(i).static_shape.str() + " does not broadcast with input " +
                     std::to_string(from) + "'s " + ctx.in(from).static_shape.str() + " at dim " +
                     std::to_string(d));
      size = s;
      from = i;
    }
    if (unknown && from < 0) continue;  // anything at run time
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      const int64_t s = ctx.out(o).static_shape.dims[d];
      if (s >= 0 && s != size)
        ctx.fail("outputs[" + std::to_string(o) + "]",
                 "static shape " + ctx.out(o).static_shape.str() + " but the inputs broadcast to " +
                     std::to_string(size) + " at dim " + std::to_string(d));
    }
  }
}

// Inputs of statically one element while the output is not (all 1s, it is a
// one-element node): every call broadcasts them.
static std::vector<bool> uniform_inputs(const NodeContext& ctx, int nd) {
  auto ones = [&](const Shape& s) {
    for (int d = 0; d < s.ndim; ++d)
      if (s.dims[d] != 1) return false;
    return true;
  };
  std::vector<bool> u;
  if (nd == 0 || ones(ctx.out(0).static_shape)) return u;
  for (int i = 0; i < ctx.num_inputs(); ++i) u.push_back(ones(ctx.in(i).static_shape));
  return u;
}


std::unique_ptr<OpKernel> make_elemwise(NodeContext& ctx) {
  if (const json& so = ctx.attr("scalar_op"); so.is_object() && so.value("op", json()) == "ScalarLoop") {
    auto k = make_scalar_loop(ctx);
    k->attach_tier();
    return k;
  }
  ctx.expect_inputs(1, -1);
  if (ctx.num_outputs() < 1) ctx.fail("outputs", "needs at least one output");
  const int nd = ctx.out(0).static_shape.ndim;
  std::vector<DType> ins, outs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.in(i).static_shape.ndim != nd)
      ctx.fail("inputs[" + std::to_string(i) + "]", "has " + std::to_string(ctx.in(i).static_shape.ndim) +
                                                        " dims, output has " + std::to_string(nd) +
                                                        " (Elemwise inputs are padded to equal rank)");
    ins.push_back(ctx.in(i).dtype);
  }
  for (int o = 0; o < ctx.num_outputs(); ++o) {
    if (ctx.out(o).static_shape.ndim != nd) ctx.fail("outputs[" + std::to_string(o) + "]", "rank differs");
    outs.push_back(ctx.out(o).dtype);
  }
  check_static_broadcast(ctx, nd);
  interp::Composite c = read_composite(ctx, ctx.attr("scalar_op"), ins, outs);
  std::shared_ptr<const interp::Interpreted> vm;
  try {
    vm = interp::Interpreted::compile(c);
  } catch (const std::exception& e) {
    ctx.fail("attrs.scalar_op", e.what());
  }
  auto k = std::make_unique<ElemwiseKernel>(std::move(c), std::move(vm), nd, ctx.options().parallel_threshold);
  k->set_static_output_shape(ctx.out(0).static_shape);
  k->set_uniform_inputs(uniform_inputs(ctx, nd));
  if (nd == 2) {
    std::vector<bool> col;
    for (int i = 0; i < ctx.num_inputs(); ++i) col.push_back(ctx.in(i).static_shape.dims[1] == 1);
    k->set_row_uniform_inputs(std::move(col));
  }
  k->attach_tier();
  return k;
}

}  // namespace ember
