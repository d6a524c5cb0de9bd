#include "tools/differential.hpp"

#include <array>
#include <cinttypes>
#include <cmath>
#include <cstring>

#include "engine/ops/elemwise.hpp"
#include "engine/program/program_impl.hpp"
#include "engine/ops/scalar_loop_kernel.hpp"
#include "interp/vm.hpp"
#if defined(EMBER_WITH_JIT) && __has_include("jit/jit.hpp")
#include "jit/jit.hpp"
#endif

namespace ember::fuzz {

using interp::Composite;
using interp::StridedPtr;

bool same_value(DType dt, const void* a, const void* b) {
  if (dt == DType::Float64) {
    double x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (std::isnan(x) && std::isnan(y)) return true;
  } else if (dt == DType::Float32) {
    float x, y;
    std::memcpy(&x, a, 4);
    std::memcpy(&y, b, 4);
    if (std::isnan(x) && std::isnan(y)) return true;
  }
  return std::memcmp(a, b, dtype_size(dt)) == 0;
}

namespace {

std::string show(DType dt, const void* p) {
  char buf[80];
  dtype_dispatch(dt, [&](auto z) {
    using T = decltype(z);
    T v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::is_floating_point_v<T>) std::snprintf(buf, sizeof buf, "%.17g (%a)", double(v), double(v));
    else if constexpr (std::is_same_v<T, bool>)  // may be an unwritten (poisoned) byte
      std::snprintf(buf, sizeof buf, "%u", unsigned(*static_cast<const uint8_t*>(p)));
    else std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(v));
  });
  return std::string(buf) + " " + std::string(dtype_name(dt));
}

std::vector<DType> output_dtypes(const Composite& c) {
  std::vector<DType> r;
  for (int32_t o : c.outputs) r.push_back(c.value_dtype(o));
  return r;
}

std::vector<Array> fresh_outputs(const Composite& c, int64_t n) {
  std::vector<Array> r;
  Shape s;
  s.ndim = 1;
  s.dims[0] = n;
  for (DType t : output_dtypes(c)) {
    r.push_back(Array::empty(t, s));
    // Poison, so an element a path forgets to write shows up as a mismatch.
    std::memset(r.back().t.data, 0xA5, static_cast<size_t>(n) * dtype_size(t));
  }
  return r;
}

char* elem(const Array& a, int64_t i) { return static_cast<char*>(a.t.data) + i * int64_t(dtype_size(a.t.dtype)); }

// Compares `got` against `want` element by element; names the first difference.
bool compare(const DiffCase& dc, const std::vector<Array>& want, const std::vector<Array>& got,
             const std::string& path, DiffResult& r) {
  const char* ref = dc.loop ? "the per-element reference" : "vector path";
  if (got.size() != want.size()) {
    r.ok = false;
    r.message = path + ": " + std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
    return false;
  }
  for (size_t k = 0; k < want.size(); ++k) {
    const DType dt = want[k].t.dtype;
    if (got[k].t.dtype != dt || got[k].size() != want[k].size()) {
      r.ok = false;
      r.message = path + ": output " + std::to_string(k) + " is " + std::string(dtype_name(got[k].t.dtype)) + " " +
                  got[k].t.shape.str() + ", expected " + std::string(dtype_name(dt)) + " " + want[k].t.shape.str();
      return false;
    }
    for (int64_t i = 0; i < want[k].size(); ++i) {
      if (same_value(dt, elem(want[k], i), elem(got[k], i))) continue;
      r.ok = false;
      r.message = path + ": output " + std::to_string(k) + " element " + std::to_string(i) + " is " +
                  show(dt, elem(got[k], i)) + ", " + ref + " gives " + show(dt, elem(want[k], i)) + "; inputs:";
      for (size_t j = 0; j < dc.inputs.size(); ++j) r.message += " " + show(dc.inputs[j].t.dtype, elem(dc.inputs[j], i));
      return false;
    }
  }
  return true;
}

void run_contiguous(const interp::ElemKernel& k, const DiffCase& dc, const std::vector<Array>& out, int64_t lo,
                    int64_t len) {
  std::vector<StridedPtr> in, o;
  for (const Array& a : dc.inputs) in.push_back({elem(a, lo), 1});
  for (const Array& a : out) o.push_back({elem(a, lo), 1});
  k.run(len, in.data(), o.data());
}

std::vector<Array> run_vector(const interp::ElemKernel& k, const DiffCase& dc) {
  auto out = fresh_outputs(dc.c, dc.n());
  run_contiguous(k, dc, out, 0, dc.n());
  return out;
}

std::vector<Array> run_scalar(const interp::ElemKernel& k, const DiffCase& dc) {
  auto out = fresh_outputs(dc.c, dc.n());
  for (int64_t i = 0; i < dc.n(); ++i) run_contiguous(k, dc, out, i, 1);
  return out;
}

std::vector<Array> run_chunked(const interp::ElemKernel& k, const DiffCase& dc, Rng& rng) {
  auto out = fresh_outputs(dc.c, dc.n());
  for (int64_t i = 0; i < dc.n();) {
    const int64_t len = std::min<int64_t>(dc.n() - i, std::uniform_int_distribution<int64_t>(1, 37)(rng) *
                                                          (rng() % 4 == 0 ? 29 : 1));
    run_contiguous(k, dc, out, i, len);
    i += len;
  }
  return out;
}

// Inputs strided by 2, reversed, or (when broadcast) stride 0; outputs too.
std::vector<Array> run_strided(const interp::ElemKernel& k, const DiffCase& dc, Rng& rng) {
  const int64_t n = dc.n();
  std::vector<Array> keep;
  std::vector<StridedPtr> in, o;
  auto layout = [&](DType dt, int mode) -> std::pair<Array, StridedPtr> {
    Shape s;
    s.ndim = 1;
    s.dims[0] = 2 * n + 1;
    Array buf = Array::empty(dt, s);
    std::memset(buf.t.data, 0xA5, static_cast<size_t>(s.dims[0]) * dtype_size(dt));  // poison
    if (mode == 0) return {buf, {elem(buf, 0), 2}};
    return {buf, {elem(buf, n - 1), -1}};
  };
  for (size_t j = 0; j < dc.inputs.size(); ++j) {
    const Array& a = dc.inputs[j];
    const DType dt = a.t.dtype;
    const size_t es = dtype_size(dt);
    if (dc.broadcast[j] && rng() % 2) {
      in.push_back({a.t.data, 0});
      continue;
    }
    auto [buf, p] = layout(dt, static_cast<int>(rng() % 2));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(static_cast<char*>(p.data) + i * p.stride * int64_t(es), elem(a, i), es);
    keep.push_back(buf);
    in.push_back(p);
  }
  std::vector<std::pair<Array, StridedPtr>> outs;
  for (DType dt : output_dtypes(dc.c)) {
    outs.push_back(layout(dt, static_cast<int>(rng() % 2)));
    o.push_back(outs.back().second);
  }
  k.run(n, in.data(), o.data());
  auto res = fresh_outputs(dc.c, n);
  for (size_t q = 0; q < outs.size(); ++q) {
    const size_t es = dtype_size(res[q].t.dtype);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(elem(res[q], i), static_cast<char*>(o[q].data) + i * o[q].stride * int64_t(es), es);
  }
  return res;
}

}  // namespace

#if defined(EMBER_WITH_JIT) && __has_include("jit/jit.hpp")
namespace {
// Keeps the interpreter (whose bytecode the JIT compiled) alive with the code.
struct JitTier {
  std::shared_ptr<const interp::Interpreted> vm;
  std::unique_ptr<jit::JitKernel> kernel;
};
}  // namespace

std::vector<NamedKernel> jit_tiers(const Composite& c) {
  std::vector<NamedKernel> r;
  if (!jit::available()) return r;
  auto vm = interp::Interpreted::compile(c);
  const interp::Bytecode& bc = vm->bytecode();
  const int n = static_cast<int>(bc.code.size());
  // Tier 1, tier 2, and tier 2 compiled in two pieces (as the compile
  // service splits large Composites).
  for (auto [tier, pieces] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{2, 2}}) {
    if (pieces > n) continue;
    std::vector<jit::Piece> ps;
    for (int k = 0; k < pieces; ++k) ps.push_back(jit::compile_chunk(bc, n * k / pieces, n * (k + 1) / pieces, tier));
    auto holder = std::make_shared<JitTier>();
    holder->vm = vm;
    holder->kernel = std::make_unique<jit::JitKernel>(bc, std::move(ps), tier);
    r.push_back({"jit tier " + std::to_string(tier) + (pieces > 1 ? " in 2 pieces" : ""),
                 std::shared_ptr<const interp::ElemKernel>(holder, holder->kernel.get())});
  }
  return r;
}
#else
std::vector<NamedKernel> jit_tiers(const Composite& c) {
  // No JIT in this build (EMBER_WITH_JIT off, or jit/jit.hpp not there yet).
  (void)c;
  return {};
}
#endif

namespace {

// Elements in a case: mostly under one VM batch, sometimes past a block.
// The draws' order is part of a seed's meaning: keep it.
int64_t random_count(Rng& rng, int64_t big_lo, int64_t big_span) {
  const int r = static_cast<int>(rng() % 10);
  return r < 6   ? 1 + static_cast<int64_t>(rng() % 16)
         : r < 9 ? 17 + static_cast<int64_t>(rng() % 64)
                 : big_lo + static_cast<int64_t>(rng() % big_span);
}

// Values for each of the Composite's inputs (one in five broadcast), then
// the layout seed.
void add_random_inputs(Rng& rng, DiffCase& dc, int64_t n) {
  for (DType t : dc.c.inputs) {
    const bool b = rng() % 5 == 0;
    dc.broadcast.push_back(b);
    dc.inputs.push_back(random_values(rng, t, n, b));
  }
  dc.layout_seed = rng();
}

}  // namespace

DiffCase random_loop_case(Rng& rng, const CompositeGenOptions& go) {
  DiffCase dc;
  const interp::ScalarLoop l = random_loop(rng, go);
  dc.c = l.body;
  dc.loop = LoopShape{l.n_steps, l.carried, l.until};
  // Fewer elements than Composites: each runs up to 70 iterations.
  const int64_t n = random_count(rng, 200, 400);
  const bool b0 = rng() % 5 == 0;
  dc.broadcast.push_back(b0);
  dc.inputs.push_back(random_steps(rng, l.n_steps, n, b0));
  add_random_inputs(rng, dc, n);
  return dc;
}

DiffCase random_case(Rng& rng, const CompositeGenOptions& go) {
  if (go.loop_fraction > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < go.loop_fraction)
    return random_loop_case(rng, go);
  DiffCase dc;
  dc.c = random_composite(rng, go);
  add_random_inputs(rng, dc, random_count(rng, 1000, 1100));
  return dc;
}

interp::ScalarLoop loop_of(const DiffCase& dc) {
  interp::ScalarLoop l;
  l.body = dc.c;
  if (dc.loop) {
    l.n_steps = dc.loop->n_steps;
    l.carried = dc.loop->carried;
    l.until = dc.loop->until;
  }
  return l;
}

std::vector<Array> loop_reference(const DiffCase& dc) {
  const interp::ScalarLoop l = loop_of(dc);
  auto body = interp::Interpreted::compile(l.body);
  const int64_t n = dc.n();
  auto out = fresh_outputs(dc.c, n);
  const size_t ni = l.body.inputs.size(), nout = l.body.outputs.size();
  // One element of each body input and output, as its dtype stores it.
  std::vector<std::array<char, 8>> cur(ni), next(nout);
  std::vector<StridedPtr> in(ni), o(nout);
  for (size_t j = 0; j < ni; ++j) in[j] = {cur[j].data(), 1};
  for (size_t q = 0; q < nout; ++q) o[q] = {next[q].data(), 1};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t steps = dtype_dispatch(l.n_steps, [&](auto z) -> int64_t {
      using T = decltype(z);
      T v;
      std::memcpy(&v, elem(dc.inputs[0], i), sizeof v);
      return static_cast<int64_t>(v);
    });
    for (size_t j = 0; j < ni; ++j) std::memcpy(cur[j].data(), elem(dc.inputs[1 + j], i), dtype_size(l.body.inputs[j]));
    bool stopped = true;  // PyTensor's C backend: true when no iteration ran
    for (int64_t s = 0; s < steps; ++s) {
      body->run(1, in.data(), o.data());
      for (int32_t j = 0; j < l.carried; ++j) std::memcpy(cur[j].data(), next[j].data(), 8);
      if (l.until) {
        stopped = next[l.carried][0] != 0;
        if (stopped) break;
      }
    }
    for (int32_t j = 0; j < l.carried; ++j) std::memcpy(elem(out[j], i), cur[j].data(), dtype_size(l.body.inputs[j]));
    if (l.until) *elem(out[l.carried], i) = stopped;
  }
  return out;
}

nlohmann::json case_graph(const DiffCase& dc, const std::vector<bool>& one, bool zero_d) {
  return dc.loop ? loop_graph(loop_of(dc), dc.inputs, one, zero_d) : elemwise_graph(dc.c, dc.inputs, one, zero_d);
}

namespace {

// Loads the graph that make() writes (kept in r.graph while it fails), runs
// it, and compares with want under `what`.
template <class MakeGraph>
bool check_graph(const DiffCase& dc, const std::vector<Array>& want, const char* what, MakeGraph make,
                 DiffResult& r) {
  std::vector<Array> got;
  try {
    r.graph = make().dump(1);
    got = Program::from_json(r.graph)->call(std::span<const Tensor>());
  } catch (const std::exception& e) {
    r.ok = false;
    r.message = std::string(what) + " failed: " + e.what();
    return false;
  }
  if (!compare(dc, want, got, what, r)) return false;
  r.graph.clear();
  return true;
}

// The loaded-graph path: broadcast inputs sometimes as shape (1,), one
// element sometimes as 0-d.
bool check_loaded_graph(const DiffCase& dc, const std::vector<Array>& want, Rng& rng, DiffResult& r) {
  return check_graph(dc, want, "loaded graph", [&] {
    std::vector<bool> one;
    // (At least one input keeps length n, so the output's shape is n.)
    bool full = false;
    for (bool b : dc.broadcast) {
      one.push_back(b && rng() % 2);
      full |= !one.back();
    }
    if (!full) one[0] = false;
    const bool zero_d = dc.n() == 1 && rng() % 2;
    return case_graph(dc, one, zero_d);
  }, r);
}

// The Scan path: the Composite once per element, as a Scan's inner graph.
bool check_scan_graph(const DiffCase& dc, const std::vector<Array>& want, DiffResult& r) {
  return check_graph(dc, want, "Scan over elements", [&] { return scan_graph(dc.c, dc.inputs); }, r);
}

DiffResult run_loop_case(const DiffCase& dc, const DiffOptions& o) {
  DiffResult r;
  const interp::ScalarLoop l = loop_of(dc);
  if (std::string err = l.validate(); !err.empty()) {
    r.ok = false;
    r.message = "generated an invalid ScalarLoop: " + err;
    return r;
  }
  std::shared_ptr<const interp::ElemKernel> k;
  try {
    k = o.loop_kernel ? o.loop_kernel(l) : interp::LoopKernel::compile(l);
  } catch (const std::exception& e) {
    r.rejected = true;
    r.message = std::string("loop kernel rejected a valid ScalarLoop: ") + e.what();
    return r;
  }
  Rng rng(dc.layout_seed);
  const auto want = loop_reference(dc);
  if (!compare(dc, want, run_vector(*k, dc), "loop kernel", r)) return r;
  if (!compare(dc, want, run_scalar(*k, dc), "loop kernel one element at a time", r)) return r;
  if (!compare(dc, want, run_chunked(*k, dc, rng), "loop kernel in uneven chunks", r)) return r;
  if (!compare(dc, want, run_strided(*k, dc, rng), "loop kernel strided/broadcast layout", r)) return r;
  // (A planted kernel is not what the loader builds: skip the graph then.)
  if (o.check_program && !o.loop_kernel) check_loaded_graph(dc, want, rng, r);
  return r;
}

}  // namespace

DiffResult run_case(const DiffCase& dc, const DiffOptions& o) {
  if (dc.loop) return run_loop_case(dc, o);
  DiffResult r;
  if (std::string err = dc.c.validate(); !err.empty()) {
    r.ok = false;
    r.message = "generated an invalid Composite: " + err;
    return r;
  }
  std::shared_ptr<const interp::Interpreted> vm;
  try {
    vm = interp::Interpreted::compile(dc.c);
  } catch (const std::exception& e) {
    r.rejected = true;
    r.message = std::string("interpreter rejected a valid Composite: ") + e.what();
    return r;
  }
  Rng rng(dc.layout_seed);
  const auto want = run_vector(*vm, dc);
  if (!compare(dc, want, run_scalar(*vm, dc), "scalar path", r)) return r;
  if (!compare(dc, want, run_chunked(*vm, dc, rng), "uneven chunks", r)) return r;
  if (!compare(dc, want, run_strided(*vm, dc, rng), "strided/broadcast layout", r)) return r;
  std::vector<NamedKernel> tiers;
  if (o.extra_tiers) tiers = o.extra_tiers(dc.c);
  else if (o.jit_every > 0 && dc.layout_seed % static_cast<uint64_t>(o.jit_every) == 0) {
    try {
      tiers = jit_tiers(dc.c);
    } catch (const std::exception& e) {
      r.ok = false;
      r.message = std::string("JIT failed to compile a valid Composite: ") + e.what();
      return r;
    }
  }
  for (const NamedKernel& t : tiers) {
    if (!compare(dc, want, run_vector(*t.kernel, dc), t.name + " vector", r)) return r;
    if (!compare(dc, want, run_scalar(*t.kernel, dc), t.name + " scalar", r)) return r;
  }
  if (o.check_program && !dc.inputs.empty() && check_loaded_graph(dc, want, rng, r) && dc.layout_seed % 4 == 0 &&
      dc.n() <= 4096)
    check_scan_graph(dc, want, r);
  return r;
}

namespace {

// Keeps only values that reach an output; at least one input stays.
DiffCase compact(const DiffCase& dc) {
  const Composite& c = dc.c;
  const int32_t nv = c.num_values(), ni = static_cast<int32_t>(c.inputs.size()),
                nc = static_cast<int32_t>(c.constants.size()), first = c.first_node_value();
  std::vector<bool> live(nv, false);
  for (int32_t o : c.outputs) live[o] = true;
  for (int32_t v = nv - 1; v >= first; --v)
    if (live[v])
      for (int32_t in : c.nodes[v - first].inputs) live[in] = true;
  bool any_input = false;
  for (int32_t v = 0; v < ni; ++v) any_input |= live[v];
  if (!any_input) live[0] = true;
  std::vector<int32_t> map(nv, -1);
  DiffCase out;
  out.layout_seed = dc.layout_seed;
  int32_t next = 0;
  for (int32_t v = 0; v < ni; ++v)
    if (live[v]) {
      map[v] = next++;
      out.c.inputs.push_back(c.inputs[v]);
      out.inputs.push_back(dc.inputs[v]);
      out.broadcast.push_back(dc.broadcast[v]);
    }
  for (int32_t v = ni; v < ni + nc; ++v)
    if (live[v]) {
      map[v] = next++;
      out.c.constants.push_back(c.constants[v - ni]);
    }
  for (int32_t v = first; v < nv; ++v)
    if (live[v]) {
      map[v] = next++;
      interp::ScalarNode n = c.nodes[v - first];
      for (int32_t& in : n.inputs) in = map[in];
      out.c.nodes.push_back(n);
    }
  for (int32_t o : c.outputs) out.c.outputs.push_back(map[o]);
  return out;
}

DiffCase slice_elements(const DiffCase& dc, int64_t lo, int64_t len) {
  DiffCase out = dc;
  for (Array& a : out.inputs) {
    Shape s;
    s.ndim = 1;
    s.dims[0] = len;
    Array b = Array::empty(a.t.dtype, s);
    std::memcpy(b.t.data, elem(a, lo), static_cast<size_t>(len) * dtype_size(a.t.dtype));
    a = b;
  }
  return out;
}

// Replaces value `v` (a node's result) at node k's input slot s by a new
// Composite input holding the values v takes (from the vector path), so
// the node can be tested without what computes its operand.
DiffCase lift(const DiffCase& dc, size_t k, size_t s) {
  const Composite& c = dc.c;
  const int32_t v = c.nodes[k].inputs[s];
  DiffCase probe = dc;
  probe.c.outputs = {v};
  auto vm = interp::Interpreted::compile(probe.c);
  const auto vals = run_vector(*vm, probe);
  DiffCase out = dc;
  const int32_t ni = static_cast<int32_t>(c.inputs.size());
  auto shift = [&](int32_t x) { return x >= ni ? x + 1 : x; };
  for (auto& n : out.c.nodes)
    for (int32_t& in : n.inputs) in = shift(in);
  for (int32_t& o : out.c.outputs) o = shift(o);
  out.c.nodes[k].inputs[s] = ni;
  out.c.inputs.push_back(c.value_dtype(v));
  out.inputs.push_back(vals[0]);
  out.broadcast.push_back(false);
  return out;
}

}  // namespace

DiffCase shrink(DiffCase dc, const std::function<bool(const DiffCase&)>& still_fails) {
  int budget = 3000;
  auto accept = [&](const DiffCase& cand) {
    if (budget-- <= 0 || !cand.c.validate().empty()) return false;
    return still_fails(cand);
  };
  if (!dc.loop) dc = compact(dc);
  for (bool progress = true; progress && budget > 0;) {
    progress = false;
    std::vector<DiffCase> cands;
    const Composite& c = dc.c;
    if (c.outputs.size() > 1 && !dc.loop)
      for (int32_t o : c.outputs) {
        DiffCase d = dc;
        d.c.outputs = {o};
        cands.push_back(compact(d));
      }
    const int64_t n = dc.n();
    if (n > 1) {
      cands.push_back(slice_elements(dc, 0, n / 2));
      cands.push_back(slice_elements(dc, n / 2, n - n / 2));
      cands.push_back(slice_elements(dc, 1, n - 1));
      cands.push_back(slice_elements(dc, 0, n - 1));
    }
    // A loop's body keeps its shape (one update per carried value): only
    // its elements shrink.
    const int32_t first = c.first_node_value();
    for (size_t j = 0; j < c.outputs.size() && !dc.loop; ++j) {
      const int32_t o = c.outputs[j];
      if (o < first) continue;
      for (int32_t in : c.nodes[o - first].inputs) {
        DiffCase d = dc;
        d.c.outputs[j] = in;
        cands.push_back(compact(d));
      }
    }
    for (size_t k = 0; k < c.nodes.size() && !dc.loop; ++k)
      for (size_t s = 0; s < c.nodes[k].inputs.size(); ++s)
        for (int32_t v = 0; v < c.nodes[k].inputs[s]; ++v)
          if (v < first && c.value_dtype(v) == c.value_dtype(c.nodes[k].inputs[s])) {
            DiffCase d = dc;
            d.c.nodes[k].inputs[s] = v;
            cands.push_back(compact(d));
            break;
          }
    for (size_t k = 0; k < c.nodes.size() && !dc.loop; ++k)
      for (size_t s = 0; s < c.nodes[k].inputs.size(); ++s)
        if (c.nodes[k].inputs[s] >= first) cands.push_back(compact(lift(dc, k, s)));
    for (const DiffCase& cand : cands)
      if (accept(cand)) {
        dc = cand;
        progress = true;
        break;
      }
  }
  return dc;
}

DiffCase case_from_graph(const std::string& path) {
  // The graph as written: the passes would fold its constant inputs.
  Options o;
  o.passes = Options::Passes{false, false, false, false, false, false};
  auto prog = Program::load(path, o);
  const ProgramImpl& p = prog->impl();
  for (const Step& st : p.steps) {
    auto* ew = dynamic_cast<const ElemwiseKernel*>(st.kernel);
    auto* lk = dynamic_cast<const ScalarLoopKernel*>(st.kernel);
    if (!ew && !lk) continue;
    DiffCase dc;
    if (ew) {
      dc.c = ew->composite();
    } else {
      const interp::ScalarLoop& l = lk->loop().loop();
      dc.c = l.body;
      dc.loop = LoopShape{l.n_steps, l.carried, l.until};
    }
    int64_t n = 1;
    for (int v : st.in) n = std::max(n, p.graph.vars[v].static_shape.size());
    for (int v : st.in) {
      bool found = false;
      for (size_t k = 0; k < p.const_vars.size(); ++k)
        if (p.const_vars[k] == v) {
          const Tensor& t = p.const_values[k];
          const bool single = t.size() == 1 && n > 1;
          Shape s;
          s.ndim = 1;
          s.dims[0] = n;
          Array a = Array::empty(t.dtype, s);
          const size_t es = dtype_size(t.dtype);
          for (int64_t i = 0; i < n; ++i)
            std::memcpy(elem(a, i), static_cast<const char*>(t.data) + (single ? 0 : t.offset_of(i)) * es, es);
          dc.inputs.push_back(a);
          dc.broadcast.push_back(single);
          found = true;
        }
      if (!found) throw LoadError(path + ": Elemwise input variable " + std::to_string(v) + " is not a constant");
    }
    return dc;
  }
  throw LoadError(path + ": no Elemwise node");
}

}  // namespace ember::fuzz
