// Load-time graph passes: what PyTensor's fast_run rewrites do for speed,
// done on the Graph before kernels are built, in this fixed order
// (docs/architecture.md):
//
//   dce       nodes whose outputs reach no graph output are removed
//   fold      nodes of constants with small outputs become constants,
//             evaluated by Ember's own kernels (the bits of a run)
//   cse       equal constants, and nodes with the same op, attrs and inputs,
//             are merged
//   simplify  gradient artefacts and exact identities: fill (Second),
//             identity casts and views, DimShuffle chains, neg(neg x), x*1,
//             x+(-0.0), x-0, x**1, x**2, x**-1, full-slice Subtensors,
//             same-shape Reshapes, SpecifyShape, All/Any of one element,
//             a one-input MakeVector's element; one-axis advanced indexing
//             to its one-axis ops
//   shapes    unknown static dims the inputs' static shapes fix (a Join of
//             pieces of known length, the Elemwise after it), so that
//   fold, cse again on what simplify exposed (and Shapes of those)
//   fuse      chains and trees of Elemwise nodes of one broadcast pattern
//             become one Composite (bounded operands; values used elsewhere
//             are extra outputs)
//   batch     Elemwise nodes of one op over arrays of one shape, reading
//             constants of that shape and one-element values, whose outputs
//             are only summed whole: one node over the stacked batch and a
//             Sum per output over all but its first axis (with fuse)
//   scalarize connected stretches of small static tensors (Elemwise, Sum,
//             literal Subtensor / IncSubtensor, constant-index
//             AdvancedSubtensor1, CumOp, DimShuffle, Reshape, Join,
//             MakeVector; at most 16 elements each) become one 0-d node per
//             element, which the one-element fusion runs as one step
//   dce       what the rewrites left unused
//
// Every pass is deterministic and keeps results bit for bit: only exact
// identities are applied, and the Composite of a fused node runs the same
// scalar ops in the same order. Shapes follow PyTensor's broadcasting rule:
// only dims of static length 1 broadcast.
#pragma once
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "engine/graph/graph.hpp"

namespace ember::passes {

class Editor;

struct PassStat {
  std::string name;
  int nodes_before = 0, nodes_after = 0;
  int rewrites = 0;  // what the pass changed (nodes removed, merged, folded, fused)
  double ms = 0, cpu_ms = 0;  // wall time; this thread's CPU time
};

struct PassReport {
  int nodes_before = 0, nodes_after = 0;
  double ms = 0, cpu_ms = 0;
  std::vector<PassStat> passes;  // in the order they ran
  // Per node of the passed graph, the index of the node it came from in the
  // graph as loaded (a fused node: its last member).
  std::vector<int> origin;
  // One line: "passes: 4053 -> 644 nodes in 3.10 ms (cpu 2.90 ms); rewrites/cpu ms: dce 0/0.01, ..."
  std::string summary() const;
};

// The passes Options and the environment enable: Options::passes, then
// EMBER_PASSES=0 turns all off and EMBER_PASS_<NAME>=0 one of them
// (EMBER_PASS_DCE, _FOLD, _CSE, _SIMPLIFY, _FUSE, _SCALARIZE), read at each load.
Options::Passes enabled_passes(const Options& o);

// Runs the enabled passes on g (whose topology is already checked).
PassReport run_passes(Graph& g, const Options& o);

// The passes, each in its own file; each returns its count of rewrites and
// leaves the graph committed.
int dead_code(Editor& e);
int fold_constants(Editor& e, const Options& o);
int common_subexpressions(Editor& e);
int simplify(Editor& e);
// Unknown static dims that the inputs' static shapes fix (static_shapes.cpp): run with simplify.
int refine_static_shapes(Editor& e);
// f(x[idx], c...) -> f(x, c...)[idx] for a costly f and an idx longer than x (gather_lift.cpp): run with simplify.
int lift_through_gathers(Editor& e);
// switch(m, A, B) with a constant mask m true (or false) at a third of its entries or fewer computes A (or B)
// there only (mask_branches.cpp): run with simplify.
int mask_branches(Editor& e);
int fuse_elementwise(Editor& e);
int batch_siblings(Editor& e);
int scalarize(Editor& e);
// PyTensor's stabilize rewrites (changes bits); not in run_passes: the caller runs it around differentiation.
int stabilize(Editor& e);

}  // namespace ember::passes
