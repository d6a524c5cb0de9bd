// Load-time fusion of a reduction into the Elemwise that feeds it: a float64
// Sum over all axes of an Elemwise output that nothing else reads runs inside
// the Elemwise's step. The output is computed into scratch instead of a slot
// and summed in the Sum's own order (engine/ops/reduce_tree.hpp), so the bits
// are the Sum step's; the Sum's step, its dispatch and its buffer go away.
// A logp's terms and its gradient's per-parameter sums have this shape.
#pragma once

namespace ember {

struct ProgramImpl;

// Rewrites p.steps / p.kernels (before the lazy-branch and buffer plans)
// unless p.options.fuse_elemwise is false or EMBER_FUSE_REDUCE=0. Returns
// how many steps it removed.
int fuse_reductions(ProgramImpl& p);

}  // namespace ember
