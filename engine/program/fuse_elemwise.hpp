// Load-time fusion: runs of one-element Elemwise nodes (every input and
// output statically of size 1) become one Elemwise over one Composite, so a
// chain of N scalar ops costs one node dispatch instead of N. A run also
// takes the nodes around such chains that only move one element: size-1
// DimShuffles, Subtensors picking one element by literal index, All/Any of a
// MakeVector of bools, Join/MakeVector packing one-element values. Same bits:
// each scalar node keeps its dtype, and every value used outside the run (or
// a graph output) stays an output of the fused node. docs/architecture.md.
#pragma once

namespace ember {

struct ProgramImpl;

// True unless the environment sets EMBER_FUSE=0 (interp/config.hpp; tests
// that compare fused and unfused programs reload it).
bool fusion_enabled();

// Rewrites p.steps / p.kernels (before the buffer plan) unless
// p.options.fuse_elemwise is false. Returns how many steps it removed.
int fuse_elemwise(ProgramImpl& p);

}  // namespace ember
