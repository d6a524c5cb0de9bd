// A Composite: PyTensor's fused element-wise scalar graph, as the loader
// hands it to the bytecode compiler and the JIT. Single-op Elemwise nodes
// become one-node Composites.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/dtype.hpp"
#include "interp/scalar_op.hpp"

namespace ember::interp {

// Scalar constant with its own dtype (may differ from the computation's,
// e.g. int8 0 or float32 -inf inside a float64 Composite).
struct ScalarConst {
  DType dtype = DType::Float64;
  double f = 0;   // value for float dtypes
  int64_t i = 0;  // value for integer and bool dtypes
};

struct ScalarNode {
  ScalarOp op;
  DType dtype;                  // result dtype
  std::vector<int32_t> inputs;  // value indices
};

// Value index space: [0, inputs) are the Composite's inputs,
// [inputs, inputs + constants) its constants, then one value per node.
struct Composite {
  std::vector<DType> inputs;
  std::vector<ScalarConst> constants;
  std::vector<ScalarNode> nodes;
  std::vector<int32_t> outputs;

  int32_t num_values() const {
    return static_cast<int32_t>(inputs.size() + constants.size() + nodes.size());
  }
  int32_t first_node_value() const { return static_cast<int32_t>(inputs.size() + constants.size()); }
  DType value_dtype(int32_t v) const;

  // Checks references (inputs only point backwards), arities and type rules.
  // Returns "" when valid, else a message naming the node and field at fault.
  std::string validate() const;
};

// Reorders the nodes of a one-element Composite so that calls of one math
// function with no path between them are adjacent, where code generators
// call the math library once for all of them (jit/codegen.cpp). Every node
// reads the same operands, so every value keeps its bits; inline nodes keep
// their relative order. No effect on an invalid Composite.
void group_math_calls(Composite& c);

}  // namespace ember::interp
