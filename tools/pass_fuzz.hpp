// Differential testing of the load-time graph passes
// (engine/program/passes/): random tensor graphs full of what the passes
// rewrite (constants to fold, duplicates, fills, neutral operands, view
// chains, dead nodes, element-wise chains and trees of several broadcast
// patterns), run with every pass off and with the passes on; the outputs
// must have the same dtypes, shapes and bits (NaNs compared as a class).
#pragma once
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "tools/random_graph.hpp"

namespace ember::fuzz {

struct PassCase {
  std::string graph;        // JSON document
  std::vector<Array> args;  // one per graph input, in order
};

struct PassResult {
  bool ok = true;
  std::string message;  // what differed; with the passes that alone reproduce it
};

PassCase random_pass_case(Rng& rng);

// Loads the case with passes off and with `on`, runs both, compares.
PassResult check_pass_case(const PassCase& c, const Options::Passes& on = Options::Passes{});

}  // namespace ember::fuzz
