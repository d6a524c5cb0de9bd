// The vector path's fused runs: consecutive float64 instructions (arithmetic,
// comparisons, Switch) executed together over small tiles of a block, the
// last float64 result kept in machine registers (no store and reload between them, one
// pass over the block instead of one per instruction). Internal to the VM:
// built from validated Bytecode, which it leaves unchanged.
#pragma once
#include <cstdint>
#include <vector>

#include "interp/bytecode.hpp"

namespace ember::interp::tile {

// A tile is 8 batches of float64 (32 elements with AVX2), held in registers.

// One pre-decoded instruction of a run: handler (a function that tail-calls
// the next op's; the last op of a run is an end marker), slots, and whether its result must be stored (it is read later from
// memory, or is an output).
struct Op {
  const void* h;
  int32_t d, a, b, c;
  int32_t store;
};

// A step of the vector path: either one instruction run block-wise
// (ops_begin < 0) or instructions [first, first + count) fused, whose
// pre-decoded ops start at ops_begin (count ops, then an end marker).
struct Step {
  int32_t first, count;
  int32_t ops_begin;
};

struct Plan {
  std::vector<Step> steps;
  std::vector<Op> ops;
};

Plan plan(const Bytecode& bc);

// Runs the fused ops over whole tiles of [0, m) with slot pointers s;
// returns the number of elements done (m rounded down to a whole tile).
int64_t run(const Op* ops, void* const* s, int64_t m);

}  // namespace ember::interp::tile
