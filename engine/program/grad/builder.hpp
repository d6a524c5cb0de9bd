// Typed nodes and variables for the gradient graph, appended to an Editor
// after every node of the forward graph.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/program/passes/editor.hpp"

namespace ember::grad {

// PyTensor's broadcasting of static shapes (equal ranks): a dim is 1 when it
// is 1 in every operand, known when some operand knows it, else unknown.
Shape broadcast_static(const Graph& g, const std::vector<int>& vars);


// v is zeros: a constant of zeros, a fill of zeros (Second(x, 0), an
// adjoint's zeros_like) or an Alloc of zero.
bool is_zeros(const passes::Editor& e, int v);

// A reduction's axes from its "axis" attribute (null: all; one integer; a
// list), negatives counted from the end, ascending; none for a 0-d input.
std::vector<int> reduce_axes(const nlohmann::json& attrs, int ndim);

class Builder {
 public:
  explicit Builder(passes::Editor& e) : e(e), at_(e.num_nodes()) {}
  passes::Editor& e;

  // Copies: g.vars grows while building.
  VarSpec spec(int v) const { return e.g.vars[v]; }
  int ndim(int v) const { return e.g.vars[v].static_shape.ndim; }
  DType dtype(int v) const { return e.g.vars[v].dtype; }

  int var(DType dt, const Shape& s);
  // One node with one output of dtype dt and static shape s; returns the output.
  int node(std::string op, std::vector<int> inputs, nlohmann::json attrs, DType dt, const Shape& s);
  // Elemwise of one scalar op; the output broadcasts the inputs.
  int elem(std::string_view scalar_op, std::vector<int> inputs, DType dt);
  int constant(double x, DType dt, int ndim) { return e.scalar_constant(dt, x, ndim); }
  int int_vector(const std::vector<int64_t>& values);

  int cast(int v, DType dt);
  int add(const std::vector<int>& terms);  // their sum (one term: itself)
  int zeros_like(int x);
  // g summed to the shape pattern of `target`: leading extra dims and dims
  // static 1 in target but not in g are summed; the result has target's rank.
  int sum_to(int g, const Shape& target);
  void add_node(NodeSpec n) { e.add_node(std::move(n), at_); }  // outputs made by var()
  int dimshuffle(int v, const std::vector<int>& order);  // -1: a new axis of length 1
  int reshape(int v, const Shape& s);                    // to a fully static shape

 private:
  int at_;  // new nodes order after every existing one
};

// The driver of the one-node canonicalizations: rewrite(b, node) for each
// live node there before (node is valid until the rewrite adds a node); a result >= 0 replaces the node's first output and
// the node goes. Commits when anything changed; returns the count.
template <class F>
int rewrite_each(passes::Editor& e, F&& rewrite) {
  Builder b(e);
  int rewrites = 0;
  const int n = e.num_nodes();
  for (int k = 0; k < n; ++k) {
    if (e.removed(k)) continue;
    // Not a copy (attrs are json maps): the reference is good until the
    // rewrite adds a node, so rewrites read what they need first.
    const NodeSpec& node = e.node(k);
    const int out = node.outputs.empty() ? -1 : node.outputs[0];
    const int r = rewrite(b, node);
    if (r < 0) continue;
    e.replace(out, r);
    e.remove(k);
    ++rewrites;
  }
  if (rewrites) e.commit();
  return rewrites;
}

}  // namespace ember::grad
