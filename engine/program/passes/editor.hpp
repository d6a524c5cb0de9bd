// A Graph under rewriting, shared by the load-time passes (passes.hpp): who
// defines each variable, which are constants, and edits that take effect
// at commit(): replaced uses, removed and added nodes, new constants. Graph
// outputs keep their variables (and so their names and static shapes).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"
#include "engine/ops/tensor_op.hpp"

namespace ember::passes {

// Live users of each variable (node indices, in order, once per use).
struct Users {
  std::vector<int> off, node;  // the users of v: node[off[v]] .. node[off[v + 1] - 1]
  std::span<const int> of(int v) const { return {node.data() + off[v], node.data() + off[v + 1]}; }
};

class Editor {
 public:
  explicit Editor(Graph& g);
  Graph& g;

  int num_nodes() const { return static_cast<int>(g.nodes.size()); }
  // The node defining v (its index), or -1 for inputs and constants.
  int producer(int v) const { return producer_[v]; }
  // A constant that is not a shared input (shared values may be re-bound).
  bool is_constant(int v) const { return const_of_[v] >= 0; }
  Tensor constant(int v) const;  // is_constant(v) must hold
  bool is_graph_output(int v) const { return is_output_[v] != 0; }
  // v becomes a graph output (appended to g.outputs): the passes keep its variable.
  void add_output(int v) {
    g.outputs.push_back(v);
    is_output_[v] = 1;
  }

  // Uses of `from` read `to` from now on (resolve) and after commit().
  void replace(int from, int to);
  int resolve(int v) const;
  // Resolves the inputs of node k in place and returns the node.
  NodeSpec& node(int k);

  void remove(int k) { removed_[k] = 1; }
  bool removed(int k) const { return removed_[k] != 0; }

  int add_var(const VarSpec& v);
  int add_var(DType dt, const Shape& static_shape);
  // Variable `var` (the output of a node the caller removes) becomes a
  // constant holding `value`, kept alive by the graph.
  void make_constant(int var, const Array& value);
  // A new variable holding `value`.
  int add_constant(DType dt, const Shape& static_shape, const Array& value);
  // A scalar constant of dtype dt (0-d, or with `ndim` dims of 1).
  int scalar_constant(DType dt, double value, int ndim);
  // Appends a node; commit() places it where its inputs allow, ordered among
  // the others as if it stood at position `at` (an original node index).
  int add_node(NodeSpec n, int at);
  // A node of op `op` with one output, a new variable: returns the variable.
  int add_op(std::string op, std::vector<int> inputs, nlohmann::json attrs, DType dt, const Shape& s, int at);

  // From the current (resolved) inputs.
  Users users() const;

  // Applies the edits: inputs resolved, removed nodes dropped, a stable
  // topological order (ties broken by position). A graph output whose
  // variable was replaced gets the replacement's defining node renamed to
  // it, or when that cannot be (an input, a constant, another output, other
  // static shape) a DeepCopyOp. Returns the number of nodes after.
  int commit();

  // The original index of each node of the committed graph (for messages):
  // chained through every commit of the pipeline.
  std::vector<int>* origin = nullptr;

 private:
  std::vector<int> producer_, const_of_;
  std::vector<char> is_output_, removed_;
  mutable std::vector<int> repl_;  // -1: not replaced
  std::vector<int> pos_;           // per node: ordering key
};

// ---- small helpers shared by the passes -----------------------------------

// Every dim statically 1 (0-d included).
bool one_element(const VarSpec& v);
// Static dims: true when every dim of `a` is known and equal to b's.
bool same_static_shape(const Shape& a, const Shape& b);
// A constant's elements all equal `x` (compared in double; NaN never equal).
bool constant_all(const Editor& e, int v, double x);
// The scalar op name of an Elemwise node ("" for Composites, ScalarLoops
// and other ops).
std::string elemwise_scalar_op(const NodeSpec& n);
// An Elemwise whose scalar op (or a node of its Composite) costs more than a
// gather: a math-library call, a division, a square root, a ScalarLoop.
bool costly_elemwise(const NodeSpec& n);

// A DimShuffle's new_order: axis numbers, -1 for "x"; empty optional when
// malformed.
std::optional<std::vector<int>> dimshuffle_order(const NodeSpec& n);

// The static shape (n,).
Shape line_of(int64_t n);
// A new int64 constant of the positions where the 1-d boolean tensor m
// equals `value`, in order (NumPy's nonzero for true).
int mask_positions(Editor& e, const Tensor& m, bool value);
// Element count of a fully static shape, or -1 (a dim unknown, or overflow).
int64_t static_size(const Shape& s);
// Flat C-order index of coord in shape s, and back.
int64_t flat_index(const Shape& s, const int64_t* coord);
void unflat_index(const Shape& s, int64_t f, int64_t* coord);
// The flat indices of the elements of x (static shape xs) a basic index
// list of literals selects, in the C order of the result, whose shape goes
// to `out`; nullopt when an entry is not a literal, a literal index is out
// of range (the node's own IndexError stays), or the entries do not fit x.
std::optional<std::vector<int64_t>> literal_selection(const nlohmann::json& idx_list, const Shape& xs, Shape& out);
// The shape that list selects from an input of static shape xs whose dims
// may be unknown (a slice of an unknown dim is unknown); nullopt as above,
// or for an index on an unknown dim.
std::optional<Shape> literal_index_shape(const nlohmann::json& idx_list, const Shape& xs);

// Whether the node's op is `op` (a name outside the tensor op table is none).
inline bool is_op(const NodeSpec& n, TensorOp op) { return find_tensor_op(n.op) == op; }
// Equal rank, and every dim statically 1 in both or in neither. Under
// PyTensor's broadcasting rule (only static 1s broadcast) an Elemwise
// operand with its output's pattern has the output's run-time shape.
bool same_broadcast_pattern(const Shape& a, const Shape& b);

}  // namespace ember::passes
