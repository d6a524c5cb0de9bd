// nutpie's C ABI (see engine/ember.h) over a Program loaded from Python.
// engine/c_api.cpp can only make an ember_program from a file, so this keeps
// its own handle with the same semantics until the engine exposes a way to
// wrap an already loaded Program.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/ember.hpp"

namespace ember_py {

struct NutpieHandle {
  std::shared_ptr<const ember::Program> prog;
  uint64_t in_size = 0, out_size = 0;
  std::atomic<uint64_t> logp_calls{0};  // for progress reports (gradient evaluations)
  std::mutex mu;  // guards the pool only
  std::vector<ember::WorkspacePtr> pool;

  // Throws ember::LoadError unless the program takes one float64 vector of static length.
  explicit NutpieHandle(std::shared_ptr<const ember::Program> p);
  ember::WorkspacePtr take();
  void give(ember::WorkspacePtr ws);
};

extern "C" {
// Same signatures and return codes as ember_logp / ember_expand; user_data is a NutpieHandle*.
int64_t ember_py_logp(uint64_t dim, const double* x, double* grad, double* logp, const void* user_data);
int64_t ember_py_expand(uint64_t dim, uint64_t n_expanded, const double* x, double* out, const void* user_data);
const char* ember_py_last_error(void);
}

}  // namespace ember_py
