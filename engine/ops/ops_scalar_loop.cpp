// Elemwise{ScalarLoop}: PyTensor's scalar loop (the gradients of gammainc,
// gammaincc, betainc and hyp2f1) applied over broadcast tensors. The
// Elemwise broadcasting driver runs a LoopKernel (interp/scalar_loop.hpp)
// instead of a Composite. The tier manager compiles its body for one
// element (engine/ops/scalar_loop_kernel.hpp).
#include <memory>

#include "engine/ops/elemwise.hpp"
#include "engine/ops/op.hpp"
#include "engine/ops/scalar_loop_kernel.hpp"
#include "interp/scalar_loop.hpp"

namespace ember {

using nlohmann::json;

// Called by make_elemwise when attrs.scalar_op.op is "ScalarLoop" (which
// attaches it to the tier manager) and by constant folding (which does not).
std::unique_ptr<ScalarLoopKernel> make_scalar_loop(NodeContext& ctx) {
  const json& so = ctx.attr("scalar_op");
  const int nin = ctx.num_inputs(), nout = ctx.num_outputs();
  if (nin < 2) ctx.fail("inputs", "ScalarLoop needs n_steps and at least one more input");
  if (nout < 1) ctx.fail("outputs", "needs at least one output");
  const int nd = ctx.out(0).static_shape.ndim;
  std::vector<DType> ins, outs;
  for (int i = 0; i < nin; ++i) {
    if (ctx.in(i).static_shape.ndim != nd)
      ctx.fail("inputs[" + std::to_string(i) + "]", "has " + std::to_string(ctx.in(i).static_shape.ndim) +
                                                        " dims, output has " + std::to_string(nd) +
                                                        " (Elemwise inputs are padded to equal rank)");
    ins.push_back(ctx.in(i).dtype);
  }
  for (int o = 0; o < nout; ++o) {
    if (ctx.out(o).static_shape.ndim != nd) ctx.fail("outputs[" + std::to_string(o) + "]", "rank differs");
    outs.push_back(ctx.out(o).dtype);
  }
  check_static_broadcast(ctx, nd);

  interp::ScalarLoop l;
  l.n_steps = ins[0];
  auto carried = so.find("carried");
  if (carried == so.end() || !carried->is_number_integer())
    ctx.fail("attrs.scalar_op.carried", "must be an integer (the number of carried values)");
  const int64_t nc = carried->get<int64_t>();
  if (nc < 0 || nc > nin - 1)
    ctx.fail("attrs.scalar_op.carried", std::to_string(nc) + " carried values but the node has " +
                                            std::to_string(nin - 1) + " inputs after n_steps");
  l.carried = static_cast<int32_t>(nc);
  if (auto u = so.find("until"); u != so.end()) {
    if (!u->is_boolean()) ctx.fail("attrs.scalar_op.until", "must be true or false");
    l.until = u->get<bool>();
  }
  if (!dtype_is_int(l.n_steps))
    ctx.fail("inputs[0]", "n_steps must be an integer tensor, got " + std::string(dtype_name(l.n_steps)));
  const int expect_out = l.carried + (l.until ? 1 : 0);
  if (nout != expect_out)
    ctx.fail("outputs", "has " + std::to_string(nout) + " outputs, the loop gives " + std::to_string(expect_out) +
                            " (carried values" + (l.until ? " and the until flag)" : ")"));
  for (int j = 0; j < l.carried; ++j)
    if (outs[j] != ins[1 + j])
      ctx.fail("outputs[" + std::to_string(j) + "]", "dtype " + std::string(dtype_name(outs[j])) +
                                                         " but carried input " + std::to_string(1 + j) + " is " +
                                                         std::string(dtype_name(ins[1 + j])));
  // The body is a Composite with the node's inputs after n_steps.
  json body = so;
  body["op"] = "Composite";
  l.body = read_composite(ctx, body, std::vector<DType>(ins.begin() + 1, ins.end()), outs);
  std::shared_ptr<const interp::LoopKernel> loop;
  try {
    loop = interp::LoopKernel::compile(l);
  } catch (const std::exception& e) {
    ctx.fail("attrs.scalar_op", e.what());
  }
  auto driver = std::make_unique<ElemwiseKernel>(l.body, std::shared_ptr<const interp::Interpreted>(loop, &loop->body()),
                                                 nd, ctx.options().parallel_threshold);
  bool one = true;
  for (int d = 0; d < nd; ++d) one = one && ctx.out(0).static_shape.dims[d] == 1;
  return std::make_unique<ScalarLoopKernel>(std::move(loop), std::move(driver), one);
}

}  // namespace ember
