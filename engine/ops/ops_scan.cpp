// Scan: PyTensor's loop op. The inner graph (attrs.inner, a graph document)
// is loaded as its own Program, so its nodes go through the same passes,
// interpreter and JIT tiers as the outer graph's; each step runs it on views
// of the outer buffers. Semantics follow PyTensor's Scan.perform: buffers
// of the tapped outputs start as copies of their outer inputs and are
// indexed modulo their length; nit-sot buffers are allocated at step 0.
//
// Outer inputs:  n_steps, sequences, mit-mot / mit-sot / sit-sot buffers,
//                untraced sit-sots, nit-sot lengths, non-sequences.
// Inner inputs:  one row per sequence, one per tap of each tapped output,
//                the untraced states, the non-sequences.
// Inner outputs: one per mit-mot output tap, one per mit-sot, sit-sot and
//                nit-sot, the untraced states, then the condition (while).
// Outer outputs: the tapped buffers, the nit-sot buffers, the untraced states.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/error.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/ops_common.hpp"
#include "engine/ops/workspace.hpp"

namespace ember {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

int64_t pymod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}

// pymod for the usual case of a tap no longer than the buffer, without a division.
inline int64_t wrap(int64_t a, int64_t b) {
  if (a < 0) a += b;
  else if (a >= b) a -= b;
  return a >= 0 && a < b ? a : pymod(a, b);
}

// dst = row r of t's first axis, writing only the used dims (a Tensor is
// 272 bytes; this runs per input per step).
void set_row(Tensor& dst, const Tensor& t, int64_t r) {
  dst.dtype = t.dtype;
  dst.data = static_cast<char*>(t.data) + r * t.strides[0] * static_cast<int64_t>(dtype_size(t.dtype));
  dst.shape.ndim = t.ndim() - 1;
  for (int d = 1; d < t.ndim(); ++d) {
    dst.shape.dims[d - 1] = t.dim(d);
    dst.strides[d - 1] = t.strides[d];
  }
}

// Tensor::is_contiguous inline: a step's outputs are mostly 0-d or short.
inline bool contiguous(const Tensor& t) {
  int64_t st = 1;
  for (int d = t.ndim() - 1; d >= 0; --d) {
    if (t.dim(d) != 1 && t.strides[d] != st) return false;
    st *= t.dim(d);
  }
  return true;
}

bool same_shape(const Shape& a, const Shape& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.dims[d] != b.dims[d]) return false;
  return true;
}

struct Layout {
  int n_seqs = 0, n_mit_mot = 0, n_mit_sot = 0, n_sit_sot = 0, n_nit_sot = 0, n_untraced = 0, n_non_seqs = 0;
  bool as_while = false;
  std::vector<std::vector<int64_t>> in_taps;   // per tapped output: mit-mot, mit-sot, sit-sot
  std::vector<std::vector<int64_t>> out_taps;  // per mit-mot: the taps it writes
  std::vector<int64_t> mintap;                 // per tapped and nit-sot output
  std::vector<int> nit_ndim;                   // rank of each nit-sot output
  // in_taps and out_taps flattened in inner-argument / inner-output order:
  // (tapped output, tap), so a step walks one array instead of nested lists.
  std::vector<std::pair<int, int64_t>> arg_taps, mit_mot_puts;
  int n_tap() const { return n_mit_mot + n_mit_sot + n_sit_sot; }
  int n_mit_mot_outs() const {
    int n = 0;
    for (const auto& t : out_taps) n += static_cast<int>(t.size());
    return n;
  }
  // First outer input of each group.
  int seq0() const { return 1; }
  int tap0() const { return 1 + n_seqs; }
  int untraced0() const { return tap0() + n_tap(); }
  int nit0() const { return untraced0() + n_untraced; }
  int non_seq0() const { return nit0() + n_nit_sot; }
};

// A thread's inner workspace and per-call scratch, pooled by the kernel.
// The inner arguments are bound in the workspace's own values (Subprogram::
// arg): per step only the data pointers of sequence rows and taps move.
struct InnerState {
  std::shared_ptr<Workspace> ws;
  std::vector<Tensor*> args;        // the inner workspace's argument values
  std::vector<const Tensor*> vals;  // the inner workspace's output values
  std::vector<const Tensor*> res;   // this step's outputs: vals, or a staged copy
  std::vector<Buffer> stage;  // copies of inner outputs that alias buffers about to be written
  std::vector<Tensor> staged;
  std::vector<int64_t> store, pos;  // per traced output: buffer length, current entry
  std::vector<int64_t> row_bytes;   // per sequence, then per tapped output: bytes between entries
  std::vector<char*> seq_base;      // per sequence: its first row
  std::vector<Tensor*> outp;
  std::vector<std::pair<const char*, const char*>> extent;  // set_extents
  Buffer tmp;  // rotation of circular buffers
};

// Brackets a call's steps in the inner workspace's epoch (Subprogram::begin_loop).
struct LoopGuard {
  const Subprogram& sub;
  Workspace& ws;
  LoopGuard(const Subprogram& s, Workspace& w) : sub(s), ws(w) { sub.begin_loop(ws); }
  ~LoopGuard() { sub.end_loop(ws); }
  LoopGuard(const LoopGuard&) = delete;
  LoopGuard& operator=(const LoopGuard&) = delete;
};

class ScanK final : public OpKernel {
 public:
  ScanK(Layout l, std::unique_ptr<Subprogram> inner) : l_(std::move(l)), inner_(std::move(inner)) {
    for (size_t k = 0; k < inner_->outputs().size(); ++k)
      if (inner_->may_view_args(k)) views_.push_back(static_cast<int>(k));
  }

  void run(Frame& f) const override {
    std::unique_ptr<InnerState> st = acquire();
    try {
      run_with(f, *st);
    } catch (...) {
      release(std::move(st));
      throw;
    }
    release(std::move(st));
  }

 private:
  std::unique_ptr<InnerState> acquire() const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!pool_.empty()) {
        auto s = std::move(pool_.back());
        pool_.pop_back();
        return s;
      }
    }
    auto s = std::make_unique<InnerState>();
    s->ws = inner_->make_workspace();
    for (size_t k = 0; k < inner_->args().size(); ++k) s->args.push_back(&inner_->arg(*s->ws, k));
    for (size_t k = 0; k < inner_->outputs().size(); ++k) s->vals.push_back(&inner_->out(*s->ws, k));
    s->res = s->vals;  // the outputs that cannot view an argument always read in place
    s->staged.resize(s->vals.size());
    s->stage.resize(s->vals.size());
    return s;
  }
  void release(std::unique_ptr<InnerState> s) const {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.push_back(std::move(s));
  }

  void run_with(Frame& f, InnerState& st) const {
    const Layout& l = l_;
    const int64_t n_steps = scalar_int(f.in(0));
    if (n_steps < 0) f.fail("asked to run for a negative number of steps (" + S(n_steps) + ")");
    for (int s = 0; s < l.n_seqs; ++s) {
      const Tensor& seq = f.in(l.seq0() + s);
      if (seq.dim(0) < n_steps)
        f.fail("sequence " + S(s) + " has " + S(seq.dim(0)) + " entries, fewer than the " + S(n_steps) +
               " steps");
    }
    const int n_tap = l.n_tap(), n_traced = n_tap + l.n_nit_sot;
    std::vector<int64_t>& store = st.store;
    std::vector<int64_t>& pos = st.pos;
    store.assign(static_cast<size_t>(n_traced), 0);
    pos.assign(static_cast<size_t>(n_traced), 0);
    // Tapped buffers start as copies of their initial values.
    for (int j = 0; j < n_tap; ++j) {
      const Tensor& init = f.in(l.tap0() + j);
      if (init.ndim() < 1) f.fail("input " + S(l.tap0() + j) + " (an output's initial buffer) must have a leading axis");
      Tensor& out = f.alloc_out(j, init.shape);
      copy_convert(out, init);
      store[j] = init.dim(0);
    }
    for (int j = 0; j < l.n_nit_sot; ++j) {
      store[n_tap + j] = scalar_int(f.in(l.nit0() + j));
      if (store[n_tap + j] < 0) f.fail("nit-sot output " + S(j) + " has negative length " + S(store[n_tap + j]));
    }
    const int untraced_out0 = n_traced;
    for (int j = 0; j < l.n_untraced; ++j) copy_out(f, untraced_out0 + j, f.in(l.untraced0() + j));
    if (n_steps == 0) {
      for (int j = 0; j < l.n_nit_sot; ++j) {
        Shape s;
        s.ndim = l.nit_ndim[j];
        for (int d = 0; d < s.ndim; ++d) s.dims[d] = 0;
        f.alloc_out(n_tap + j, s);
      }
      return;
    }
    for (int j = 0; j < n_traced; ++j) {
      if (store[j] == 0) f.fail("output " + S(j) + " has an empty buffer for " + S(n_steps) + " steps");
      pos[j] = pymod(-l.mintap[j], store[j]);
    }

    std::vector<Tensor*>& outp = st.outp;  // the outer outputs, looked up once
    outp.resize(static_cast<size_t>(f.num_outputs()));
    for (int j = 0; j < f.num_outputs(); ++j) outp[j] = &f.out(j);
    // Shapes, strides and non-sequences bound once; rows move by row_bytes.
    std::vector<int64_t>& row_bytes = st.row_bytes;
    row_bytes.clear();
    {
      int a = 0;
      for (int s = 0; s < l.n_seqs; ++s) {
        const Tensor& seq = f.in(l.seq0() + s);
        set_row(*st.args[a++], seq, 0);
        row_bytes.push_back(seq.strides[0] * static_cast<int64_t>(dtype_size(seq.dtype)));
      }
      for (int j = 0; j < n_tap; ++j) {
        const Tensor& buf = *outp[j];
        for (size_t t = 0; t < l.in_taps[j].size(); ++t) set_row(*st.args[a++], buf, 0);
        row_bytes.push_back(buf.strides[0] * static_cast<int64_t>(dtype_size(buf.dtype)));
      }
      a += l.n_untraced;
      for (int k = 0; k < l.n_non_seqs; ++k) st.args[a++]->set_view(f.in(l.non_seq0() + k));
    }
    const int untraced_arg0 = static_cast<int>(st.args.size()) - l.n_non_seqs - l.n_untraced;
    set_extents(st);

    std::vector<char*>& seq_base = st.seq_base;
    seq_base.clear();
    for (int s = 0; s < l.n_seqs; ++s) seq_base.push_back(static_cast<char*>(f.in(l.seq0() + s).data));
    Tensor* const* const args = st.args.data();
    Tensor* const* const tap_args = args + l.n_seqs;
    const int64_t* const tap_rb = row_bytes.data() + l.n_seqs;

    LoopGuard loop(*inner_, *st.ws);
    int64_t i = 0;
    for (bool go = true; i < n_steps && go; ++i) {
      for (int s = 0; s < l.n_seqs; ++s) args[s]->data = seq_base[s] + i * row_bytes[s];
      for (size_t a = 0; a < l.arg_taps.size(); ++a) {
        const auto [j, t] = l.arg_taps[a];
        tap_args[a]->data = static_cast<char*>(outp[j]->data) + wrap(pos[j] + t, store[j]) * tap_rb[j];
      }
      for (int j = 0; j < l.n_untraced; ++j) args[untraced_arg0 + j]->set_view(*outp[untraced_out0 + j]);

      try {
        // Rows keep their shapes from step to step; untraced states may not.
        const size_t k0 = i == 0 ? 0 : static_cast<size_t>(untraced_arg0);
        const size_t k1 = i == 0 ? st.args.size() : k0 + static_cast<size_t>(l.n_untraced);
        for (size_t k = k0; k < k1; ++k) inner_->check_arg(*st.ws, k);
        inner_->run_bound(*st.ws);
      } catch (const CallError& e) {
        f.fail("step " + S(i) + ": " + e.what());
      }
      stage_aliases(st);
      const std::vector<const Tensor*>& out = st.res;

      int o = 0;
      for (const auto& [j, t] : l.mit_mot_puts) {
        const int64_t r = pos[j] + t;
        if (r < 0 || r >= store[j])
          f.fail("step " + S(i) + ": mit-mot output " + S(j) + " writes entry " + S(r) + " of a buffer of " +
                 S(store[j]));
        put_row(f, i, *outp[j], r, *out[o++], j);
      }
      for (int j = l.n_mit_mot; j < n_tap; ++j) put_row(f, i, *outp[j], pos[j], *out[o++], j);
      for (int j = 0; j < l.n_nit_sot; ++j) {
        const Tensor& v = *out[o++];
        const int oj = n_tap + j;
        if (i == 0) {
          Shape s;
          s.ndim = v.ndim() + 1;
          s.dims[0] = store[oj];
          for (int d = 0; d < v.ndim(); ++d) s.dims[d + 1] = v.dim(d);
          f.alloc_out(oj, s);
        }
        put_row(f, i, *outp[oj], pos[oj], v, oj);
      }
      for (int j = 0; j < l.n_untraced; ++j) copy_out(f, untraced_out0 + j, *out[o++]);
      if (l.n_untraced) set_extents(st);  // copy_out may have moved them
      if (l.as_while) go = scalar_double(*out[o]) == 0;
      for (int j = 0; j < n_traced; ++j) pos[j] = pos[j] + 1 == store[j] ? 0 : pos[j] + 1;
    }
    finish_buffers(f, st, i, n_steps);
  }

  // Inner outputs that are views of memory this step writes (an input row
  // passed through, say) are copied aside first, as PyTensor's own
  // separate output storage would have them. Outputs the inner program
  // computes into its own memory (most) cannot be such views.
  void stage_aliases(InnerState& st) const {
    for (const int k : views_) {
      const Tensor& v = *st.vals[k];
      const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
      int64_t lo_off = 0, hi_off = 0;  // the view's extent in elements, strides of any sign
      for (int d = 0; d < v.ndim(); ++d) {
        const int64_t span = (v.dim(d) - 1) * v.strides[d];
        (span < 0 ? lo_off : hi_off) += span;
      }
      const char* p_lo = static_cast<const char*>(v.data) + lo_off * es;
      const char* p_hi = static_cast<const char*>(v.data) + (hi_off + 1) * es;
      bool alias = false;
      for (size_t j = 0; j < st.extent.size() && !alias && v.size() > 0; ++j)
        alias = p_lo < st.extent[j].second && st.extent[j].first < p_hi;  // overlaps a buffer's extent
      if (!alias) {
        st.res[k] = &v;
        continue;
      }
      st.staged[k].set_contiguous(v.dtype, v.shape, st.stage[k].reserve(static_cast<size_t>(v.size() * es)));
      copy_convert(st.staged[k], v);
      st.res[k] = &st.staged[k];
    }
  }

  // The memory this step may write that inner inputs may view: the tapped
  // buffers and the untraced states (nit-sot buffers are never inner inputs).
  void set_extents(InnerState& st) const {
    st.extent.clear();
    const int n_tap = l_.n_tap(), u0 = n_tap + l_.n_nit_sot;
    for (int j = 0; j < static_cast<int>(st.outp.size()); ++j) {
      if (j >= n_tap && j < u0) continue;
      const Tensor& b = *st.outp[j];
      const char* lo = static_cast<const char*>(b.data);
      st.extent.emplace_back(lo, lo + static_cast<size_t>(b.size()) * dtype_size(b.dtype));
    }
  }

  // Out of line: its Tensor makes a frame of several hundred bytes that
  // each step's common case (a contiguous row of the same dtype) need not carry.
  [[gnu::noinline, gnu::cold]] static void bad_row(Frame& f, int64_t step, const Tensor& buf, const Tensor& v, int out) {
    Tensor dst;
    set_row(dst, buf, 0);
    f.fail("step " + S(step) + ": output " + S(out) + " has shape " + v.shape.str() +
           " but its buffer holds entries of " + dst.shape.str());
  }
  static void put_row(Frame& f, int64_t step, const Tensor& buf, int64_t r, const Tensor& v, int out) {
    bool same = v.ndim() == buf.ndim() - 1;
    for (int d = 0; same && d < v.ndim(); ++d) same = v.dim(d) == buf.dim(d + 1);
    if (!same) [[unlikely]]
      bad_row(f, step, buf, v, out);
    const size_t es = dtype_size(buf.dtype);
    char* to = static_cast<char*>(buf.data) + r * buf.strides[0] * static_cast<int64_t>(es);
    if (to == v.data) return;
    if (v.dtype == buf.dtype && contiguous(v)) {  // buffers are C-contiguous (alloc_out)
      const size_t n = static_cast<size_t>(v.size()) * es;
      if (n == 8) std::memcpy(to, v.data, 8);  // a scalar: a move, not a call
      else std::memcpy(to, v.data, n);
      return;
    }
    Tensor dst;
    set_row(dst, buf, r);
    copy_convert(dst, v);
  }

  static void copy_out(Frame& f, int o, const Tensor& v) {
    if (f.out(o).data == v.data && same_shape(f.out(o).shape, v.shape)) return;
    Tensor& dst = f.alloc_out(o, v.shape);
    copy_convert(dst, v);
  }

  // Step 6 of Scan.perform: circular buffers rotated oldest first, unused
  // tails zeroed, and a while loop's outputs cut to the steps it ran.
  void finish_buffers(Frame& f, InnerState& st, int64_t steps_run, int64_t n_steps) const {
    const std::vector<int64_t>&store = st.store, &pos = st.pos;
    const int n_traced = static_cast<int>(store.size());
    for (int j = l_.n_mit_mot; j < n_traced; ++j) {
      Tensor& buf = f.out(j);
      const int64_t used = steps_run - l_.mintap[j];
      const size_t row_bytes = static_cast<size_t>(buf.dim(0) ? buf.size() / buf.dim(0) : 0) * dtype_size(buf.dtype);
      char* base = static_cast<char*>(buf.data);
      if (store[j] < used && pos[j] != 0) {
        const size_t total = row_bytes * static_cast<size_t>(store[j]), head = row_bytes * static_cast<size_t>(pos[j]);
        char* tmp = static_cast<char*>(st.tmp.reserve(std::max<size_t>(total, 1)));
        std::memcpy(tmp, base + head, total - head);
        std::memcpy(tmp + (total - head), base, head);
        std::memcpy(base, tmp, total);
      } else if (store[j] > used) {
        std::memset(base + row_bytes * static_cast<size_t>(used), 0, row_bytes * static_cast<size_t>(store[j] - used));
        if (steps_run < n_steps) buf.shape.dims[0] = store[j] - (n_steps - steps_run);
      }
    }
  }

  Layout l_;
  std::unique_ptr<Subprogram> inner_;
  std::vector<int> views_;  // the inner outputs that Subprogram::may_view_args
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<InnerState>> pool_;
};

std::vector<std::vector<int64_t>> tap_lists(const NodeContext& ctx, const char* name) {
  std::vector<std::vector<int64_t>> out;
  if (!ctx.has_attr(name)) return out;
  const nlohmann::json& a = ctx.attr(name);
  if (!a.is_array()) ctx.fail(std::string("attrs.") + name, "must be a list of lists of integers");
  for (const auto& taps : a) {
    if (!taps.is_array() || taps.empty()) ctx.fail(std::string("attrs.") + name, "each entry must be a non-empty list of integers");
    std::vector<int64_t> t;
    for (const auto& x : taps) {
      if (!x.is_number_integer()) ctx.fail(std::string("attrs.") + name, "taps must be integers");
      t.push_back(x.get<int64_t>());
    }
    out.push_back(std::move(t));
  }
  return out;
}

int count_attr(const NodeContext& ctx, const char* name) {
  const int64_t v = ctx.attr_int(name, 0);
  if (v < 0 || v > 1 << 20) ctx.fail(std::string("attrs.") + name, "must be a count, got " + S(v));
  return static_cast<int>(v);
}

// Inner variable `iv` must be the outer `ov` with `drop` leading axes removed.
void expect_like(const NodeContext& ctx, const VarSpec& iv, const VarSpec& ov, int drop, const std::string& what) {
  if (iv.dtype != ov.dtype)
    ctx.fail("attrs.inner", what + ": the inner graph has dtype " + std::string(dtype_name(iv.dtype)) +
                                ", the outer " + std::string(dtype_name(ov.dtype)));
  if (iv.static_shape.ndim + drop != ov.static_shape.ndim)
    ctx.fail("attrs.inner", what + ": the inner graph has rank " + S(iv.static_shape.ndim) + ", the outer " +
                                S(ov.static_shape.ndim) + (drop ? " (expected one more)" : ""));
}

}  // namespace

std::unique_ptr<OpKernel> make_scan(NodeContext& ctx) {
  Layout l;
  l.n_seqs = count_attr(ctx, "n_seqs");
  l.n_nit_sot = count_attr(ctx, "n_nit_sot");
  l.n_untraced = count_attr(ctx, "n_untraced_sit_sot");
  l.n_non_seqs = count_attr(ctx, "n_non_seqs");
  l.as_while = ctx.attr_bool("as_while", false);
  const auto mit_mot_in = tap_lists(ctx, "mit_mot_in_slices");
  l.out_taps = tap_lists(ctx, "mit_mot_out_slices");
  const auto mit_sot = tap_lists(ctx, "mit_sot_in_slices");
  const auto sit_sot = tap_lists(ctx, "sit_sot_in_slices");
  if (l.out_taps.size() != mit_mot_in.size())
    ctx.fail("attrs.mit_mot_out_slices", "has " + S(l.out_taps.size()) + " entries, mit_mot_in_slices " +
                                             S(mit_mot_in.size()));
  for (const auto& t : sit_sot)
    if (t.size() != 1 || t[0] != -1) ctx.fail("attrs.sit_sot_in_slices", "each entry must be [-1]");
  for (const auto& t : mit_sot)
    for (int64_t x : t)
      if (x >= 0) ctx.fail("attrs.mit_sot_in_slices", "taps must be negative, got " + S(x));
  l.n_mit_mot = static_cast<int>(mit_mot_in.size());
  l.n_mit_sot = static_cast<int>(mit_sot.size());
  l.n_sit_sot = static_cast<int>(sit_sot.size());
  for (const auto* g : {&mit_mot_in, &mit_sot, &sit_sot})
    for (const auto& t : *g) {
      l.in_taps.push_back(t);
      l.mintap.push_back(*std::min_element(t.begin(), t.end()));
    }
  for (int j = 0; j < l.n_nit_sot; ++j) l.mintap.push_back(0);
  for (size_t j = 0; j < l.in_taps.size(); ++j)
    for (int64_t t : l.in_taps[j]) l.arg_taps.emplace_back(static_cast<int>(j), t);
  for (size_t j = 0; j < l.out_taps.size(); ++j)
    for (int64_t t : l.out_taps[j]) l.mit_mot_puts.emplace_back(static_cast<int>(j), t);

  const int n_tap = l.n_tap();
  ctx.expect_inputs(l.non_seq0() + l.n_non_seqs);
  ctx.expect_outputs(n_tap + l.n_nit_sot + l.n_untraced);
  expect_int_scalar_input(ctx, 0, "inputs");
  for (int j = 0; j < l.n_nit_sot; ++j) l.nit_ndim.push_back(ctx.out(n_tap + j).static_shape.ndim);
  for (int j = 0; j < l.n_nit_sot; ++j) expect_int_scalar_input(ctx, l.nit0() + j, "inputs");
  for (int s = 0; s < l.n_seqs; ++s)
    if (ctx.in(l.seq0() + s).static_shape.ndim < 1) ctx.fail("inputs", "sequence " + S(s) + " must have a leading axis");

  const nlohmann::json& doc = ctx.attr("inner");
  if (!doc.is_object()) ctx.fail("attrs.inner", "must be a graph document (an object)");
  Graph g;
  try {
    g = Graph::parse(doc.dump(), nullptr, 0, ctx.where() + " inner graph");
  } catch (const LoadError& e) {
    ctx.fail("attrs.inner", e.what());
  }
  for (const InputSpec& in : g.inputs)
    if (in.shared) ctx.fail("attrs.inner", "the inner graph may not have shared inputs");
  std::unique_ptr<Subprogram> inner;
  try {
    inner = ctx.load_subprogram(std::move(g));
  } catch (const LoadError& e) {
    ctx.fail("attrs.inner", e.what());
  }

  // The inner signature against the outer node.
  size_t n_in = static_cast<size_t>(l.n_seqs + l.n_untraced + l.n_non_seqs);
  for (const auto& t : l.in_taps) n_in += t.size();
  const size_t n_out = static_cast<size_t>(l.n_mit_mot_outs() + l.n_mit_sot + l.n_sit_sot + l.n_nit_sot +
                                           l.n_untraced + (l.as_while ? 1 : 0));
  const Graph& ig = inner->graph();
  if (inner->args().size() != n_in)
    ctx.fail("attrs.inner", "the inner graph has " + S(inner->args().size()) + " inputs, the Scan's layout needs " + S(n_in));
  if (inner->outputs().size() != n_out)
    ctx.fail("attrs.inner", "the inner graph has " + S(inner->outputs().size()) + " outputs, the Scan's layout needs " +
                                S(n_out));
  auto in_var = [&](size_t k) -> const VarSpec& { return ig.vars[inner->args()[k].var]; };
  auto out_var = [&](size_t k) -> const VarSpec& { return ig.vars[inner->outputs()[k].var]; };
  size_t a = 0;
  for (int s = 0; s < l.n_seqs; ++s) expect_like(ctx, in_var(a++), ctx.in(l.seq0() + s), 1, "sequence " + S(s));
  for (int j = 0; j < n_tap; ++j)
    for (size_t t = 0; t < l.in_taps[j].size(); ++t) expect_like(ctx, in_var(a++), ctx.in(l.tap0() + j), 1, "output " + S(j) + "'s tap");
  for (int j = 0; j < l.n_untraced; ++j) expect_like(ctx, in_var(a++), ctx.in(l.untraced0() + j), 0, "untraced state " + S(j));
  for (int k = 0; k < l.n_non_seqs; ++k) expect_like(ctx, in_var(a++), ctx.in(l.non_seq0() + k), 0, "non-sequence " + S(k));
  size_t o = 0;
  for (int j = 0; j < l.n_mit_mot; ++j)
    for (size_t t = 0; t < l.out_taps[j].size(); ++t) expect_like(ctx, out_var(o++), ctx.out(j), 1, "output " + S(j));
  for (int j = l.n_mit_mot; j < n_tap + l.n_nit_sot; ++j) expect_like(ctx, out_var(o++), ctx.out(j), 1, "output " + S(j));
  for (int j = 0; j < l.n_untraced; ++j) expect_like(ctx, out_var(o++), ctx.out(n_tap + l.n_nit_sot + j), 0, "untraced state " + S(j));
  if (l.as_while && out_var(o).static_shape.ndim != 0) ctx.fail("attrs.inner", "the while condition must be 0-d");
  for (int j = 0; j < n_tap; ++j) {
    expect_like(ctx, ctx.out(j), ctx.in(l.tap0() + j), 0, "output " + S(j) + " and its initial buffer");
  }
  return std::make_unique<ScanK>(std::move(l), std::move(inner));
}

}  // namespace ember
