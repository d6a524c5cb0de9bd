// Helpers JIT code calls for ops too long to emit inline. Each runs the
// interpreter's own implementation (interp/scalar_impl.hpp).
#pragma once
#include <cstdint>

extern "C" int64_t ember_jit_ipow(int64_t a, int64_t b);
