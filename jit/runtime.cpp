#include "jit/runtime.hpp"

#include "interp/scalar_impl.hpp"

extern "C" int64_t ember_jit_ipow(int64_t a, int64_t b) { return ember::interp::impl::i_pow(a, b); }
