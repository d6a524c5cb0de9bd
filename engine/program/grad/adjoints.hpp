// The adjoint of one node: given its outputs' gradients, its inputs'
// gradient contributions.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/grad.hpp"
#include "interp/scalar_op.hpp"

namespace ember::grad {

// What an Elemwise derivative rule reads (interp/scalar_grad.def).
struct ElemwiseEnv {
  std::vector<int> inputs;  // x0, x1, ...
  int z = -1, gz = -1;      // the output and its gradient
  int wrt = 0;              // the input differentiated
  DType dtype = DType::Float64;  // the computation's dtype (the input's)
  int out_ndim = 0;
};

// The contribution (in the output's shape, not yet summed to the input's) of
// a scalar op's input `env.wrt`, or -1 when it is zero. Throws NoRule.
int scalar_adjoint(Builder& b, std::string_view scalar_op, const ElemwiseEnv& env, const std::string& where);

// The derivative column's text for input k of op (a variadic op's one
// rule): an expression, "zero" or "undefined".
std::string_view derivative_rule(interp::ScalarOp op, int k);

// An Elemwise over a Composite: each input's contribution in the output's
// shape (not yet cast or summed to the input's), -1 when none. Throws NoRule
// naming the scalar op when a needed rule is "undefined".
std::vector<int> composite_adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz,
                                   const std::vector<char>& need, const std::string& where);

// Node k's input contributions (-1: none), for the inputs with need[i];
// gz[j] is output j's gradient or -1. Each contribution has its input's
// dtype and shape pattern. Throws NoRule naming `where`.
std::vector<int> adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz, const std::vector<char>& need,
                         const std::string& where);

}  // namespace ember::grad
