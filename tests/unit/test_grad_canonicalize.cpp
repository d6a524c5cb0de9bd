// The canonicalizations of differentiated graphs (engine/program/grad/
// canonicalize.hpp) that are not exercised through a whole gradient here:
// cancelled terms and folded factors (canonize.cpp), lifted DimShuffles
// (dimshuffle_lift.cpp), each run alone, then dce, on a built graph.
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "engine/program/grad/canonicalize.hpp"
#include "engine/program/passes/passes.hpp"
#include "engine/program/program_impl.hpp"
#include "graph_builder.hpp"
#include "pass_harness.hpp"

using namespace ember;
using nlohmann::json;

namespace {

using Builder = test::GraphBuilder;

using test::Rewritten;
using test::rewritten;

using test::count;
using test::run;

// The static shape of each input of each Elemwise node of scalar op `op`.
std::vector<std::vector<int64_t>> operand_shapes(const std::shared_ptr<const Program>& p, const std::string& op) {
  std::vector<std::vector<int64_t>> r;
  const Graph& g = p->graph();
  for (const NodeSpec& n : g.nodes) {
    if (n.op != "Elemwise" || n.attrs["scalar_op"]["op"] != op) continue;
    const Shape& s = g.vars[n.inputs[0]].static_shape;
    r.emplace_back(s.dims, s.dims + s.ndim);
  }
  return r;
}


}  // namespace

TEST_CASE("a binomial coefficient's cancelled data term leaves gammaln on the parameter", "[gradient]") {
  // PyMC's NegativeBinomial: n = y + a - 1; gammaln(n - y + 1) + gammaln(n + 1).
  Builder b;
  const int a = b.input("float64", {1}, "a");
  const int y = b.constant("int64", {4}, {0, 3, 7, 12});
  const int one = b.constant("float64", {1}, {1.0});
  const int n = b.ew("Sub", {b.ew("Add", {y, a}, "float64", {4}), one}, "float64", {4});
  const int k = b.ew("Add", {b.ew("Sub", {n, y}, "float64", {4}), one}, "float64", {4});
  const int out = b.ew("Add", {b.ew("GammaLn", {k}, "float64", {4}),
                               b.ew("GammaLn", {b.ew("Add", {n, one}, "float64", {4})}, "float64", {4})},
                       "float64", {4});
  b.outputs = {out};
  const Rewritten r = rewritten(b, [](passes::Editor& e) {
    const int c = grad::cancel_terms(e);
    grad::sink_fills(e);
    return c;
  });
  CHECK(r.rewrites >= 2);
  // One gammaln on the (1,) parameter, one on y + a.
  const auto shapes = operand_shapes(r.after, "GammaLn");
  REQUIRE(shapes.size() == 2);
  CHECK(std::count(shapes.begin(), shapes.end(), std::vector<int64_t>{1}) == 1);
  for (double av : {0.3, 2.5, 40.0}) {
    const auto want = run(r.before, {av}), got = run(r.after, {av});
    REQUIRE(got.size() == 4);
    for (size_t i = 0; i < 4; ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-14));
  }
}

TEST_CASE("ops reading a constant of one repeated value run once on the value", "[gradient]") {
  // A truncated Poisson's normalizer: the lower bound folded to 400 ones
  // (fill(data, 0) + 1), so log(gammaincc(ones, mu)) ran per element.
  Builder b;
  const int mu = b.input("float64", {1}, "mu");
  const int y = b.input("float64", {5}, "y");
  const int ones = b.constant("float64", {5}, {1.0, 1.0, 1.0, 1.0, 1.0});
  const int mixed = b.constant("float64", {5}, {1.0, 1.0, 2.0, 1.0, 1.0});
  const int q = b.ew("GammaIncC", {ones, mu}, "float64", {5});
  const int lq = b.ew("Log", {q}, "float64", {5});
  const int other = b.ew("GammaIncC", {mixed, mu}, "float64", {5});
  b.outputs = {b.ew("Sub", {b.ew("Add", {y, other}, "float64", {5}), lq}, "float64", {5})};
  const Rewritten r = rewritten(b, grad::sink_fills);
  CHECK(r.rewrites >= 2);
  // The log and one gammaincc read the (1,) value; the mixed constant stays.
  CHECK(operand_shapes(r.after, "Log") == std::vector<std::vector<int64_t>>{{1}});
  const auto shapes = operand_shapes(r.after, "GammaIncC");
  REQUIRE(shapes.size() == 2);
  CHECK(std::count(shapes.begin(), shapes.end(), std::vector<int64_t>{1}) == 1);
  CHECK(count(r.after, "Second") == 0);  // y gives the sum its shape
  for (double m : {0.2, 3.0, 25.0}) {
    const std::vector<double> ys{1.0, -2.0, 0.5, 4.0, 0.0};
    const auto want = run(r.before, {m}, ys), got = run(r.after, {m}, ys);
    REQUIRE(got.size() == 5);
    for (size_t i = 0; i < 5; ++i) CHECK(std::memcmp(&got[i], &want[i], 8) == 0);
  }
}

TEST_CASE("integer powers become nested squarings as PyTensor builds them", "[gradient]") {
  for (const double y : {4.0, 5.0, 6.0, 13.0, -4.0, 2.5}) {
    Builder b;
    const int x = b.input("float64", {4}, "x");
    const int c = b.constant("float64", {1}, {y});
    b.outputs = {b.ew("Pow", {x, c}, "float64", {4})};
    const Rewritten r = rewritten(b, grad::specialize_powers);
    INFO("exponent " << y);
    if (y == 2.5) {  // not an integer, not 0.5 or 1.5: pow stays
      CHECK(r.rewrites == 0);
      continue;
    }
    CHECK(count(r.after, "Pow") == 0);
    const auto a = static_cast<int64_t>(std::fabs(y));
    // One Sqr per squaring of each set bit's chain (PyTensor repeats them; cse merges later).
    int sqr = 0, muls = -1;
    for (int64_t n = a; n > 0; n -= int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(n)))) {
      sqr += 63 - __builtin_clzll(static_cast<uint64_t>(n));
      ++muls;
    }
    CHECK(count(r.after, "Sqr") == sqr);
    CHECK(count(r.after, "Mul") == muls);
    const std::vector<double> xs{1.5, -0.75, 3.0, 1e-3};
    const auto got = run(r.after, xs);
    for (size_t i = 0; i < xs.size(); ++i) CHECK(got[i] == Approx(std::pow(xs[i], y)).epsilon(1e-14));
  }
}

TEST_CASE("a sum of outer products over the first axis becomes one matrix product", "[gradient]") {
  // An MvNormal gradient's sum_n r[:, n] s[:, n]^T, from two (p, N) solves.
  Builder b;
  const int r = b.input("float64", {2, 5}, "r");
  const int s = b.input("float64", {3, 5}, "s");
  const int x = b.node("DimShuffle", {r}, "float64", {5, 2, 1}, {{"new_order", json::array({1, 0, "x"})}});
  const int y = b.node("DimShuffle", {s}, "float64", {5, 1, 3}, {{"new_order", json::array({1, "x", 0})}});
  const int m = b.ew("Mul", {y, x}, "float64", {5, 2, 3});
  b.outputs = {b.node("Sum", {m}, "float64", {2, 3}, {{"axis", json::array({0})}})};
  const Rewritten rw = rewritten(b, grad::sum_outer_products);
  CHECK(rw.rewrites == 1);
  CHECK(count(rw.after, "Dot") == 1);
  CHECK(count(rw.after, "Mul") == 0);
  const std::vector<double> rv{0.5, -1.25, 2.0, 3.5, -0.75, 1.0, 0.25, -2.0, 4.0, 0.125};
  const std::vector<double> sv{1.5, 0.5, -1.0, 2.0, 3.0, -0.5, 0.75, 1.25, -2.5, 0.0, 2.25, -1.5, 1.0, 0.5, -0.25};
  const Array ra = Array::of<double>({2, {2, 5}}, rv), sa = Array::of<double>({2, {3, 5}}, sv);
  const Array want = rw.before->call({ra.t, sa.t}).at(0), got = rw.after->call({ra.t, sa.t}).at(0);
  REQUIRE(got.size() == 6);
  for (int64_t i = 0; i < 6; ++i) CHECK(got.t.at<double>(i) == Approx(want.t.at<double>(i)).epsilon(1e-15));
}

TEST_CASE("a sum of outer products whose summed dim may broadcast is left alone", "[gradient]") {
  Builder b;
  const int r = b.input("float64", {2, 1}, "r");
  const int s = b.input("float64", {3, 5}, "s");
  const int x = b.node("DimShuffle", {r}, "float64", {1, 2, 1}, {{"new_order", json::array({1, 0, "x"})}});
  const int y = b.node("DimShuffle", {s}, "float64", {5, 1, 3}, {{"new_order", json::array({1, "x", 0})}});
  b.outputs = {b.node("Sum", {b.ew("Mul", {x, y}, "float64", {5, 2, 3})}, "float64", {2, 3}, {{"axis", json::array({0})}})};
  CHECK(rewritten(b, grad::sum_outer_products).rewrites == 0);
}

TEST_CASE("terms that all cancel leave zeros of the sum's shape", "[gradient]") {
  Builder b;
  const int x = b.input("float64", {3}, "x");
  const int one = b.constant("float64", {1}, {1.0});
  const int s = b.ew("Sub", {b.ew("Add", {x, one}, "float64", {3}), b.ew("Add", {one, x}, "float64", {3})}, "float64",
                     {3});
  b.outputs = {b.ew("Exp", {s}, "float64", {3})};
  const Rewritten r = rewritten(b, grad::cancel_terms);
  CHECK(r.rewrites == 1);
  CHECK(run(r.after, {1e300, -2.0, 0.5}) == std::vector<double>{1.0, 1.0, 1.0});
  CHECK(count(r.after, "Sub") == 0);
}

TEST_CASE("a sum without cancelled terms or constants to fold is left as built", "[gradient]") {
  Builder b;
  const int x = b.input("float64", {3}, "x");
  const int two = b.constant("float64", {1}, {2.0});
  b.outputs = {b.ew("Sub", {b.ew("Add", {x, two}, "float64", {3}), b.ew("Exp", {x}, "float64", {3})}, "float64", {3})};
  CHECK(rewritten(b, grad::cancel_terms).rewrites == 0);
}

TEST_CASE("DimShuffles of scalar steps lift to the inputs and the steps meet", "[gradient]") {
  // exp(-x) for 0-d x, moved to (1,), times a (1,) input: the DimShuffle
  // sits between Neg/Exp and Mul; lifted, only the input is reshaped.
  Builder b;
  const int x = b.input("float64", json::array(), "x");
  const int e = b.ew("Exp", {b.ew("Neg", {x}, "float64", json::array())}, "float64", json::array());
  const int row = b.node("DimShuffle", {e}, "float64", {1}, {{"new_order", {"x"}}});
  b.outputs = {b.ew("Mul", {row, b.constant("float64", {1}, {3.0})}, "float64", {1})};
  const Rewritten r = rewritten(b, grad::lift_dimshuffles);
  CHECK(r.rewrites == 2);
  const Graph& g = r.after->graph();
  for (const NodeSpec& n : g.nodes) {
    if (n.op != "DimShuffle") continue;
    INFO("a DimShuffle reads " << n.inputs[0]);
    CHECK(n.inputs[0] == g.inputs[0].var);
  }
  CHECK(count(r.after, "DimShuffle") == 1);
  for (double xv : {-700.0, -1.5, 0.0, 2.25}) {
    Array a = Array::of<double>(Shape{0, {}}, {xv});
    std::vector<Tensor> t{a.t};
    const auto want = r.before->call(std::span<const Tensor>(t.data(), 1));
    const auto got = r.after->call(std::span<const Tensor>(t.data(), 1));
    CHECK(got[0].t.at<double>(0) == want[0].t.at<double>(0));  // exact
  }
}

TEST_CASE("a transposing DimShuffle is not lifted", "[gradient]") {
  Builder b;
  const int x = b.input("float64", {2, 3}, "x");
  const int e = b.ew("Exp", {x}, "float64", {2, 3});
  b.outputs = {b.node("DimShuffle", {e}, "float64", {3, 2}, {{"new_order", {1, 0}}})};
  CHECK(rewritten(b, grad::lift_dimshuffles).rewrites == 0);
}

TEST_CASE("a product's constants and signs fold into one", "[gradient]") {
  // -(-0.5 * x * 2) / s: the power rule's and the chain rule's leftovers.
  Builder b;
  const int x = b.input("float64", {3}, "x");
  const int s = b.constant("float64", {3}, {2.0, 3.0, 0.7});
  const int prod = b.ew("Mul", {b.constant("float64", {1}, {-0.5}), x, b.constant("float64", {1}, {2.0})}, "float64", {3});
  const int q = b.ew("TrueDiv", {b.ew("Neg", {prod}, "float64", {3}), s}, "float64", {3});
  b.outputs = {b.ew("Mul", {q, b.ew("TrueDiv", {s, s}, "float64", {3})}, "float64", {3})};
  const Rewritten r = rewritten(b, grad::fold_factors);
  CHECK(r.rewrites >= 1);
  // x / s, nothing else: the constants' product is 1, s / s goes.
  CHECK(count(r.after, "Mul") == 0);
  CHECK(count(r.after, "Neg") == 0);
  CHECK(count(r.after, "TrueDiv") == 1);
  const std::vector<double> xs{1.5, -4.0, 1e-300};
  const auto want = run(r.before, xs), got = run(r.after, xs);
  for (size_t i = 0; i < 3; ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-15));
}

TEST_CASE("a zero constant factor is not folded over a factor that may be infinite", "[gradient]") {
  Builder b;
  const int x = b.input("float64", {3}, "x");
  const int z = b.constant("float64", {1}, {0.0});
  b.outputs = {b.ew("Mul", {z, x, b.constant("float64", {1}, {2.0})}, "float64", {3})};
  const Rewritten r = rewritten(b, grad::fold_factors);
  CHECK(r.rewrites == 0);
  CHECK(std::isnan(run(r.after, {INFINITY, 0, 0})[0]));
}

TEST_CASE("increments of zeros added to a gradient increment the gradient instead", "[gradient]") {
  // exp(x) + inc(zeros, sin(x[1:]), 1:) + inc(zeros, cos(x[:-1]), :-1)
  Builder b;
  const int x = b.input("float64", {5}, "x");
  auto slice = [](json start, json stop) {
    return json::array({{{"type", "slice"}, {"start", start}, {"stop", stop}, {"step", nullptr}}});
  };
  const int zeros = b.constant("float64", {5}, {0.0, 0.0, 0.0, 0.0, 0.0});
  const int tail = b.node("Subtensor", {x}, "float64", {4}, {{"idx_list", slice(1, nullptr)}});
  const int head = b.node("Subtensor", {x}, "float64", {4}, {{"idx_list", slice(nullptr, -1)}});
  const int i1 = b.node("IncSubtensor", {zeros, b.ew("Sin", {tail}, "float64", {4})}, "float64", {5},
                        {{"idx_list", slice(1, nullptr)}, {"set_instead_of_inc", false}});
  const int i2 = b.node("IncSubtensor", {zeros, b.ew("Cos", {head}, "float64", {4})}, "float64", {5},
                        {{"idx_list", slice(nullptr, -1)}, {"set_instead_of_inc", false}});
  b.outputs = {b.ew("Add", {i1, b.ew("Exp", {x}, "float64", {5}), i2}, "float64", {5})};
  const Rewritten r = rewritten(b, grad::serialize_increments);
  CHECK(r.rewrites == 1);
  CHECK(count(r.after, "Add") == 0);
  CHECK(count(r.after, "IncSubtensor") == 2);
  const std::vector<double> xs{0.5, -1.0, 2.0, 0.25, 3.0};
  const auto want = run(r.before, xs), got = run(r.after, xs);
  for (size_t i = 0; i < 5; ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-15));
}

TEST_CASE("a sum of a switch on a condition constant along its axes switches the sum", "[gradient]") {
  // Sum(switch(c, exp(x), 0)) for a (1,) condition over (4,) values.
  Builder b;
  const int x = b.input("float64", {4}, "x");
  const int c = b.ew("GT", {b.node("Subtensor", {x}, "float64", {1},
                                   {{"idx_list", json::array({{{"type", "slice"}, {"start", 0}, {"stop", 1},
                                                               {"step", nullptr}}})}}),
                            b.constant("float64", {1}, {0.0})},
                     "bool", {1});
  const int sw = b.ew("Switch", {c, b.ew("Exp", {x}, "float64", {4}), b.constant("float64", {1}, {0.0})}, "float64",
                      {4});
  b.outputs = {b.node("Sum", {sw}, "float64", json::array(), {{"axis", nullptr}})};
  const Rewritten r = rewritten(b, grad::sum_broadcasts);
  CHECK(r.rewrites == 1);
  // The Switch reads the Sum now: no per-element switch.
  const Graph& g = r.after->graph();
  for (const NodeSpec& n : g.nodes)
    if (n.op == "Elemwise" && n.attrs["scalar_op"]["op"] == "Switch") CHECK(g.vars[n.outputs[0]].static_shape.ndim == 0);
  for (const std::vector<double>& xs : {std::vector<double>{1.0, 2.0, -3.0, 0.5}, {-1.0, NAN, 800.0, 0.5}}) {
    const auto want = run(r.before, xs), got = run(r.after, xs);
    CHECK(got[0] == Approx(want[0]).epsilon(1e-15));
  }
}

TEST_CASE("a batched triangular solve of one matrix becomes one solve of a matrix", "[gradient]") {
  Builder b;
  const int v = b.input("float64", {4, 3}, "v");
  const int a = b.constant("float64", {1, 3, 3}, {2.0, 0.0, 0.0, 0.5, 1.5, 0.0, -1.0, 0.25, 3.0});
  json core = {{"op", "SolveTriangular"},
               {"attrs", {{"lower", true}, {"trans", 0}, {"unit_diagonal", false}, {"b_ndim", 1}}}};
  b.outputs = {b.node("Blockwise", {a, v}, "float64", {4, 3}, {{"core_op", core}, {"signature", "(m,m),(m)->(m)"}})};
  const Rewritten r = rewritten(b, grad::unbatch_solves);
  CHECK(r.rewrites == 1);
  CHECK(count(r.after, "Blockwise") == 0);
  CHECK(count(r.after, "SolveTriangular") == 1);
  std::vector<double> xs;
  for (int i = 0; i < 12; ++i) xs.push_back(std::sin(1.0 + i));
  Array in = Array::of<double>(Shape{2, {4, 3}}, xs);
  std::vector<Tensor> t{in.t};
  const auto want = r.before->call(std::span<const Tensor>(t.data(), 1));
  const auto got = r.after->call(std::span<const Tensor>(t.data(), 1));
  REQUIRE(got[0].size() == 12);
  for (int64_t i = 0; i < 12; ++i) CHECK(got[0].t.at<double>(i) == Approx(want[0].t.at<double>(i)).epsilon(1e-14));
}

TEST_CASE("a batch of triangular matrices each broadcast along its vectors becomes a batch of matrix solves",
          "[gradient]") {
  // A covariance per group: A (2, 1, 3, 3) against b (2, 4, 3); trans 1 is the gradient's solve.
  for (const int trans : {0, 1}) {
    INFO("trans " << trans);
    Builder b;
    const int v = b.input("float64", {2, 4, 3}, "v");
    const int a = b.constant("float64", {2, 1, 3, 3},
                             {2.0, 0.0, 0.0, 0.5, 1.5, 0.0, -1.0, 0.25, 3.0, 1.2, 0.0, 0.0, -0.4, 0.8, 0.0, 0.3, 0.6, 2.5});
    json core = {{"op", "SolveTriangular"},
                 {"attrs", {{"lower", true}, {"trans", trans}, {"unit_diagonal", false}, {"b_ndim", 1}}}};
    b.outputs = {b.node("Blockwise", {a, v}, "float64", {2, 4, 3}, {{"core_op", core}, {"signature", "(m,m),(m)->(m)"}})};
    const Rewritten r = rewritten(b, grad::unbatch_solves);
    CHECK(r.rewrites == 1);
    // One Blockwise over the 2 groups, each a solve against a (3, 4) matrix.
    const Graph& g = r.after->graph();
    int solves = 0;
    for (const NodeSpec& n : g.nodes) {
      if (n.op != "Blockwise") continue;
      ++solves;
      CHECK(n.attrs["signature"] == "(m,m),(m,n)->(m,n)");
      CHECK(g.vars[n.outputs[0]].static_shape.dims[0] == 2);
      CHECK(g.vars[n.outputs[0]].static_shape.dims[2] == 4);
    }
    CHECK(solves == 1);
    std::vector<double> xs;
    for (int i = 0; i < 24; ++i) xs.push_back(std::sin(1.0 + i));
    Array in = Array::of<double>(Shape{3, {2, 4, 3}}, xs);
    std::vector<Tensor> t{in.t};
    const auto want = r.before->call(std::span<const Tensor>(t.data(), 1));
    const auto got = r.after->call(std::span<const Tensor>(t.data(), 1));
    REQUIRE(got[0].size() == 24);
    for (int64_t i = 0; i < 24; ++i) CHECK(got[0].t.at<double>(i) == Approx(want[0].t.at<double>(i)).epsilon(1e-14));
  }
  SECTION("matrices not broadcast along the vectors stay") {
    Builder b;
    const int v = b.input("float64", {2, 3}, "v");
    const int a = b.input("float64", {2, 3, 3}, "a");
    json core = {{"op", "SolveTriangular"},
                 {"attrs", {{"lower", true}, {"trans", 0}, {"unit_diagonal", false}, {"b_ndim", 1}}}};
    b.outputs = {b.node("Blockwise", {a, v}, "float64", {2, 3}, {{"core_op", core}, {"signature", "(m,m),(m)->(m)"}})};
    CHECK(rewritten(b, grad::unbatch_solves).rewrites == 0);
  }
}

TEST_CASE("cholesky of L L^T is L for an L set into zeros on and below the diagonal", "[gradient]") {
  for (const bool lower : {true, false}) {
    INFO("indices " << (lower ? "on and below" : "above") << " the diagonal");
    Builder b;
    const int v = b.input("float64", {6}, "v");
    const int z = b.constant("float64", {3, 3}, std::vector<double>(9, 0.0));
    const int rows = b.constant("int64", {6}, lower ? json{0, 1, 1, 2, 2, 2} : json{0, 0, 1, 0, 1, 2});
    const int cols = b.constant("int64", {6}, lower ? json{0, 0, 1, 0, 1, 2} : json{0, 1, 1, 2, 2, 2});
    json idx = json::array({{{"type", "array"}, {"input", 2}}, {{"type", "array"}, {"input", 3}}});
    const int l = b.node("AdvancedIncSubtensor", {z, v, rows, cols}, "float64", {3, 3},
                         {{"idx_list", idx}, {"set_instead_of_inc", true}, {"ignore_duplicates", false}});
    const int lt = b.node("DimShuffle", {l}, "float64", {3, 3}, {{"new_order", {1, 0}}});
    const int cov = b.node("Dot", {l, lt}, "float64", {3, 3});
    b.outputs = {b.node("Cholesky", {cov}, "float64", {3, 3}, {{"lower", true}, {"on_error", "nan"}})};
    const Rewritten r = rewritten(b, grad::cholesky_of_llt);
    CHECK(r.rewrites == (lower ? 1 : 0));
    CHECK(count(r.after, "Cholesky") == (lower ? 0 : 1));
    const std::vector<double> vs{1.5, 0.3, 2.0, -0.7, 0.4, 0.9};  // a positive diagonal
    Array in = Array::of<double>(Shape{1, {6}}, vs);
    std::vector<Tensor> t{in.t};
    const auto want = r.before->call(std::span<const Tensor>(t.data(), 1));
    const auto got = r.after->call(std::span<const Tensor>(t.data(), 1));
    for (int64_t i = 0; i < 9; ++i) CHECK(got[0].t.at<double>(i) == Approx(want[0].t.at<double>(i)).epsilon(1e-13));
  }
}

TEST_CASE("a tiny parameter's sum with cancelling constants keeps its digits", "[gradient]") {
  // A negative binomial's (y + n - 1) + 1 and ((y + n - 1) - y) + 1 with a
  // tiny n: n - 1 + 1 is 0 in float64, and gammaln(0) is inf.
  for (int form = 0; form < 2; ++form) {
    INFO("form " << form);
    Builder b;
    const int n = b.input("float64", {1}, "n");
    const int y = b.constant("int64", {3}, {0, 2, 5});
    const int c = b.constant("float64", {1}, {1.0});
    const int m = b.ew("Sub", {b.ew("Add", {y, n}, "float64", {3}), c}, "float64", {3});
    const int inner = form == 0 ? m : b.ew("Sub", {m, y}, "float64", {3});
    b.outputs = {b.ew("Add", {inner, c}, "float64", {3})};
    const Rewritten r = rewritten(b, grad::cancel_terms);
    CHECK(r.rewrites == (form == 0 ? 1 : 2));
    CHECK(count(r.after, "Sub") == 0);
    CHECK(count(r.after, "Second") == form);  // y still gives the length 3
    CHECK(run(r.before, {1e-20})[0] == 0);
    const std::vector<double> got = run(r.after, {1e-20});
    REQUIRE(got.size() == 3);
    for (int i = 0; i < 3; ++i) CHECK(got[i] == (form == 0 ? std::vector<double>{0, 2, 5}[i] + 1e-20 : 1e-20));
    const std::vector<double> a = run(r.before, {0.75}), z = run(r.after, {0.75});
    for (int i = 0; i < 3; ++i) CHECK(z[i] == Approx(a[i]).epsilon(1e-15));
  }
}
