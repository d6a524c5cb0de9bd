// The C ABI (engine/ember.h). Never lets an exception cross into C.
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "engine/c_abi.hpp"
#include "engine/ember.h"
#include "engine/ember.hpp"
#include "engine/program_impl.hpp"

struct ember_program {
  std::shared_ptr<const ember::Program> prog;
  uint64_t in_size = 0, out_size = 0;
  std::atomic<uint64_t> logp_calls{0};
  std::mutex mu;  // guards the pool only
  std::vector<ember::WorkspacePtr> pool;

  ember::WorkspacePtr take() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!pool.empty()) {
        auto ws = std::move(pool.back());
        pool.pop_back();
        return ws;
      }
    }
    return prog->make_workspace();
  }
  void give(ember::WorkspacePtr ws) {
    std::lock_guard<std::mutex> lock(mu);
    pool.push_back(std::move(ws));
  }
};

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
int64_t with_outputs(const ember_program* cp, uint64_t dim, const double* x, F&& use) {
  auto* p = const_cast<ember_program*>(cp);
  if (!p) {
    t_error = "null program";
    return -2;
  }
  if (dim != p->in_size) {
    t_error = "dim " + std::to_string(dim) + " but the graph takes " + std::to_string(p->in_size);
    return -1;
  }
  ember::WorkspacePtr ws;
  try {
    ws = p->take();
    ember::Tensor xt = ember::Tensor::contiguous(ember::DType::Float64, ember::Shape{1, {int64_t(dim)}},
                                                 const_cast<double*>(x));
    const auto& out = p->prog->run(*ws, std::span<const ember::Tensor>(&xt, 1));
    const int64_t rc = use(out);
    p->give(std::move(ws));
    return rc;
  } catch (const ember::CallError& e) {
    t_error = e.what();
    if (ws) p->give(std::move(ws));
    return 1;
  } catch (const std::exception& e) {
    t_error = e.what();
    return -2;
  }
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
  return p ? p->logp_calls.load(std::memory_order_relaxed) : 0;
}
uint64_t ember_program_input_size(const ember_program* p) { return p ? p->in_size : 0; }
uint64_t ember_program_output_size(const ember_program* p) { return p ? p->out_size : 0; }
const char* ember_last_error(void) { return t_error.c_str(); }

int64_t ember_logp(uint64_t dim, const double* x, double* grad, double* logp, const void* user_data) {
  const auto* p = static_cast<const ember_program*>(user_data);
  if (p) const_cast<ember_program*>(p)->logp_calls.fetch_add(1, std::memory_order_relaxed);
  return with_outputs(p, dim, x, [&](const std::vector<ember::Tensor>& out) -> int64_t {
    if (out.size() != 2 || out[0].size() != 1 || out[1].size() != static_cast<int64_t>(dim) ||
        out[0].dtype != ember::DType::Float64 || out[1].dtype != ember::DType::Float64) {
      t_error = "logp graph must return (0-d logp, grad of length dim) in float64";
      return -2;
    }
    *logp = out[0].at<double>(0);
    bool finite = true;
    for (uint64_t i = 0; i < dim; ++i) {
      grad[i] = out[1].at<double>(static_cast<int64_t>(i));
      finite &= std::isfinite(grad[i]);
    }
    if (!std::isfinite(*logp)) return 4;
    if (!finite) return 3;
    return 0;
  });
}

int64_t ember_expand(uint64_t dim, uint64_t n_expanded, const double* x, double* out, const void* user_data) {
  const auto* p = static_cast<const ember_program*>(user_data);
  return with_outputs(p, dim, x, [&](const std::vector<ember::Tensor>& outs) -> int64_t {
    uint64_t total = 0;
    for (const auto& t : outs) total += static_cast<uint64_t>(t.size());
    if (total != n_expanded) {
      t_error = "expand produces " + std::to_string(total) + " values, caller expects " + std::to_string(n_expanded);
      return -1;
    }
    uint64_t k = 0;
    for (const auto& t : outs)
      ember::dtype_dispatch(t.dtype, [&](auto z) {
        using T = decltype(z);
        for (int64_t i = 0; i < t.size(); ++i) out[k++] = static_cast<double>(t.at<T>(i));
      });
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
  p->in_size = static_cast<uint64_t>(p->prog->args()[0].static_shape.dims[0]);
  for (const auto& o : p->prog->outputs()) {
    int64_t n = 1;
    for (int d = 0; d < o.static_shape.ndim; ++d) n *= o.static_shape.dims[d] < 0 ? 0 : o.static_shape.dims[d];
    p->out_size += static_cast<uint64_t>(n);
  }
  return p;
}
