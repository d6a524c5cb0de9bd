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
  Builder b(e);
  int rewrites = 0;
  const int n = e.num_nodes();
  for (int k = 0; k < n; ++k) {
    if (e.removed(k)) continue;
    const NodeSpec node = e.node(k);
    if (passes::elemwise_scalar_op(node) != "Pow" || node.inputs.size() != 2 || node.outputs.size() != 1) continue;
    const int x = node.inputs[0], c = node.inputs[1], out = node.outputs[0];
    const DType dt = e.g.vars[out].dtype;
    if ((dt != DType::Float64 && dt != DType::Float32) || e.g.vars[x].dtype != dt || !e.is_constant(c)) continue;
    if (!passes::same_broadcast_pattern(e.g.vars[x].static_shape, e.g.vars[out].static_shape)) continue;
    int r = -1;
    if (passes::constant_all(e, c, 0.5)) r = b.elem("Sqrt", {x}, dt);
    else if (passes::constant_all(e, c, -0.5)) r = b.elem("Reciprocal", {b.elem("Sqrt", {x}, dt)}, dt);
    else if (passes::constant_all(e, c, 2.0)) r = b.elem("Sqr", {x}, dt);
    else if (passes::constant_all(e, c, -2.0)) r = b.elem("Reciprocal", {b.elem("Sqr", {x}, dt)}, dt);
    else if (passes::constant_all(e, c, -1.0)) r = b.elem("Reciprocal", {x}, dt);
    else if (passes::constant_all(e, c, 3.0)) r = b.elem("Mul", {b.elem("Sqr", {x}, dt), x}, dt);
    else if (passes::constant_all(e, c, -3.0)) r = b.elem("Reciprocal", {b.elem("Mul", {b.elem("Sqr", {x}, dt), x}, dt)}, dt);
    else if (passes::constant_all(e, c, 1.5)) r = b.elem("Mul", {x, b.elem("Sqrt", {x}, dt)}, dt);
    else if (passes::constant_all(e, c, -1.5)) r = b.elem("Reciprocal", {b.elem("Mul", {x, b.elem("Sqrt", {x}, dt)}, dt)}, dt);
    else if (passes::constant_all(e, c, 1.0)) r = x;
    if (r < 0) continue;
    e.replace(out, r);
    e.remove(k);
    ++rewrites;
  }
  if (rewrites) e.commit();
  return rewrites;
}

}  // namespace ember::grad
