// nutpie entry points for Programs loaded from Python. Never lets an
// exception cross into the caller and never touches Python: nutpie calls
// these from its chain threads without the GIL.
#include "python/src/nutpie_abi.hpp"

#include "engine/graph.hpp"

#include <cmath>
#include <string>

namespace ember_py {

namespace {

thread_local std::string t_error;

// Runs the program on x; calls `use(outputs)` with the outputs.
template <class F>
int64_t with_outputs(const NutpieHandle* cp, uint64_t dim, const double* x, F&& use) {
  auto* p = const_cast<NutpieHandle*>(cp);
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

NutpieHandle::NutpieHandle(std::shared_ptr<const ember::Program> p) : prog(std::move(p)) {
  const auto& args = prog->args();
  if (args.size() != 1 || args[0].dtype != ember::DType::Float64 || args[0].static_shape.ndim != 1 ||
      args[0].static_shape.dims[0] < 0)
    throw ember::LoadError(prog->graph().source +
                           ": nutpie's ABI needs one float64 vector input of static length");
  in_size = static_cast<uint64_t>(args[0].static_shape.dims[0]);
  for (const auto& o : prog->outputs()) {
    int64_t n = 1;
    for (int d = 0; d < o.static_shape.ndim; ++d) n *= o.static_shape.dims[d] < 0 ? 0 : o.static_shape.dims[d];
    out_size += static_cast<uint64_t>(n);
  }
}

ember::WorkspacePtr NutpieHandle::take() {
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

void NutpieHandle::give(ember::WorkspacePtr ws) {
  std::lock_guard<std::mutex> lock(mu);
  pool.push_back(std::move(ws));
}

extern "C" {

const char* ember_py_last_error(void) { return t_error.c_str(); }

int64_t ember_py_logp(uint64_t dim, const double* x, double* grad, double* logp, const void* user_data) {
  const auto* p = static_cast<const NutpieHandle*>(user_data);
  if (p) const_cast<NutpieHandle*>(p)->logp_calls.fetch_add(1, std::memory_order_relaxed);
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

int64_t ember_py_expand(uint64_t dim, uint64_t n_expanded, const double* x, double* out, const void* user_data) {
  const auto* p = static_cast<const NutpieHandle*>(user_data);
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

}  // namespace ember_py
