// Powers with constant exponents as cheaper ops, as PyTensor's specialize
// does (local_pow_specialize): x**0.5 -> sqrt(x), x**-0.5 -> 1/sqrt(x),
// x**2 -> sqr(x), x**-2 -> 1/sqr(x), x**-1 -> 1/x, x**3 -> sqr(x)*x, x**-3,
// x**1.5 -> x*sqrt(x), x**-1.5 (the power rule's exponents below these), and
// other integer exponents up to 512 by nested squaring, as PyTensor's
// local_pow_to_nested_squaring builds it (x**5 -> sqr(sqr(x)) * x). PyMC's
// logps, users' expressions and the power rule's x**(y - 1) make them; pow
// is many times the cost of these. Not bit-exact against pow, so on
// differentiated graphs only.
#include <cmath>
#include <cstdint>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

namespace {
constexpr double kMaxSquaringExponent = 512;  // PyTensor's bound
}  // namespace

int specialize_powers(passes::Editor& e) {
  return rewrite_each(e, [&](Builder& b, const NodeSpec& node) {
    if (passes::elemwise_scalar_op(node) != "Pow" || node.inputs.size() != 2 || node.outputs.size() != 1) return -1;
    const int x = node.inputs[0], c = node.inputs[1], out = node.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    if ((dt != DType::Float64 && dt != DType::Float32) || e.g.vars[x].dtype != dt || !e.is_constant(c)) return -1;
    if (!passes::same_broadcast_pattern(e.g.vars[x].static_shape, e.g.vars[out].static_shape)) return -1;
    // x ** |y| for these exponents; a negative one takes its reciprocal.
    auto power = [&](double y) {
      if (y == 0.5) return b.elem("Sqrt", {x}, dt);
      if (y == 1.5) return b.elem("Mul", {x, b.elem("Sqrt", {x}, dt)}, dt);
      // An integer: the squarings of x for each bit from the highest, multiplied in.
      int r = -1;
      for (auto n = static_cast<int64_t>(y); n > 0;) {
        const int k = 63 - __builtin_clzll(static_cast<uint64_t>(n));
        int v = x;
        for (int i = 0; i < k; ++i) v = b.elem("Sqr", {v}, dt);
        r = r < 0 ? v : b.elem("Mul", {r, v}, dt);
        n -= int64_t{1} << k;
      }
      return r;
    };
    const Tensor t = e.constant(c);
    if (t.size() < 1) return -1;
    double y = 0;
    dtype_dispatch(t.dtype, [&](auto z) { y = static_cast<double>(t.at<decltype(z)>(0)); });
    const double a = std::fabs(y);
    const bool integer = a >= 1 && a <= kMaxSquaringExponent && a == std::floor(a);
    if (!(integer || a == 0.5 || a == 1.5) || !passes::constant_all(e, c, y)) return -1;
    return y > 0 ? power(a) : b.elem("Reciprocal", {power(a)}, dt);
  });
}

}  // namespace ember::grad
