#include "interp/math/wide.hpp"

#include "interp/config.hpp"

namespace ember::math {

bool wide_available() {
#if defined(EMBER_MATH_HAS_WIDE)
  // x86-64-v4's AVX-512 subsets; __builtin_cpu_supports also checks that
  // the OS saves the AVX-512 state.
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512vl");
  return ok;
#else
  return false;
#endif
}

namespace detail {
std::atomic<bool> g_wide{[] {
  const auto& v = config().math_wide;
  return wide_available() && !(v && !v->empty() && (*v)[0] == '0');
}()};
}  // namespace detail

bool use_wide(bool on) { return detail::g_wide.exchange(on && wide_available(), std::memory_order_relaxed); }

}  // namespace ember::math
