// Powers with constant exponents as cheaper ops, as PyTensor's specialize
// does (local_pow_specialize): x**0.5 -> sqrt(x), x**-0.5 -> 1/sqrt(x),
// x**2 -> sqr(x), x**-2 -> 1/sqr(x), x**-1 -> 1/x, x**3 -> sqr(x)*x, x**-3,
// x**1.5 -> x*sqrt(x), x**-1.5 (the power rule's exponents below these). PyMC's
// logps and the power rule's x**(y - 1) make them; pow is many times the
// cost of these. Not bit-exact against pow, so on differentiated graphs only.
#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/canonicalize.hpp"

namespace ember::grad {

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
      if (y == 1.0) return x;
      if (y == 1.5) return b.elem("Mul", {x, b.elem("Sqrt", {x}, dt)}, dt);
      if (y == 2.0) return b.elem("Sqr", {x}, dt);
      return b.elem("Mul", {b.elem("Sqr", {x}, dt), x}, dt);  // 3
    };
    for (double y : {0.5, 1.0, 1.5, 2.0, 3.0}) {
      if (passes::constant_all(e, c, y)) return power(y);
      if (passes::constant_all(e, c, -y)) return b.elem("Reciprocal", {power(y)}, dt);
    }
    return -1;
  });
}

}  // namespace ember::grad
