// Differential testing of element-wise kernels: every way of running a
// Composite (the interpreter's vector path, its scalar path, strided and
// broadcast layouts, uneven chunks, the loaded graph, each JIT tier) must give
// the same bits, NaNs compared as a class.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/ember.hpp"
#include "engine/random_graph.hpp"
#include "interp/kernel.hpp"

namespace ember::fuzz {

struct DiffCase {
  interp::Composite c;
  std::vector<Array> inputs;  // one C-contiguous vector of n elements per Composite input
  std::vector<bool> broadcast;  // input k holds one value repeated (may run with stride 0)
  uint64_t layout_seed = 0;     // chooses strides and chunk splits
  int64_t n() const { return inputs.empty() ? 1 : inputs[0].size(); }
};

struct DiffResult {
  bool ok = true;
  bool rejected = false;  // the interpreter refused a Composite that validate() accepts
  std::string message;    // what differed, where
  std::string graph;      // the graph file that failed, when the loaded-graph path failed
};

// A named kernel for the Composite (the JIT tiers plug in here).
struct NamedKernel {
  std::string name;
  std::shared_ptr<const interp::ElemKernel> kernel;
};
using TierFactory = std::function<std::vector<NamedKernel>(const interp::Composite&)>;

// The JIT tiers compiled in (empty when EMBER_WITH_JIT is off or no JIT API
// exists yet).
std::vector<NamedKernel> jit_tiers(const interp::Composite& c);

struct DiffOptions {
  bool check_program = true;  // also load elemwise_graph() and run it
  TierFactory extra_tiers;    // defaults to jit_tiers
  int jit_every = 8;          // JIT tiers on one case in this many (each costs LLVM compiles)
};

DiffCase random_case(Rng& rng, const CompositeGenOptions& go = {});
DiffResult run_case(const DiffCase& dc, const DiffOptions& o = {});

// Drops outputs, nodes, constants, inputs and elements while `still_fails`
// holds; returns the smallest case found.
DiffCase shrink(DiffCase dc, const std::function<bool(const DiffCase&)>& still_fails);

// Loads a graph file written by elemwise_graph() back into a case.
DiffCase case_from_graph(const std::string& path);

// Equal bits, or both NaN.
bool same_value(DType dt, const void* a, const void* b);

}  // namespace ember::fuzz
