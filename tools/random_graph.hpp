// Random graphs for differential testing and fuzzing: random Composites over
// every scalar op and dtype, input values biased toward special points, and
// small random tensor graphs as JSON documents (docs/graph-format.md).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "interp/composite.hpp"
#include "interp/scalar_loop.hpp"

namespace ember::fuzz {

using Rng = std::mt19937_64;

struct CompositeGenOptions {
  int max_inputs = 4;
  int max_constants = 3;
  int max_nodes = 10;
  int max_outputs = 3;
  // random_case: the share of cases that are ScalarLoops (0: none, and the
  // random stream of Composite cases is as without loops).
  double loop_fraction = 0;
};

// A Composite that passes Composite::validate(), over any op of
// interp/scalar_ops.def and any dtype of interp/dtype.def.
interp::Composite random_composite(Rng& rng, const CompositeGenOptions& o = {});

// A ScalarLoop that passes ScalarLoop::validate(): 1-3 carried values and
// 0-2 loop constants of any dtype, a random body of up to max_nodes / 2
// nodes, any n_steps dtype, and with `until` often a comparison of an update
// against a constant (so loops run a few steps, not always one).
interp::ScalarLoop random_loop(Rng& rng, const CompositeGenOptions& o = {});
// n trip counts of integer dtype dt: mostly 0-9, some negative (no
// iteration), a few up to 70.
Array random_steps(Rng& rng, DType dt, int64_t n, bool broadcast = false);

// A one-node Composite applying `op` (arity 1-3) in `dt` to inputs of `dt`.
interp::Composite single_op_composite(interp::ScalarOp op, DType dt);

// One value of dtype dt, biased toward special points: NaN, +-inf, +-0,
// subnormals, huge, tiny, and function poles and thresholds.
double special_float(Rng& rng, DType dt);
int64_t special_int(Rng& rng, DType dt);
interp::ScalarConst random_const(Rng& rng, DType dt);

// n elements of dtype dt (C-contiguous) biased toward special values;
// `broadcast` gives every element the same value.
Array random_values(Rng& rng, DType dt, int64_t n, bool broadcast = false);

// attrs.scalar_op of an Elemwise node holding c.
nlohmann::json composite_json(const interp::Composite& c);
// attrs.scalar_op of an Elemwise{ScalarLoop} node holding l.
nlohmann::json loop_json(const interp::ScalarLoop& l);
// A scalar value as the graph format writes it ("nan", "inf", -0.0, ...).
nlohmann::json value_json(DType dt, const void* p);

// A graph of one Elemwise node applying c to vectors of length n whose values
// are the graph's constants (so the file alone reproduces a case); inputs[k]
// holds n elements of c.inputs[k]. Inputs marked in `one` are written with
// shape (1,) (their first value; Elemwise broadcasts them); `zero_d` writes
// every variable as 0-d (n must be 1).
nlohmann::json elemwise_graph(const interp::Composite& c, const std::vector<Array>& inputs,
                              const std::vector<bool>& one = {}, bool zero_d = false);

// The same for a ScalarLoop: inputs[0] is n_steps, then the body's inputs.
nlohmann::json loop_graph(const interp::ScalarLoop& l, const std::vector<Array>& inputs,
                          const std::vector<bool>& one = {}, bool zero_d = false);

// c applied element by element through a Scan: the inputs (n elements
// each, constants) are its sequences, the inner graph one 0-d Elemwise of c,
// its outputs nit-sot vectors of n.
nlohmann::json scan_graph(const interp::Composite& c, const std::vector<Array>& inputs);

// A small random tensor graph (Elemwise, DimShuffle, Sum, ...) as a JSON
// document; its inputs are float64 with static shapes.
std::string random_tensor_graph(Rng& rng);

}  // namespace ember::fuzz
