// Fuzz target: the C ABI (include/ember/ember.h) on fuzzed graphs and inputs. The
// bytes are a graph file, then optionally a NUL byte and the bytes of x.
// Status codes must be the documented ones, and a wrong dim must give -1.
#include <cmath>
#include <cstring>
#include <vector>

#include "ember/ember.h"
#include "fuzz_common.hpp"

using ember::fuzz_target::violation;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* sep = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t glen = sep ? static_cast<size_t>(sep - data) : size;
  const uint8_t* xb = sep ? sep + 1 : nullptr;
  const size_t xlen = sep ? size - glen - 1 : 0;
  const std::string path = ember::fuzz_target::write_scratch("capi", data, glen);
  char err[256];
  ember_program* p = ember_program_load(path.c_str(), err, sizeof err);
  if (!p) {
    if (std::strlen(err) == 0) violation("ember_program_load failed without a message");
    return 0;
  }
  const uint64_t dim = ember_program_input_size(p), nout = ember_program_output_size(p);
  if (dim > (1u << 16) || nout > (1u << 20)) {
    ember_program_free(p);
    return 0;
  }
  std::vector<double> x(dim + 1, 0.5), grad(dim + 1, 0), out(nout + 1, 0);
  for (size_t i = 0; xlen && i < dim * sizeof(double); ++i) reinterpret_cast<uint8_t*>(x.data())[i] = xb[i % xlen];
  double logp = 0;
  const int64_t rc = ember_logp(dim, x.data(), grad.data(), &logp, p);
  if (rc != 0 && rc != 1 && rc != 3 && rc != 4 && rc != -2) violation("ember_logp returned " + std::to_string(rc));
  if (rc == 0 && (!std::isfinite(logp))) violation("ember_logp returned 0 with a non-finite logp");
  if (rc == 4 && std::isfinite(logp)) violation("ember_logp returned 4 with a finite logp");
  if (ember_logp(dim + 1, x.data(), grad.data(), &logp, p) != -1) violation("ember_logp accepted a wrong dim");
  const int64_t re = ember_expand(dim, nout, x.data(), out.data(), p);
  if (re != 0 && re != -1 && re != -2 && re != 1) violation("ember_expand returned " + std::to_string(re));
  if (re == 0 && ember_expand(dim, nout + 1, x.data(), out.data(), p) == 0)
    violation("ember_expand accepted a wrong size");
  if (ember_last_error() == nullptr) violation("ember_last_error returned NULL");
  ember_program_free(p);
  return 0;
}
