// The C ABI (include/ember/ember.h). Never lets an exception cross into C.
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "engine/c_api.hpp"
#include "ember/ember.h"
#include "ember/ember.hpp"
#include "engine/program/program_impl.hpp"

// Workspaces for concurrent callers. A call takes a free slot (one atomic
// exchange on the slot's own cache line: the slot its thread used last, else
// the first free one), so steady calls from nutpie's chain threads share no
// lock and allocate nothing. Slots live as long as the program.
struct alignas(64) CSlot {
  ember::WorkspacePtr ws;
  ember::Tensor arg;  // the input's shape set once: a call sets only its data (a Tensor is 272 bytes)
  std::atomic<bool> busy{false};
  std::atomic<uint64_t> logp_calls{0};  // written only by the slot's holder
};

struct ember_program {
  static constexpr int kMaxSlots = 256;
  std::shared_ptr<const ember::Program> prog;
  uint64_t in_size = 0, out_size = 0;
  uint64_t id = 0;  // unique per program: thread-local hints never match a freed one's successor
  std::mutex mu;    // guards creating slots
  std::atomic<int> nslots{0};
  std::array<std::atomic<CSlot*>, kMaxSlots> slots{};
  std::vector<std::unique_ptr<CSlot>> owned;  // every slot (under mu); the first kMaxSlots also in `slots`

  CSlot* take();
  static void give(CSlot* s) { s->busy.store(false, std::memory_order_release); }
  uint64_t logp_calls() {
    std::lock_guard<std::mutex> lock(mu);
    uint64_t n = 0;
    for (const auto& s : owned) n += s->logp_calls.load(std::memory_order_relaxed);
    return n;
  }
};

namespace {

std::atomic<uint64_t> g_next_id{1};

struct SlotHint {
  uint64_t id = 0;
  int slot = 0;
};
thread_local SlotHint t_hint;

bool try_claim(CSlot* s) {
  return !s->busy.load(std::memory_order_relaxed) && !s->busy.exchange(true, std::memory_order_acquire);
}

}  // namespace

CSlot* ember_program::take() {
  if (t_hint.id == id) {
    CSlot* s = slots[t_hint.slot].load(std::memory_order_relaxed);
    if (try_claim(s)) return s;
  }
  const int n = nslots.load(std::memory_order_acquire);
  for (int k = 0; k < n; ++k) {
    CSlot* s = slots[k].load(std::memory_order_relaxed);
    if (try_claim(s)) {
      t_hint = {id, k};
      return s;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  for (size_t k = kMaxSlots; k < owned.size(); ++k)  // more concurrent callers than shared slots
    if (try_claim(owned[k].get())) return owned[k].get();
  auto fresh = std::make_unique<CSlot>();
  fresh->ws = prog->make_workspace();
  fresh->arg.set_contiguous(ember::DType::Float64, ember::Shape{1, {static_cast<int64_t>(in_size)}}, nullptr);
  fresh->busy.store(true, std::memory_order_relaxed);
  CSlot* s = fresh.get();
  owned.push_back(std::move(fresh));
  const int k = nslots.load(std::memory_order_relaxed);
  if (k < kMaxSlots) {
    slots[k].store(s, std::memory_order_release);
    nslots.store(k + 1, std::memory_order_release);
    t_hint = {id, k};
  }
  return s;
}

namespace {

thread_local std::string t_error;

void copy_error(const std::string& msg, char* err, size_t len) {
  if (!err || !len) return;
  const size_t n = std::min(len - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// Runs the program on x; calls `use(outputs)` with the outputs.
template <class F>
int64_t with_outputs(const ember_program* cp, uint64_t dim, const double* x, bool count, F&& use) {
  auto* p = const_cast<ember_program*>(cp);
  if (!p) {
    t_error = "null program";
    return -2;
  }
  if (dim != p->in_size) {
    t_error = "dim " + std::to_string(dim) + " but the graph takes " + std::to_string(p->in_size);
    return -1;
  }
  CSlot* slot = nullptr;
  try {
    slot = p->take();
    if (count)
      slot->logp_calls.store(slot->logp_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    slot->arg.data = const_cast<double*>(x);
    const auto& out = p->prog->run(*slot->ws, std::span<const ember::Tensor>(&slot->arg, 1));
    const int64_t rc = use(out);
    ember_program::give(slot);
    return rc;
  } catch (const ember::CallError& e) {
    t_error = e.what();
    if (slot) ember_program::give(slot);
    return 1;
  } catch (const std::exception& e) {  // the workspace stays usable: its buffers only grow
    t_error = e.what();
    if (slot) ember_program::give(slot);
    return -2;
  }
}

// Copies t (any strides) into dst as float64, in C order.
void copy_flat(const ember::Tensor& t, double* dst) {
  const int64_t n = t.size();
  if (t.dtype == ember::DType::Float64 && t.is_contiguous()) {
    if (n) std::memcpy(dst, t.data, static_cast<size_t>(n) * sizeof(double));
    return;
  }
  ember::dtype_dispatch(t.dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<double>(t.at<T>(i));
  });
}

// Whether none of x[0..n) is an infinity or a NaN: an exponent field of all
// ones. An integer test, so the loop vectorizes; GCC keeps an FP compare
// scalar under -ftrapping-math, a chain of one compare per element (8 % of
// a call of a 400-parameter model).
bool all_finite(const double* x, uint64_t n) {
  constexpr uint64_t kExp = 0x7ff0000000000000ULL;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t b;
    std::memcpy(&b, x + i, 8);
    bad |= static_cast<uint64_t>((b & kExp) == kExp);
  }
  return bad == 0;
}

}  // namespace

extern "C" {

ember_program* ember_program_load(const char* path, char* err, size_t err_len) {
  try {
    return ember::wrap_for_c_abi(ember::Program::load(path ? path : ""));
  } catch (const std::exception& e) {
    copy_error(e.what(), err, err_len);
    return nullptr;
  }
}

void ember_program_free(ember_program* p) { delete p; }
uint64_t ember_program_logp_calls(const ember_program* p) {
  return p ? const_cast<ember_program*>(p)->logp_calls() : 0;
}
uint64_t ember_program_input_size(const ember_program* p) { return p ? p->in_size : 0; }
uint64_t ember_program_output_size(const ember_program* p) { return p ? p->out_size : 0; }
const char* ember_last_error(void) { return t_error.c_str(); }

int64_t ember_logp(uint64_t dim, const double* x, double* grad, double* logp, const void* user_data) {
  const auto* p = static_cast<const ember_program*>(user_data);
  return with_outputs(p, dim, x, true, [&](const std::vector<ember::Tensor>& out) -> int64_t {
    if (out.size() != 2 || out[0].size() != 1 || out[1].size() != static_cast<int64_t>(dim) ||
        out[0].dtype != ember::DType::Float64 || out[1].dtype != ember::DType::Float64) {
      t_error = "logp graph must return (0-d logp, grad of length dim) in float64";
      return -2;
    }
    *logp = *out[0].ptr<double>();  // one element: at offset 0 whatever its strides
    copy_flat(out[1], grad);
    if (!std::isfinite(*logp)) return 4;
    if (!all_finite(grad, dim)) return 3;
    return 0;
  });
}

int64_t ember_expand(uint64_t dim, uint64_t n_expanded, const double* x, double* out, const void* user_data) {
  const auto* p = static_cast<const ember_program*>(user_data);
  return with_outputs(p, dim, x, false, [&](const std::vector<ember::Tensor>& outs) -> int64_t {
    uint64_t total = 0;
    for (const auto& t : outs) total += static_cast<uint64_t>(t.size());
    if (total != n_expanded) {
      t_error = "expand produces " + std::to_string(total) + " values, caller expects " + std::to_string(n_expanded);
      return -1;
    }
    uint64_t k = 0;
    for (const auto& t : outs) {
      copy_flat(t, out + k);
      k += static_cast<uint64_t>(t.size());
    }
    return 0;
  });
}

}  // extern "C"

ember_program* ember::wrap_for_c_abi(std::shared_ptr<const Program> prog) {
  const std::string& src = prog->graph().source;
  if (prog->args().size() != 1 || prog->args()[0].dtype != DType::Float64 ||
      prog->args()[0].static_shape.ndim != 1 || prog->args()[0].static_shape.dims[0] < 0)
    throw LoadError(src + ": the C ABI needs one float64 vector input of static length");
  auto* p = new ember_program;
  p->prog = std::move(prog);
  p->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  p->in_size = static_cast<uint64_t>(p->prog->args()[0].static_shape.dims[0]);
  for (const auto& o : p->prog->outputs()) {
    int64_t n = 1;
    for (int d = 0; d < o.static_shape.ndim; ++d) n *= o.static_shape.dims[d] < 0 ? 0 : o.static_shape.dims[d];
    p->out_size += static_cast<uint64_t>(n);
  }
  return p;
}
