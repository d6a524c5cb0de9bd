// Differential testing of element-wise kernels: every way of running a
// Composite (the interpreter's vector path, its scalar path, strided and
// broadcast layouts, uneven chunks, the loaded graph, each JIT tier) must give
// the same bits, NaNs compared as a class.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "tools/random_graph.hpp"
#include "interp/kernel.hpp"

namespace ember::fuzz {

// A ScalarLoop case's loop fields (its body is DiffCase::c).
struct LoopShape {
  DType n_steps = DType::Int32;
  int32_t carried = 0;
  bool until = false;
};

struct DiffCase {
  interp::Composite c;              // the Composite, or the loop's body
  std::optional<LoopShape> loop;    // set: an Elemwise{ScalarLoop} with body c; inputs[0] is n_steps
  std::vector<Array> inputs;  // one C-contiguous vector of n elements per kernel input
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
  // ScalarLoop cases: the kernel under test (default interp::LoopKernel;
  // tests plant faulty ones here).
  std::function<std::shared_ptr<const interp::ElemKernel>(const interp::ScalarLoop&)> loop_kernel;
  bool check_program = true;  // also load elemwise_graph() and run it
  TierFactory extra_tiers;    // defaults to jit_tiers
  int jit_every = 8;          // JIT tiers on one case in this many (each costs LLVM compiles)
};

// A random Composite case, or (with go.loop_fraction) a ScalarLoop case.
DiffCase random_case(Rng& rng, const CompositeGenOptions& go = {});
DiffCase random_loop_case(Rng& rng, const CompositeGenOptions& go = {});
// ScalarLoop cases: every path (loop kernel over n, one element at a time,
// uneven chunks, strided layouts, the loaded graph) against loop_reference.
DiffResult run_case(const DiffCase& dc, const DiffOptions& o = {});

// A ScalarLoop case's ScalarLoop.
interp::ScalarLoop loop_of(const DiffCase& dc);
// A ScalarLoop case's outputs computed without the loop kernel: per element,
// the body (compiled as a plain Composite) run on that one element up to
// n_steps times, the carried values copied back in between.
std::vector<Array> loop_reference(const DiffCase& dc);
// The case as a one-node graph file (elemwise_graph or loop_graph).
nlohmann::json case_graph(const DiffCase& dc, const std::vector<bool>& one = {}, bool zero_d = false);

// Drops outputs, nodes, constants, inputs and elements while `still_fails`
// holds (ScalarLoop cases: elements only); returns the smallest case found.
DiffCase shrink(DiffCase dc, const std::function<bool(const DiffCase&)>& still_fails);

// Loads a graph file written by case_graph() back into a case.
DiffCase case_from_graph(const std::string& path);

// Equal bits, or both NaN.
bool same_value(DType dt, const void* a, const void* b);

}  // namespace ember::fuzz
