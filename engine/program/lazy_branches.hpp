// Lazy IfElse: the steps whose values only one branch of an IfElse needs run
// only when its condition takes that branch, as PyTensor's lazy VM does.
//
// Each such step gets a guard, a node of a tree: guard (I, b) is open when
// its parent (the guard of IfElse step I itself) is open and I's condition
// is b. A step's guard is the lowest common ancestor of the contexts of its
// uses (a use as branch b of I: guard (I, b); any other use: the user's
// guard; a graph output: none), so a value both branches need runs whenever
// I does. Guarded steps move to just before their IfElse, after its
// condition, keeping their order: the schedule stays topological.
#pragma once
#include <cstddef>
#include <vector>

namespace ember {

struct ProgramImpl;
class Workspace;

struct Guard {
  int cond_var;   // the IfElse's condition (a 0-d value)
  bool when;      // true: the then branch
  int parent;     // guard of the IfElse step, -1: none
  int ifelse;     // the IfElse's step (while planning)
};

// One node of a schedule as branch_contexts sees it; in == nullptr: absent.
struct BranchNode {
  const std::vector<int>* in = nullptr;
  const std::vector<int>* out = nullptr;
  bool ifelse = false;
};

struct BranchContexts {
  std::vector<int> ctx;  // per node: its guard, -1: none
  std::vector<Guard> guards;
};

// The guard each node needs (empty when no node is an IfElse). Fusion uses
// it too: nodes of different contexts never fuse, or a fused node would
// need both branches and run whatever the condition.
BranchContexts branch_contexts(const std::vector<BranchNode>& nodes, size_t nvars, const std::vector<int>& outputs);

// Sets Step::guard and reorders p.steps / p.kernels (before the buffer
// plan). Does nothing to a graph without IfElse.
void plan_lazy_branches(ProgramImpl& p);

// Whether a step with guard g runs in this call (g -1: always).
bool guard_open(const ProgramImpl& p, const Workspace& ws, int g);

}  // namespace ember
