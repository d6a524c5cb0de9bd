// Internal building blocks shared between the math library's source files.
#pragma once
#include "interp/math/simd.hpp"

namespace ember::math::simd {

// exp(hi - lo) * 2^k for |hi - lo| <= ~0.35, lo tiny against hi, integer k in
// [-2044, 2046] (fdlibm's exp kernel, < 1 ulp).
D exp_core(D hi, D lo, D k);

// exp(x) * 2^s for integer s, without intermediate overflow; x within
// [-746, 711] or the result is garbage (callers select special cases).
D exp_scaled(D x, D s);

}  // namespace ember::math::simd
