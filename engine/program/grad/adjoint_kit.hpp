// What the adjoints outside adjoints.cpp share: one node's context and the
// entry points adjoint() dispatches to.
#pragma once
#include <string>
#include <vector>

#include "engine/program/grad/builder.hpp"
#include "engine/program/grad/grad.hpp"

namespace ember::grad {

struct Kit {
  Kit(Builder& b, const NodeSpec& n, const std::vector<int>& gz, const std::vector<char>& need,
      const std::string& where)
      : b(b), n(n), gz(gz), need(need), where(where), out(n.inputs.size(), -1) {}
  Builder& b;
  const NodeSpec& n;
  const std::vector<int>& gz;
  const std::vector<char>& need;
  const std::string& where;
  std::vector<int> out;

  [[noreturn]] void no_rule(const std::string& why) const { throw NoRule(where + ": " + why); }
  int in(int i) const { return n.inputs[i]; }
  int ndim(int v) const { return b.ndim(v); }
  DType dtype(int v) const { return b.dtype(v); }
  Shape shape(int v) const { return b.spec(v).static_shape; }
  // The contribution to input i: cast to its dtype, summed to its pattern.
  void give(int i, int g) {
    if (g < 0 || !need[i]) return;
    out[i] = b.sum_to(b.cast(g, dtype(in(i))), shape(in(i)));
  }
  // Output j's gradient in the output's dtype; NoRule when it has none.
  int grad_of(int j) const {
    if (gz[j] < 0) no_rule(n.op + " without output " + std::to_string(j) + "'s gradient");
    return b.cast(gz[j], dtype(n.outputs[j]));
  }
  int elem(const char* op, std::vector<int> ins) { return b.elem(op, ins, dtype(ins[0])); }
  // v (reduced over `axes` of an nd-dim value) with length-1 axes put back.
  int unreduce(int v, const std::vector<int>& axes, int nd);
  // sum(v, axes) with length-1 axes kept, in v's dtype.
  int sum_keep(int v, const std::vector<int>& axes);
};

// Cholesky, SolveTriangular, Solve, MatrixInverse, Det, SLogDet, Eigh,
// Eigvalsh, SVD (its singular values), ExtractDiag, and a Blockwise of one of
// them or of Dot (adjoints_linalg.cpp).
std::vector<int> linalg_adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz,
                                const std::vector<char>& need, const std::string& where);
// Softmax, LogSoftmax, Prod (and CAReduce of Mul), CumOp of mode mul
// (adjoints_products.cpp).
std::vector<int> products_adjoint(Builder& b, const NodeSpec& n, const std::vector<int>& gz,
                                  const std::vector<char>& need, const std::string& where);

}  // namespace ember::grad
