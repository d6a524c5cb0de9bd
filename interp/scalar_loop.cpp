#include "interp/scalar_loop.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "interp/bytecode.hpp"

namespace ember::interp {

std::vector<DType> ScalarLoop::tensor_inputs() const {
  std::vector<DType> v;
  v.reserve(body.inputs.size() + 1);
  v.push_back(n_steps);
  for (DType t : body.inputs) v.push_back(t);
  return v;
}

std::vector<DType> ScalarLoop::tensor_outputs() const {
  std::vector<DType> v(body.inputs.begin(), body.inputs.begin() + carried);
  if (until) v.push_back(DType::Bool);
  return v;
}

std::string ScalarLoop::validate() const {
  if (!dtype_is_int(n_steps))
    return "field 'n_steps': the trip count must be an integer, got " + std::string(dtype_name(n_steps));
  if (carried < 0 || static_cast<size_t>(carried) > body.inputs.size())
    return "field 'carried': " + std::to_string(carried) + " carried values but the body has " +
           std::to_string(body.inputs.size()) + " inputs";
  const size_t nout = static_cast<size_t>(carried) + (until ? 1 : 0);
  if (nout == 0) return "field 'carried': a loop without carried values needs 'until'";
  if (std::string err = body.validate(); !err.empty()) return err;
  if (body.outputs.size() != nout)
    return "field 'outputs': " + std::to_string(body.outputs.size()) + " outputs, expected " +
           std::to_string(nout) + " (one update per carried value" + (until ? ", then the condition)" : ")");
  for (int32_t k = 0; k < carried; ++k) {
    const DType u = body.value_dtype(body.outputs[k]);
    if (u != body.inputs[k])
      return "field 'outputs[" + std::to_string(k) + "]': update has dtype " + std::string(dtype_name(u)) +
             " but carried value " + std::to_string(k) + " is " + std::string(dtype_name(body.inputs[k]));
  }
  if (until && body.value_dtype(body.outputs.back()) != DType::Bool)
    return "field 'outputs[" + std::to_string(carried) + "]': the until condition must be bool, got " +
           std::string(dtype_name(body.value_dtype(body.outputs.back())));
  return "";
}

namespace {

inline const char* at(const StridedPtr& s, int64_t i, size_t esize) {
  return static_cast<const char*>(s.data) + i * s.stride * static_cast<int64_t>(esize);
}

inline void copy_elem(char* dst, const char* src, size_t es) {
  switch (es) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    default: std::memcpy(dst, src, 8); break;
  }
}

int64_t load_steps(DType dt, const char* p) {
  return dtype_dispatch(dt, [&](auto z) -> int64_t {
    using T = decltype(z);
    T v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<int64_t>(v);
  });
}

// Lanes per block: the body runs on the VM's vector path over the lanes
// still iterating, so math calls go through the batch functions.
constexpr int64_t kLanes = 256;

// Per-thread scratch (grow-only, so calls after a thread's first allocate
// nothing): element sizes, the body's input and output pointers, and one
// buffer holding each body input's and output's values for the live lanes,
// their trip counts and their element indices.
struct LoopScratch {
  std::vector<size_t> is, os;
  std::vector<StridedPtr> ip, op;
  std::vector<int64_t> buf;  // int64 for alignment
};
thread_local LoopScratch tls;

// One element (the parameter-only loops of a gradient, such as gammainc's
// derivative in its shape): the body's cells stay put across iterations,
// so an iteration is the scalar path's run plus one cell move per carried
// value (through its dtype, as a store and a load would narrow it). The
// same operations as a lane of the block path, so the same bits.
void run_one(const LoopKernel* k, int64_t steps, const StridedPtr* in, const StridedPtr* out) {
  const ScalarLoop& l = k->loop();
  const Bytecode& bc = k->body().bytecode();
  const int32_t nslots = bc.num_slots(), nc = bc.num_consts(), carried = l.carried;
  thread_local std::vector<Cell> cells;
  if (cells.size() < static_cast<size_t>(nslots) + static_cast<size_t>(carried)) cells.resize(nslots + carried);
  Cell* c = cells.data();
  Cell* next = c + nslots;
  if (nc > 0) std::memcpy(c, bc.constants.data(), static_cast<size_t>(nc) * sizeof(Cell));
  for (size_t j = 0; j < bc.inputs.size(); ++j) load_cell(c[nc + j], bc.inputs[j], in[1 + j].data);
  bool stop = false;
  for (int64_t iter = 1;; ++iter) {
    k->body().run_cells(c);
    for (int32_t j = 0; j < carried; ++j) {
      alignas(8) char e[8];
      store_cell(c[bc.outputs[j].slot], bc.outputs[j].dtype, e);
      load_cell(next[j], bc.inputs[j], e);
    }
    stop = l.until && c[bc.outputs[carried].slot].i64 != 0;
    for (int32_t j = 0; j < carried; ++j) c[nc + j] = next[j];
    if (stop || iter >= steps) break;
  }
  for (int32_t j = 0; j < carried; ++j) store_cell(c[nc + j], bc.inputs[j], out[j].data);
  if (l.until) *static_cast<char*>(out[carried].data) = stop;
}

// One element through a swapped-in one-element kernel of the body: each
// iteration one call, on element buffers in the dtypes' layout (as the
// block path's stores and loads), the carried values' buffers alternating
// between input and output so nothing is copied.
void run_one_with(const LoopKernel* k, const ElemKernel* body, int64_t steps, const StridedPtr* in,
                  const StridedPtr* out) {
  const ScalarLoop& l = k->loop();
  const std::vector<DType>& idt = l.body.inputs;
  const int32_t ni = static_cast<int32_t>(idt.size()), carried = l.carried;
  const int32_t nout = carried + (l.until ? 1 : 0);
  thread_local std::vector<uint64_t> cells;  // per input one, per carried value a second, the condition
  thread_local std::vector<StridedPtr> ops;
  if (cells.size() < static_cast<size_t>(ni + carried + 1)) cells.resize(ni + carried + 1);
  if (ops.size() < static_cast<size_t>(ni + nout)) ops.resize(ni + nout);
  char* c = reinterpret_cast<char*>(cells.data());
  char* cond = c + 8 * (ni + carried);
  StridedPtr* op = ops.data();
  for (int32_t j = 0; j < ni; ++j) {
    const size_t es = dtype_size(idt[j]);
    copy_elem(c + 8 * j, at(in[1 + j], 0, es), es);
    op[j] = {c + 8 * j, 0};
  }
  for (int32_t j = 0; j < carried; ++j) op[ni + j] = {c + 8 * (ni + j), 0};
  if (l.until) op[ni + carried] = {cond, 0};
  bool stop = false;
  if (body->fn_loop) {
    // The whole loop compiled: the last iteration's outputs in the output
    // buffers, which the copies below read as the inputs' after a swap.
    body->fn_loop(body, steps, op);
    stop = l.until && *cond != 0;
    for (int32_t j = 0; j < carried; ++j) std::swap(op[j], op[ni + j]);
  } else {
    // The element buffers are 8-byte aligned and the outputs follow the
    // inputs: the body's table entry (ElemKernel::fn_table) when it has one.
    const auto table = body->fn_table;
    for (int64_t iter = 1;; ++iter) {
      if (table) table(body, op);
      else body->run(1, op, op + ni);
      stop = l.until && *cond != 0;
      for (int32_t j = 0; j < carried; ++j) std::swap(op[j], op[ni + j]);
      if (stop || iter >= steps) break;
    }
  }
  for (int32_t j = 0; j < carried; ++j) {
    const size_t es = dtype_size(idt[j]);
    copy_elem(const_cast<char*>(at(out[j], 0, es)), static_cast<const char*>(op[j].data), es);
  }
  if (l.until) *const_cast<char*>(at(out[carried], 0, 1)) = stop;
}

// Element e of a loop with no iteration (n_steps <= 0): the initial values;
// PyTensor's C code reports convergence.
void write_initial(const ScalarLoop& l, int64_t e, const StridedPtr* in, const StridedPtr* out) {
  const std::vector<DType>& idt = l.body.inputs;
  for (int32_t j = 0; j < l.carried; ++j) {
    const size_t es = dtype_size(idt[j]);
    char* dst = const_cast<char*>(at(out[j], e, es));
    if (idt[j] == DType::Bool) *dst = *at(in[1 + j], e, 1) != 0;
    else copy_elem(dst, at(in[1 + j], e, es), es);
  }
  if (l.until) *const_cast<char*>(at(out[l.carried], e, 1)) = 1;
}

// Every element through a compiled whole loop (ElemKernel::fn_loop), one
// after another: each runs the iterations its lane of the block path would,
// with the same operations, so the same bits; the carried values stay in
// registers instead of going through the VM's arrays each iteration.
void run_elements_with(const LoopKernel* k, const ElemKernel* body, int64_t n, const StridedPtr* in,
                       const StridedPtr* out) {
  const ScalarLoop& l = k->loop();
  const std::vector<DType>& idt = l.body.inputs;
  const size_t ni = idt.size() + 1, nout = static_cast<size_t>(l.carried + (l.until ? 1 : 0));
  thread_local std::vector<StridedPtr> ops;
  if (ops.size() < ni + nout) ops.resize(ni + nout);
  StridedPtr* ein = ops.data();
  StridedPtr* eout = ein + ni;
  const size_t nsize = dtype_size(l.n_steps);
  for (int64_t e = 0; e < n; ++e) {
    const int64_t s = load_steps(l.n_steps, at(in[0], e, nsize));
    if (s <= 0) {
      write_initial(l, e, in, out);
      continue;
    }
    ein[0] = {const_cast<char*>(at(in[0], e, nsize)), 0};
    for (size_t j = 1; j < ni; ++j) ein[j] = {const_cast<char*>(at(in[j], e, dtype_size(idt[j - 1]))), 0};
    for (size_t q = 0; q < nout; ++q)
      eout[q] = {const_cast<char*>(at(out[q], e, q < size_t(l.carried) ? dtype_size(idt[q]) : 1)), 0};
    run_one_with(k, body, s, ein, eout);
  }
}

// The block of elements [b, b + m): lanes with n_steps > 0 are packed into
// the scratch; each round runs the body once on every live lane (an
// iteration computes all updates from the old values into `next`, then the
// carried values take them at once), then drops the lanes that are done
// (their trip count reached, or with `until` their condition true) after
// writing their outputs. Each lane sees exactly the iterations the
// element-by-element loop would run, and the VM's vector and scalar paths
// give the same bits, so the result does not depend on the blocking.
void run_loop(const ElemKernel* self, int64_t n, const StridedPtr* in, const StridedPtr* out) {
  const auto* k = static_cast<const LoopKernel*>(self);
  const ScalarLoop& l = k->loop();
  const ElemKernel* active = k->active_body();
  if (n == 1) {
    if (const int64_t s = load_steps(l.n_steps, static_cast<const char*>(in[0].data)); s > 0) {
      if (active != &k->body()) return run_one_with(k, active, s, in, out);
      return run_one(k, s, in, out);
    }
  }
  if (active != &k->body() && active->fn_loop && !k->calls_math()) return run_elements_with(k, active, n, in, out);
  const std::vector<DType>& idt = l.body.inputs;
  const int32_t ni = static_cast<int32_t>(idt.size()), carried = l.carried;
  const int32_t nout = carried + (l.until ? 1 : 0);
  LoopScratch& t = tls;
  if (t.is.size() < static_cast<size_t>(ni)) t.is.resize(ni), t.ip.resize(ni);
  if (t.os.size() < static_cast<size_t>(nout)) t.os.resize(nout), t.op.resize(nout);
  size_t* is = t.is.data();
  size_t* os = t.os.data();
  size_t bytes = 2 * sizeof(int64_t) * kLanes;
  for (int32_t j = 0; j < ni; ++j) bytes += (is[j] = dtype_size(idt[j])) * kLanes;
  for (int32_t q = 0; q < nout; ++q) bytes += (os[q] = q < carried ? is[q] : 1) * kLanes;
  if (t.buf.size() * sizeof(int64_t) < bytes) t.buf.resize(bytes / sizeof(int64_t) + 1);
  int64_t* steps = t.buf.data();
  int64_t* lane = steps + kLanes;
  char* p = reinterpret_cast<char*>(lane + kLanes);
  for (int32_t j = 0; j < ni; ++j) {
    t.ip[j] = {p, 1};
    p += is[j] * kLanes;
  }
  for (int32_t q = 0; q < nout; ++q) {
    t.op[q] = {p, 1};
    p += os[q] * kLanes;
  }
  const StridedPtr* ip = t.ip.data();
  const StridedPtr* op = t.op.data();
  auto cur = [&](int32_t j) { return static_cast<char*>(const_cast<void*>(ip[j].data)); };
  auto next = [&](int32_t q) { return static_cast<char*>(op[q].data); };
  const size_t nsize = dtype_size(l.n_steps);

  for (int64_t b = 0; b < n; b += kLanes) {
    const int64_t m = std::min(kLanes, n - b);
    int64_t live = 0;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t e = b + i;
      const int64_t s = load_steps(l.n_steps, at(in[0], e, nsize));
      if (s <= 0) {
        write_initial(l, e, in, out);
        continue;
      }
      steps[live] = s;
      lane[live] = e;
      for (int32_t j = 0; j < ni; ++j) copy_elem(cur(j) + live * is[j], at(in[1 + j], e, is[j]), is[j]);
      ++live;
    }
    for (int64_t iter = 1; live > 0; ++iter) {
      k->body().run(live, ip, op);
      for (int32_t j = 0; j < carried; ++j) std::memcpy(cur(j), next(j), static_cast<size_t>(live) * is[j]);
      const char* cond = l.until ? next(carried) : nullptr;
      int64_t w = 0;
      for (int64_t a = 0; a < live; ++a) {
        const bool stop = cond && cond[a] != 0;
        if (stop || iter >= steps[a]) {
          const int64_t e = lane[a];
          for (int32_t j = 0; j < carried; ++j) copy_elem(const_cast<char*>(at(out[j], e, is[j])), cur(j) + a * is[j], is[j]);
          if (l.until) *const_cast<char*>(at(out[carried], e, 1)) = stop;
          continue;
        }
        if (w != a) {
          steps[w] = steps[a];
          lane[w] = lane[a];
          for (int32_t j = 0; j < ni; ++j) copy_elem(cur(j) + w * is[j], cur(j) + a * is[j], is[j]);
        }
        ++w;
      }
      live = w;
    }
  }
}

}  // namespace

LoopKernel::LoopKernel() { fn = &run_loop; }

std::shared_ptr<const LoopKernel> LoopKernel::compile(const ScalarLoop& l) {
  if (std::string err = l.validate(); !err.empty()) throw std::invalid_argument(err);
  std::shared_ptr<LoopKernel> k(new LoopKernel());
  k->loop_ = l;
  k->body_ = Interpreted::compile(l.body);
  k->active_body_.store(k->body_.get());
  for (const Instr& in : k->body_->bytecode().code) k->calls_math_ = k->calls_math_ || interp::calls_math(in);
  return k;
}

}  // namespace ember::interp
