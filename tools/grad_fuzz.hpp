// Gradient fuzzing: random float64 Composites whose ops have derivative
// rules (interp/scalar_grad.def), in a graph inputs -> Elemwise(Composite) ->
// one weighted-sum cost with a "gradient" directive; the engine's gradient
// must agree with Richardson-extrapolated central differences of the cost.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "tools/random_graph.hpp"

namespace ember::fuzz {

struct GradCase {
  interp::Composite c;           // float64 inputs and outputs
  std::vector<int64_t> sizes;    // per input: its length, 1 (broadcast) or n
  std::vector<double> weights;   // per output, n weights (the cost's)
  int64_t n = 3;                 // the outputs' length
};

// A Composite of float64 values over the ops whose rules are defined where
// it needs them (an op's "undefined" operands are constants), Switches on
// comparisons, several outputs; then input lengths and weights.
GradCase random_grad_case(Rng& rng, const CompositeGenOptions& go = {});

// The graph: cost = sum_j sum(w_j * out_j), differentiated w.r.t. every input.
nlohmann::json grad_graph(const GradCase& gc);

struct GradResult {
  bool ok = true;
  int checked = 0;      // gradient entries compared
  int nonfinite = 0;    // skipped: the cost not finite near the point
  int not_smooth = 0;   // skipped: a kink, jump, staircase or noise (the differences disagree)
  int excused = 0;      // differed, excused by the Composite's values (see Excuse)
  std::string message;  // the first entry that differed
  void add(const GradResult& r);
};

// Where a differing entry is the rules' convention or beyond what
// differences can see, not a wrong rule: a non-finite gradient entry when
// some value inside the Composite is not finite (its NaN reaches the gradient
// through an untaken Switch branch or a zero factor, as in PyTensor); any
// entry when a Maximum or Minimum ties (both operands get the gradient, as in
// PyTensor) or when a rounding op's value (Floor, IntDiv, ...: rule "zero")
// changes within the steps (a staircase the differences average into a slope,
// or a value beyond 2^52 where rounding is the identity).
// Likewise a non-finite entry when a node sits where its rule is infinite
// and its value finite (arcsin(1), sqrt(0), ...: inf * 0 in the chain rule).
struct Excuse {
  bool nonfinite_inside = false;
  bool singular = false;
  bool tie = false;
  bool rounding_moves = false;
};
// For entry i at x with largest step h.
using ExcuseFn = std::function<Excuse(const std::vector<double>& x, size_t i, double h)>;

// A flat-point program's (point -> cost, gradient; a gradient directive's
// signature) gradient at x against central differences of its cost:
// steps h, h/2, h/4, each pair Richardson-extrapolated; an entry is skipped
// when the two extrapolations, the one-sided differences, or a difference
// at a step 2^-18 times smaller disagree beyond noise (not differentiable
// there at this scale). A non-finite entry where every difference is 0 (a
// flat cost through an infinite local derivative: 0 * inf) is excused.
GradResult check_gradient_at(const Program& p, const std::vector<double>& x, const ExcuseFn& why = nullptr);

// The case's Composite evaluated by the interpreter at x and x +- h in entry i.
Excuse excuse_at(const GradCase& gc, const std::vector<double>& x, size_t i, double h);

// Loads grad_graph(gc) and checks it at `points` random points. A load
// error is a failure (the generator only uses ops with rules).
GradResult run_grad_case(const GradCase& gc, Rng& rng, int points = 3);

}  // namespace ember::fuzz
