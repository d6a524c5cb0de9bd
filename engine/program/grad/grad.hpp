// Reverse-mode differentiation of a graph, done by the engine: a document's
// "gradient" directive (docs/graph-format.md) turns its logp graph into
// nutpie's (point, shared...) -> (logp, joined gradient) graph at load.
//
//   derive.cpp        the directive: parameter checks, stabilization, the
//                     flat point, the joined gradient
//   reverse.cpp       the reverse sweep over the nodes between inputs and cost
//   adjoints.cpp      each tensor op's adjoint, or where it is:
//   adjoints_linalg.cpp    linear algebra, plain and Blockwise (batched)
//   adjoints_products.cpp  Softmax, LogSoftmax, Prod, cumulative products
//   adjoint_kit.hpp        what those two share
//   scalar_rules.cpp  Elemwise adjoints from the derivative column of the
//                     scalar op table (interp/scalar_grad.def)
//   fill_sink.cpp     fills moved out of element-wise ops
//   sum_broadcast.cpp sums of broadcast values become products
//   specialize.cpp    powers with constant exponents become cheaper ops
//   canonicalize.hpp  the three files above
//   builder.*         making typed nodes and variables on an Editor
#pragma once
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "ember/error.hpp"
#include "engine/graph/graph.hpp"

namespace ember::grad {

// The graph needs an op (or scalar op) without a derivative rule: the
// caller differentiates it another way (ember.nutpie falls back to PyTensor's
// gradient). Its message names the node and op.
struct NoRule : LoadError {
  using LoadError::LoadError;
};

// Applies g's "gradient" directive (a no-op without one). Throws LoadError
// for a malformed directive, NoRule for a graph it cannot differentiate.
// With `origin`, sets it to the index in the graph as given of each node of
// the result (new nodes: where they were placed), so that later messages name
// the file's nodes.
void derive(Graph& g, const Options& o, std::vector<int>* origin = nullptr);

}  // namespace ember::grad
