// The wide copy of the math library: the same sources compiled again for
// AVX-512 (x86-64-v4) into namespace ember_wide (CMakeLists.txt). The array
// functions ember::math::f switch to it on CPUs that have AVX-512: lanes are
// independent and the code is width-agnostic, so the bits are the same at
// either width (bench/math_width_hash, tests/unit/test_math_wide.cpp); only
// the speed differs.
#pragma once
#include <atomic>

namespace ember::math {

namespace detail {
extern std::atomic<bool> g_wide;
}

// Whether the array functions run the wide copy now.
inline bool wide() { return detail::g_wide.load(std::memory_order_relaxed); }
// Whether this build has the wide copy and this CPU (and its OS) runs it.
bool wide_available();
// Turns the wide copy on (if available) or off; returns the previous
// setting. EMBER_MATH_WIDE=0 starts with it off.
bool use_wide(bool on);

}  // namespace ember::math
