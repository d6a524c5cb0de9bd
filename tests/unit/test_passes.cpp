// The load-time graph passes (engine/program/passes/): what each one
// rewrites, what it must leave, and that a passed program gives the bits of
// the unpassed one.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "interp/config.hpp"
#include "ember/ember.hpp"
#include "engine/ops/elemwise.hpp"
#include "engine/program/program_impl.hpp"
#include "graph_builder.hpp"
#include "test_util.hpp"
#include "tools/differential.hpp"
#include "tools/pass_fuzz.hpp"

using namespace ember;
using nlohmann::json;

namespace {

const Options::Passes kOff{false, false, false, false, false, false};

Options with(Options::Passes p) {
  Options o;
  o.passes = p;
  return o;
}

Options only(const char* name) {
  Options::Passes p = kOff;
  if (!std::strcmp(name, "dce")) p.dce = true;
  if (!std::strcmp(name, "fold")) p.fold = true;
  if (!std::strcmp(name, "cse")) p.cse = true;
  if (!std::strcmp(name, "simplify")) p.simplify = true;
  if (!std::strcmp(name, "fuse")) p.fuse = true;
  if (!std::strcmp(name, "scalarize")) p.scalarize = true;
  return with(p);
}

using Builder = test::GraphBuilder;

size_t nodes_of(const std::shared_ptr<const Program>& p) { return p->graph().nodes.size(); }

int count_op(const std::shared_ptr<const Program>& p, const std::string& op, const std::string& scalar = "") {
  int n = 0;
  for (const NodeSpec& s : p->graph().nodes)
    if (s.op == op && (scalar.empty() || s.attrs["scalar_op"]["op"] == scalar)) ++n;
  return n;
}

std::vector<Array> call(const std::shared_ptr<const Program>& p, const std::vector<Array>& args) {
  std::vector<Tensor> v;
  for (const Array& a : args) v.push_back(a.t);
  return p->call(std::span<const Tensor>(v.data(), v.size()));
}

// Same dtypes, shapes and bits (NaN as a class).
void check_same(const std::vector<Array>& a, const std::vector<Array>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("output " << k);
    REQUIRE(a[k].t.dtype == b[k].t.dtype);
    REQUIRE(a[k].t.shape.str() == b[k].t.shape.str());
    const size_t es = dtype_size(a[k].t.dtype);
    for (int64_t i = 0; i < a[k].size(); ++i) {
      INFO("element " << i);
      CHECK(fuzz::same_value(a[k].t.dtype, static_cast<char*>(a[k].t.data) + i * es,
                             static_cast<char*>(b[k].t.data) + i * es));
    }
  }
}

// Loads `g` with the passes `o` and without any, runs both on `args`,
// requires the same bits; returns the passed program.
std::shared_ptr<const Program> same_bits(const std::string& g, const std::vector<Array>& args,
                                         const Options& o = Options{}) {
  auto on = Program::from_json(g, o), off = Program::from_json(g, with(kOff));
  check_same(call(off, args), call(on, args));
  return on;
}

Array vec(std::vector<double> x) { return Array::of<double>(Shape{1, {static_cast<int64_t>(x.size())}}, x); }

}  // namespace

TEST_CASE("passes_dce_removes_nodes_that_reach_no_output") {
  Builder b;
  const int x = b.input("float64", {3});
  b.ew("Exp", {x}, "float64", {3});  // dead
  const int y = b.ew("Neg", {x}, "float64", {3});
  b.ew("Log", {y}, "float64", {3});  // dead
  b.outputs = {y};
  auto p = same_bits(b.str(), {vec({1, -2, 3})}, only("dce"));
  CHECK(nodes_of(p) == 1);
  CHECK(p->impl().pass_report.passes.at(0).rewrites == 2);
}

TEST_CASE("passes_fold_evaluates_constant_nodes_with_the_kernels_bits") {
  Builder b;
  const int x = b.input("float64", {3});
  const int c = b.constant("float64", json::array(), {0.1});
  const int d = b.constant("int8", json::array(), {3});
  const int e = b.ew("Exp", {c}, "float64", json::array());
  const int f = b.ew("Pow", {e, d}, "float64", json::array());
  const int g = b.node("DimShuffle", {f}, "float64", {1}, {{"new_order", {"x"}}});
  const int y = b.ew("Mul", {x, g}, "float64", {3});
  b.outputs = {y, f};
  auto p = same_bits(b.str(), {vec({1, -2, 3})}, only("fold"));
  CHECK(nodes_of(p) == 1);
  // The folded value is what the kernel computes at run time.
  auto off = Program::from_json(b.str(), with(kOff));
  auto want = call(off, {vec({1, 2, 3})});
  auto got = call(p, {vec({1, 2, 3})});
  CHECK(std::memcmp(want[1].t.data, got[1].t.data, 8) == 0);
  CHECK(p->outputs()[1].var == f);  // the output keeps its variable, now a constant
}

TEST_CASE("passes_fold_leaves_failing_nodes_to_the_call") {
  Builder b;
  const int c = b.constant("float64", {2}, {1.0, 2.0});
  const int no = b.constant("bool", json::array(), {false});
  const int chk = b.node("CheckAndRaise", {c, no}, "float64", {2}, {{"msg", "always fails"}});
  b.outputs = {chk};
  auto p = Program::from_json(b.str(), only("fold"));
  CHECK(nodes_of(p) == 1);
  CHECK_THROWS_WITH(p->call(std::span<const Tensor>()), Catch::Matchers::Contains("always fails"));
}

TEST_CASE("passes_cse_merges_equal_nodes_and_constants") {
  Builder b;
  const int x = b.input("float64", {3});
  const int c1 = b.constant("float64", json::array(), {2.0});
  const int c2 = b.constant("float64", json::array(), {2.0});
  const int c3 = b.constant("float64", json::array(), {-0.0});
  const int c4 = b.constant("float64", json::array(), {0.0});
  const int d1 = b.node("DimShuffle", {c1}, "float64", {1}, {{"new_order", {"x"}}});
  const int d2 = b.node("DimShuffle", {c2}, "float64", {1}, {{"new_order", {"x"}}});
  const int a1 = b.ew("Mul", {x, d1}, "float64", {3});
  const int a2 = b.ew("Mul", {x, d2}, "float64", {3});
  const int s = b.ew("Add", {a1, a2}, "float64", {3});
  const int z3 = b.node("DimShuffle", {c3}, "float64", {1}, {{"new_order", {"x"}}});
  const int z4 = b.node("DimShuffle", {c4}, "float64", {1}, {{"new_order", {"x"}}});
  const int t = b.ew("Add", {s, z3}, "float64", {3});
  const int u = b.ew("Add", {t, z4}, "float64", {3});
  b.outputs = {u};
  auto p = same_bits(b.str(), {vec({1, -0.0, 3})}, only("cse"));
  // d2 and a2 merge (constants 2.0 merge first); -0.0 and 0.0 are different constants.
  CHECK(nodes_of(p) == 7);
}

TEST_CASE("passes_simplify_fill_neg_neg_and_neutral_operands") {
  Builder b;
  const int x = b.input("float64", {4});
  const int one = b.constant("float64", {1}, {1.0});
  const int mzero = b.constant("float64", {1}, {-0.0});
  const int pzero = b.constant("int8", {1}, {0});
  const int two = b.constant("int8", {1}, {2});
  const int m1 = b.constant("float64", {1}, {-1.0});
  const int n1 = b.ew("Neg", {x}, "float64", {4});
  const int n2 = b.ew("Neg", {n1}, "float64", {4});          // x
  const int f = b.ew("Second", {x, n2}, "float64", {4});      // n2
  const int m = b.ew("Mul", {one, f}, "float64", {4});        // f
  const int a = b.ew("Add", {m, mzero}, "float64", {4});      // m
  const int s = b.ew("Sub", {a, pzero}, "float64", {4});      // a
  const int d = b.ew("TrueDiv", {s, one}, "float64", {4});    // s
  const int q = b.ew("Pow", {d, two}, "float64", {4});        // Sqr(d)
  const int r = b.ew("Pow", {q, m1}, "float64", {4});         // Reciprocal(q)
  b.outputs = {r};
  const std::vector<Array> args = {vec({1.5, -0.0, NAN, -INFINITY})};
  Options o = only("simplify");
  o.passes.dce = true;
  auto p = same_bits(b.str(), args, o);
  CHECK(count_op(p, "Elemwise") == 2);
  CHECK(count_op(p, "Elemwise", "Sqr") == 1);
  CHECK(count_op(p, "Elemwise", "Reciprocal") == 1);
}

TEST_CASE("passes_simplify_keeps_inexact_identities") {
  Builder b;
  const int x = b.input("float64", {3});
  const int pzero = b.constant("float64", {1}, {0.0});
  const int mzero = b.constant("float64", {1}, {-0.0});
  const int half = b.constant("float64", {1}, {0.5});
  const int a = b.ew("Add", {x, pzero}, "float64", {3});     // -0.0 + 0.0 is +0.0: stays
  const int s = b.ew("Sub", {a, mzero}, "float64", {3});     // x - (-0.0) is x + 0.0: stays
  const int q = b.ew("Pow", {s, half}, "float64", {3});      // not sqrt at -0.0, -inf: stays
  b.outputs = {q};
  auto p = same_bits(b.str(), {vec({-0.0, -INFINITY, 4.0})}, only("simplify"));
  CHECK(nodes_of(p) == 3);
}

TEST_CASE("passes_simplify_keeps_operands_that_shape_the_output") {
  Builder b;
  const int x = b.input("float64", {1});
  const int ones = b.constant("float64", {3}, {1.0, 1.0, 1.0});
  const int y = b.ew("Mul", {x, ones}, "float64", {3});  // broadcasts x: a fill of x * 1 (uniform ones)
  const int z = b.ew("Second", {y, x}, "float64", {3});  // fills: stays
  b.outputs = {z};
  auto p = same_bits(b.str(), {vec({2.0})}, only("simplify"));
  CHECK(nodes_of(p) == 3);
  CHECK(count_op(p, "Elemwise", "Second") == 2);
}

TEST_CASE("passes_simplify_views_dimshuffle_chains_reshape_subtensor") {
  Builder b;
  const int x = b.input("float64", {2, 3}, "x");
  const int t = b.node("DimShuffle", {x}, "float64", {3, 2}, {{"new_order", {1, 0}}});
  const int u = b.node("DimShuffle", {t}, "float64", {1, 2, 3}, {{"new_order", {"x", 1, 0}}});
  const int v = b.node("DimShuffle", {u}, "float64", {2, 3}, {{"new_order", {1, 2}}});  // x
  const int shape = b.constant("int64", {2}, {2, 3});
  const int r = b.node("Reshape", {v, shape}, "float64", {2, 3}, {{"ndim", 2}});       // x
  const int s = b.node("Subtensor", {r}, "float64", {2, 3},
                       {{"idx_list", {{{"type", "slice"}, {"start", nullptr}, {"stop", nullptr}, {"step", nullptr}}}}});
  const int sp = b.node("SpecifyShape", {s}, "float64", {2, 3}, {{"shape", {nullptr, nullptr}}});
  const int c = b.node("DeepCopyOp", {sp}, "float64", {2, 3});
  const int e = b.ew("Exp", {c}, "float64", {2, 3});
  b.outputs = {e};
  Array xa = Array::of<double>(Shape{2, {2, 3}}, {1, 2, 3, 4, 5, 6});
  Options o = only("simplify");
  o.passes.dce = true;
  auto p = same_bits(b.str(), {xa}, o);
  CHECK(nodes_of(p) == 1);
}

// Constant index vectors over a matrix's two axes (PyMC's imputation of a
// matrix indexes by mask.nonzero(); a 0-d entry broadcasts), or a 2-D
// constant mask, index the flattened matrix: the one-axis ops, the same bits,
// repeated entries accumulated in order. An index out of range stays, and
// so do a few entries.
TEST_CASE("passes_simplify_constant_index_vectors_over_two_axes_index_the_flat_array") {
  using nlohmann::json;
  // 20 entries (a few stay as they are): rows 3 and 4 after the first four.
  std::vector<int64_t> r = {2, 0, 2, -1}, c = {1, 3, 1, 0};
  for (int i = 0; i < 16; ++i) {
    r.push_back(3 + i % 2);
    c.push_back(i % 4);
  }
  std::vector<bool> m(20, true);
  m[1] = m[6] = false;
  Builder b;
  const int x = b.input("float64", {5, 4}, "x"), y = b.input("float64", {20}, "y");
  const int rows = b.constant("int64", {20}, r), cols = b.constant("int32", {20}, c);
  const int row0 = b.constant("int64", json::array(), {1});
  const int mask = b.constant("bool", {5, 4}, m);
  const json two = {{{"type", "array"}, {"input", 1}}, {{"type", "array"}, {"input", 2}}};
  const json two_inc = {{{"type", "array"}, {"input", 2}}, {{"type", "array"}, {"input", 3}}};
  const json one = {{{"type", "array"}, {"input", 1}}};
  const int g = b.node("AdvancedSubtensor", {x, rows, cols}, "float64", {20}, {{"idx_list", two}});
  const int g0 = b.node("AdvancedSubtensor", {x, row0, cols}, "float64", {20}, {{"idx_list", two}});
  const int gm = b.node("AdvancedSubtensor", {x, mask}, "float64", {18}, {{"idx_list", one}});
  const int ad = b.node("AdvancedIncSubtensor", {x, y, rows, cols}, "float64", {5, 4},
                        {{"idx_list", two_inc}, {"set_instead_of_inc", false}, {"ignore_duplicates", false}});
  const int st = b.node("AdvancedIncSubtensor", {x, g0, rows, cols}, "float64", {5, 4},
                        {{"idx_list", two_inc}, {"set_instead_of_inc", true}, {"ignore_duplicates", false}});
  b.outputs = {g, g0, gm, ad, st};
  std::vector<double> xv(20), yv(20);
  for (int i = 0; i < 20; ++i) {
    xv[i] = 0.1 * i - 0.35;
    yv[i] = 0.25 * i;
  }
  yv[0] = 1e16;
  yv[2] = -1e16;
  const std::vector<Array> args = {Array::of<double>(Shape{2, {5, 4}}, xv), Array::of<double>(Shape{1, {20}}, yv)};
  auto p = same_bits(b.str(), args, only("simplify"));
  CHECK(count_op(p, "AdvancedSubtensor") == 0);
  CHECK(count_op(p, "AdvancedIncSubtensor") == 0);
  CHECK(count_op(p, "AdvancedSubtensor1") == 3);
  CHECK(count_op(p, "AdvancedIncSubtensor1") == 2);
  const std::vector<Array> out = call(p, args);
  CHECK(out[0].data<double>()[3] == xv[16]);       // x[-1, 0]
  CHECK(out[1].data<double>()[1] == xv[7]);        // x[1, 3]
  CHECK(out[2].data<double>()[2] == xv[3]);        // the mask's third true entry
  CHECK(out[3].data<double>()[9] == (xv[9] + 1e16) + -1e16);  // x[2, 1] += y0, then y2, in order

  Builder bad;
  const int xb = bad.input("float64", {5, 4}, "x");
  std::vector<int64_t> r5(20, 0);
  r5[7] = 5;  // out of range
  const int ri = bad.constant("int64", {20}, r5), ci = bad.constant("int64", {20}, std::vector<int64_t>(20, 0));
  bad.outputs = {bad.node("AdvancedSubtensor", {xb, ri, ci}, "float64", {20}, {{"idx_list", two}})};
  auto q = Program::from_json(bad.str(), only("simplify"));
  CHECK(count_op(q, "AdvancedSubtensor") == 1);
  CHECK_THROWS(call(q, {Array::of<double>(Shape{2, {5, 4}}, xv)}));
}

// A scalar filled to the data's shape and then transformed (a truncation's
// log1mexp of its bound, once an Alloc to the shape it has is gone) is
// transformed once and filled after: f(Second(a, b)) -> Second(a, f(b)), the
// same bits. A fill whose shape another operand gives anyway is dropped.
TEST_CASE("passes_fills_sink_below_element_wise_ops_after_simplify") {
  Builder b;
  const int v = b.input("float64", {5}, "v"), s = b.input("float64", {1}, "s"), t = b.input("float64", {1}, "t");
  const int f = b.ew("Second", {v, s}, "float64", {5});
  const int five = b.constant("int64", json::array(), {5});
  const int al = b.node("Alloc", {f, five}, "float64", {5});    // f: simplify removes it
  const int l = b.ew("Log1mexp", {al}, "float64", {5});         // Second(v, Log1mexp(s))
  const int m = b.ew("Mul", {l, t}, "float64", {5});             // Second(v, Mul(Log1mexp(s), t))
  const int w = b.ew("Sub", {b.ew("Second", {v, t}, "float64", {5}), v}, "float64", {5});  // Sub(t, v)
  b.outputs = {m, w};
  const std::vector<Array> args = {vec({1.5, -2, 3, NAN, -0.0}), vec({-0.25}), vec({3.0})};
  Options o = only("simplify");
  o.passes.dce = true;
  auto p = same_bits(b.str(), args, o);
  int small = 0;
  for (const NodeSpec& n : p->graph().nodes) {
    const std::string op = n.attrs.value("scalar_op", json::object()).value("op", "");
    if (op == "Log1mexp" || op == "Mul") {
      CHECK(p->graph().vars[n.outputs[0]].static_shape.dims[0] == 1);
      ++small;
    }
  }
  CHECK(small == 2);
  CHECK(count_op(p, "Elemwise", "Second") == 1);
  CHECK(count_op(p, "Elemwise", "Sub") == 1);
}

// A constant boolean mask over axis 0 (PyMC's imputation of missing values)
// is the gather and the updates of its true positions: the one-axis ops, the
// same bits. A mask whose length is not x's stays, and the call reports it.
TEST_CASE("passes_simplify_constant_masks_become_index_vectors") {
  using nlohmann::json;
  Builder b;
  const int x = b.input("float64", {6}, "x"), y = b.input("float64", {3}, "y");
  const int mask = b.constant("bool", {6}, {true, false, true, true, false, false});
  const json sub = {{{"type", "array"}, {"input", 1}}}, inc = {{{"type", "array"}, {"input", 2}}};
  const int g = b.node("AdvancedSubtensor", {x, mask}, "float64", {3}, {{"idx_list", sub}});
  const int st = b.node("AdvancedIncSubtensor", {x, y, mask}, "float64", {6},
                        {{"idx_list", inc}, {"set_instead_of_inc", true}, {"ignore_duplicates", false}});
  const int ad = b.node("AdvancedIncSubtensor", {x, g, mask}, "float64", {6},
                        {{"idx_list", inc}, {"set_instead_of_inc", false}, {"ignore_duplicates", false}});
  b.outputs = {g, st, ad};
  const std::vector<Array> args = {vec({1.5, -2, 3, NAN, 5, -0.0}), vec({10, 20, 30})};
  auto p = same_bits(b.str(), args, only("simplify"));
  CHECK(count_op(p, "AdvancedSubtensor") == 0);
  CHECK(count_op(p, "AdvancedIncSubtensor") == 0);
  CHECK(count_op(p, "AdvancedSubtensor1") == 1);
  CHECK(count_op(p, "AdvancedIncSubtensor1") == 2);
  const std::vector<Array> out = call(p, args);
  CHECK(out[0].data<double>()[1] == 3.0);
  CHECK(out[1].data<double>()[3] == 30.0);
  CHECK(out[2].data<double>()[2] == 6.0);

  Builder bad;
  const int x5 = bad.input("float64", {5}, "x");
  const int m6 = bad.constant("bool", {6}, {true, false, true, true, false, false});
  bad.outputs = {bad.node("AdvancedSubtensor", {x5, m6}, "float64", {3}, {{"idx_list", sub}})};
  auto q = Program::from_json(bad.str(), only("simplify"));
  CHECK(count_op(q, "AdvancedSubtensor") == 1);
  CHECK_THROWS(call(q, {vec({1, 2, 3, 4, 5})}));
}

// All and Any of one bool element are that element: of a (1,) vector a 0-d
// view, of a 0-d value the value itself (ZeroSumNormal's check reduces a 0-d
// comparison twice). The bool decides a Switch, both ways.
TEST_CASE("passes_simplify_all_and_any_of_one_element_are_that_element") {
  Builder b;
  const int x = b.input("float64", json::array(), "x");
  const int ok = b.ew("LE", {b.ew("Abs", {x}, "float64", json::array()), b.constant("float64", json::array(), {1.0})},
                      "bool", json::array());
  const int all = b.node("All", {b.node("All", {ok}, "bool", json::array(), {{"axis", nullptr}})}, "bool",
                         json::array(), {{"axis", nullptr}});
  const int v = b.node("DimShuffle", {ok}, "bool", {1}, {{"new_order", {"x"}}});
  const int any = b.node("Any", {v}, "bool", json::array(), {{"axis", nullptr}});
  const int low = b.constant("float64", json::array(), {-1e300});
  b.outputs = {b.ew("Switch", {all, x, low}, "float64", json::array()),
               b.ew("Switch", {any, low, x}, "float64", json::array())};
  Options o = only("simplify");
  o.passes.dce = true;
  for (double xv : {0.5, -3.0}) {
    auto p = same_bits(b.str(), {Array::of<double>(Shape{}, {xv})}, o);
    CHECK(count_op(p, "All") == 0);
    CHECK(count_op(p, "Any") == 0);
  }
}

TEST_CASE("passes_simplify_keeps_specify_shape_checks_made_at_run_time") {
  Builder b;
  const int x = b.input("float64", {json(nullptr)}, "x");
  const int n = b.input("int64", json::array(), "n");
  const int y = b.input("float64", {3}, "y");
  const int three = b.constant("int64", json::array(), {3});
  const int sx = b.node("SpecifyShape", {x, n}, "float64", {json(nullptr)}, {{"shape", {{{"input", 1}}}}});
  const int sy = b.node("SpecifyShape", {y, three}, "float64", {3}, {{"shape", {{{"input", 1}}}}});
  const int ex = b.ew("Exp", {sx}, "float64", {json(nullptr)});
  const int ey = b.ew("Exp", {sy}, "float64", {3});
  b.outputs = {ex, ey};
  Options o = only("simplify");
  auto p = Program::from_json(b.str(), o);
  CHECK(count_op(p, "SpecifyShape") == 1);  // x's: its length is checked against n
  Array xa = vec({1, 2}), na = Array::of<int64_t>(Shape{}, {3}), ya = vec({1, 2, 3});
  CHECK_THROWS_WITH(call(p, {xa, na, ya}), Catch::Matchers::Contains("expected 3"));
  same_bits(b.str(), {vec({1, 2, 3}), na, ya}, o);
}

TEST_CASE("passes_graph_outputs_keep_names_and_variables") {
  Builder b;
  const int x = b.input("float64", {3}, "x");
  const int n1 = b.ew("Neg", {x}, "float64", {3});
  const int n2 = b.ew("Neg", {n1}, "float64", {3});  // x itself
  b.vars[n2]["name"] = "same_as_x";
  const int e = b.ew("Exp", {x}, "float64", {3});
  const int e2 = b.ew("Exp", {x}, "float64", {3});   // merged with e
  b.vars[e2]["name"] = "exp_again";
  b.vars[e]["name"] = "exp";
  b.outputs = {n2, e, e2};
  auto p = same_bits(b.str(), {vec({1, 2, 3})});
  REQUIRE(p->outputs().size() == 3);
  CHECK(p->outputs()[0].name == "same_as_x");
  CHECK(p->outputs()[1].name == "exp");
  CHECK(p->outputs()[2].name == "exp_again");
  CHECK(p->outputs()[0].var == n2);
  CHECK(p->outputs()[2].var == e2);
}

TEST_CASE("passes_fuse_chains_and_trees_of_any_shape") {
  Builder b;
  const int x = b.input("float64", {json(nullptr)}, "x");
  const int y = b.input("float64", {json(nullptr)}, "y");
  const int s = b.input("float64", {1}, "s");
  const int e = b.ew("Exp", {x}, "float64", {json(nullptr)});
  const int m = b.ew("Mul", {e, s}, "float64", {json(nullptr)});
  const int l = b.ew("Log1p", {y}, "float64", {json(nullptr)});
  const int a = b.ew("Add", {m, l}, "float64", {json(nullptr)});
  const int sum = b.node("Sum", {e}, "float64", json::array(), {{"axis", nullptr}});  // e is used outside
  b.outputs = {a, sum};
  auto p = same_bits(b.str(), {vec({0.5, -1, 2, 3}), vec({1, 2, 3, 4}), vec({-2})}, only("fuse"));
  CHECK(nodes_of(p) == 2);
  const auto* k = dynamic_cast<const ElemwiseKernel*>(p->impl().steps[0].kernel);
  REQUIRE(k);
  CHECK(k->composite().nodes.size() == 4);
  CHECK(k->composite().outputs.size() == 2);  // a, and e for the Sum
}

TEST_CASE("passes_fuse_separates_broadcast_patterns_and_avoids_cycles") {
  Builder b;
  const int x = b.input("float64", {3}, "x");
  const int s = b.input("float64", {1}, "s");
  const int t = b.ew("Exp", {s}, "float64", {1});          // (1,): its own pattern
  const int e = b.ew("Exp", {x}, "float64", {3});
  const int sum = b.node("Sum", {e}, "float64", json::array(), {{"axis", nullptr}});
  const int d = b.node("DimShuffle", {sum}, "float64", {1}, {{"new_order", {"x"}}});
  // e -> Sum -> d -> m: fusing e with m would need the Sum inside.
  const int m = b.ew("Mul", {e, d}, "float64", {3});
  const int a = b.ew("Add", {m, t}, "float64", {3});
  b.outputs = {a};
  auto p = same_bits(b.str(), {vec({0.5, -1, 2}), vec({-2})}, only("fuse"));
  // e alone; m and a fused; t alone.
  CHECK(count_op(p, "Elemwise") == 3);
}

TEST_CASE("passes_fuse_merges_readers_of_one_operand") {
  // A logp term and its gradient over the same data: two independent
  // Elemwise nodes, one fused node with two outputs.
  Builder b;
  const int x = b.input("float64", {json(nullptr)}, "x");
  const int y = b.input("float64", {json(nullptr)}, "y");
  const int e = b.ew("Exp", {x}, "float64", {json(nullptr)});
  const int l = b.ew("Mul", {x, y}, "float64", {json(nullptr)});
  b.outputs = {e, l};
  auto p = same_bits(b.str(), {vec({0.5, -1, 2}), vec({1, 2, 3})}, only("fuse"));
  CHECK(count_op(p, "Elemwise") == 1);
}

TEST_CASE("passes_fuse_keeps_readers_of_a_broadcast_operand_apart") {
  // s broadcasts against w and against z, whose lengths differ: fused, the
  // two would have to share one shape.
  Builder b;
  const int s = b.input("float64", {1}, "s");
  const int w = b.input("float64", {json(nullptr)}, "w");
  const int z = b.input("float64", {json(nullptr)}, "z");
  const int a = b.ew("Add", {s, w}, "float64", {json(nullptr)});
  const int m = b.ew("Mul", {s, z}, "float64", {json(nullptr)});
  b.outputs = {a, m};
  auto p = same_bits(b.str(), {vec({2}), vec({1, 2}), vec({1, 2, 3})}, only("fuse"));
  CHECK(count_op(p, "Elemwise") == 2);
}

TEST_CASE("passes_fuse_bounds_operands") {
  Builder b;
  std::vector<int> xs;
  for (int k = 0; k < 40; ++k) xs.push_back(b.input("float64", {2}));
  int acc = xs[0];
  for (int k = 1; k < 40; ++k) acc = b.ew("Add", {acc, xs[k]}, "float64", {2});
  b.outputs = {acc};
  std::vector<Array> args;
  for (int k = 0; k < 40; ++k) args.push_back(vec({double(k), -0.5 * k}));
  auto p = same_bits(b.str(), args, only("fuse"));
  CHECK(nodes_of(p) == 2);
  for (const Step& st : p->impl().steps) CHECK(st.in.size() + st.out.size() <= 32);
}

TEST_CASE("passes_errors_name_the_files_nodes") {
  Builder b;
  const int x = b.input("float64", {3});
  const int c = b.constant("float64", {3}, {1.0, 2.0, 3.0});
  const int dead = b.ew("Exp", {c}, "float64", {3});
  (void)dead;
  const int y = b.ew("Neg", {x}, "float64", {3});
  const int z = b.node("Sum", {y}, "float64", json::array(), {{"axis", {5}}});  // node 2: bad axis
  b.outputs = {z};
  CHECK_THAT(test::load_error(b.str()), Catch::Matchers::Contains("node 2 (Sum)"));
}

TEST_CASE("passes_switches") {
  Builder b;
  const int x = b.input("float64", {3});
  const int n1 = b.ew("Neg", {x}, "float64", {3});
  const int n2 = b.ew("Neg", {n1}, "float64", {3});
  const int e = b.ew("Exp", {n2}, "float64", {3});
  b.outputs = {e};
  Options o;
  o.passes.simplify = false;
  o.passes.fuse = false;
  o.passes.scalarize = false;
  CHECK(nodes_of(Program::from_json(b.str(), o)) == 3);
  setenv("EMBER_PASSES", "0", 1);
  config_reload_for_tests();
  CHECK(nodes_of(Program::from_json(b.str())) == 3);
  unsetenv("EMBER_PASSES");
  setenv("EMBER_PASS_SIMPLIFY", "0", 1);
  config_reload_for_tests();
  auto p = Program::from_json(b.str());
  unsetenv("EMBER_PASS_SIMPLIFY");
  config_reload_for_tests();
  CHECK(nodes_of(p) == 1);  // fused, not simplified
  CHECK(dynamic_cast<const ElemwiseKernel*>(p->impl().steps[0].kernel)->composite().nodes.size() == 3);
  CHECK(nodes_of(Program::from_json(b.str())) == 1);
}

TEST_CASE("passes_are_deterministic_and_idempotent") {
  const std::string g = test::read_text(test::data_path("hierarchical_logp.json"));
  auto a = Program::from_json(g), b = Program::from_json(g);
  std::vector<uint8_t> pa, pb;
  CHECK(a->graph().to_json(&pa).dump() == b->graph().to_json(&pb).dump());
  CHECK(pa == pb);
  auto c = Program::from_graph(a->graph());
  CHECK(c->graph().nodes.size() == a->graph().nodes.size());
}

TEST_CASE("passes_random_graphs_same_bits") {
  fuzz::Rng rng(20240611);
  for (int k = 0; k < 400; ++k) {
    const uint64_t seed = rng();
    fuzz::Rng r(seed);
    const fuzz::PassCase c = fuzz::random_pass_case(r);
    const fuzz::PassResult res = fuzz::check_pass_case(c);
    INFO("case seed " << seed << ": " << res.message << "\n" << c.graph);
    REQUIRE(res.ok);
  }
}

// The batch pass (after fuse) batched 4 members into one Elemwise over (4, 20).
void check_one_batch_of_four(const Program& p) {
  const auto& passes = p.impl().pass_report.passes;
  REQUIRE(passes.size() == 2);
  CHECK(passes[1].name == "batch");
  CHECK(passes[1].rewrites == 4);
  int batched = 0;
  for (const NodeSpec& s : p.graph().nodes)
    if (s.op == "Elemwise" && s.outputs.size() == 1 && p.graph().vars[s.outputs[0]].static_shape.str() == "(4, 20)")
      ++batched;
  CHECK(batched == 1);
}

// A likelihood per group, written as a loop: each group's (y_g - mu_g) / s_g
// squared and summed, over its own constant data and one-element parameters.
// The batch pass runs the groups of one shape as one node over (G, 20) with
// row sums; a group of another shape, or whose values are read elsewhere,
// stays as it was.
TEST_CASE("passes_batch_runs_sibling_group_likelihoods_as_one_node") {
  Builder b;
  std::vector<Array> args;
  std::vector<int> outs;
  auto group = [&](int n, int g) {
    json data = json::array();
    for (int i = 0; i < n; ++i) data.push_back(std::sin(0.7 * i + g) * (g + 1));
    const int y = b.constant("float64", {n}, data);
    const int mu = b.input("float64", {1}), s = b.input("float64", {1});
    args.push_back(vec({0.1 * g - 0.2}));
    args.push_back(vec({0.5 + 0.25 * g}));
    const int d = b.ew("TrueDiv", {b.ew("Sub", {y, mu}, "float64", {n}), s}, "float64", {n});
    const int sq = b.ew("Mul", {d, d}, "float64", {n});
    outs.push_back(b.node("Sum", {sq}, "float64", json::array(), {{"axis", nullptr}}));
    return sq;
  };
  for (int g = 0; g < 4; ++g) group(20, g);
  group(10, 4);                   // another shape
  const int shared = group(20, 5);  // also read elsewhere
  outs.push_back(b.ew("Neg", {shared}, "float64", {20}));
  b.outputs = outs;
  auto p = same_bits(b.str(), args, only("fuse"));
  check_one_batch_of_four(*p);
  CHECK(count_op(p, "Sum") == 1 + 1 + 1);  // the batch's row sums, the (10,) group, the shared group
  // Without the fuse pass the groups are not Composites and nothing batches.
  auto unfused = Program::from_json(b.str(), only("dce"));
  for (const auto& st : unfused->impl().pass_report.passes) CHECK(st.name != "batch");
}

// As a model loop writes it: each group's parameters computed just before its
// likelihood, so the members stand between one another's inputs. They batch
// all the same; a group whose parameter reads another group's sum (directly
// or through other nodes) does not, as the batched node would then read its
// own output.
TEST_CASE("passes_batch_takes_groups_whose_parameters_are_computed_between_them") {
  Builder b;
  std::vector<Array> args;
  std::vector<int> sums;
  auto group = [&](int g, int extra_mu) {
    json data = json::array();
    for (int i = 0; i < 20; ++i) data.push_back(std::cos(0.3 * i - g) * (g + 2));
    const int y = b.constant("float64", {20}, data);
    const int theta = b.input("float64", {1});
    args.push_back(vec({0.2 * g - 0.5}));
    int mu = b.ew("Exp", {theta}, "float64", {1});  // computed per group, between the members
    if (extra_mu >= 0) mu = b.ew("Add", {mu, b.ew("Log1p", {b.ew("Exp", {extra_mu}, "float64", {1})}, "float64", {1})}, "float64", {1});
    const int d = b.ew("Sub", {y, mu}, "float64", {20});
    const int sq = b.ew("Mul", {d, d}, "float64", {20});
    sums.push_back(b.node("Sum", {sq}, "float64", json::array(), {{"axis", nullptr}}));
  };
  for (int g = 0; g < 4; ++g) group(g, -1);
  // Its mu reads group 1's sum (as a one-element value, through DimShuffle).
  group(4, b.node("DimShuffle", {sums[1]}, "float64", json::array({1}), {{"new_order", json::array({"x"})}}));
  b.outputs = sums;
  auto p = same_bits(b.str(), args, only("fuse"));
  check_one_batch_of_four(*p);
  CHECK(count_op(p, "Sum") == 2);  // the batch's row sums and the dependent group's
  // The stacked parameters, joined as (4, 1), are written in place by the
  // one-element fusion: neither the Join nor the reshapes is a step.
  for (const Step& st : p->impl().steps) {
    CHECK(st.op != TensorOp::Join);
    CHECK(st.op != TensorOp::DimShuffle);
  }
}

// A model's tail over small vectors: a slice of the point, an Elemwise over
// it, its sum, the pieces joined, one element incremented, a MakeVector of
// values rewritten nodes made. Scalarized, the whole stretch is one fused
// step with the unpassed program's bits; without the pass, a step per node.
TEST_CASE("passes_scalarize_runs_a_small_stretch_as_one_step") {
  Builder b;
  const int x = b.input("float64", {3});
  const json slice = json::array({json{{"type", "slice"}, {"start", 0}, {"stop", 2}, {"step", nullptr}}});
  const int y = b.node("Subtensor", {x}, "float64", {2}, {{"idx_list", slice}});
  const int e = b.ew("Exp", {y}, "float64", {2});
  const int m = b.ew("Mul", {e, y}, "float64", {2});
  const int s = b.node("Sum", {m}, "float64", json::array(), {{"axis", nullptr}});
  const int s1 = b.node("DimShuffle", {s}, "float64", {1}, {{"new_order", {"x"}}});
  const int j = b.node("Join", {s1, m}, "float64", {3}, {{"axis", 0}});
  const json one = json::array({json{{"type", "index"}, {"value", -2}}});
  const int inc = b.node("IncSubtensor", {j, s}, "float64", {3}, {{"idx_list", one}, {"set_instead_of_inc", false}});
  // A MakeVector of a value a rewritten DimShuffle made.
  const int s0 = b.node("DimShuffle", {s1}, "float64", json::array(), {{"new_order", json::array()}});
  const int mv = b.node("MakeVector", {s0, s}, "float64", {2});
  b.outputs = {s, inc, mv};
  const std::vector<Array> args{vec({0.3, -1.7, 2.5})};
  auto p = same_bits(b.str(), args, only("scalarize"));
  CHECK(p->impl().steps.size() == 1);
  CHECK(count_op(p, "Join") == 0);
  CHECK(count_op(p, "IncSubtensor") == 0);
  CHECK(count_op(p, "Sum") == 0);
  CHECK(Program::from_json(b.str(), with(kOff))->impl().steps.size() > 1);
}

// PyTensor leaves a Join of pieces of known length (ZeroSumNormal's vector
// and its negated sum) of unknown length, and so everything downstream. The
// inputs' static shapes fix it: refined, the Shape of an Elemwise of the
// Join folds to a constant, and a Split of it by constant lengths, an
// increment of it and a DimShuffle have known shapes too. A graph output
// keeps the static shape it was declared with.
TEST_CASE("passes_shapes_fix_a_joins_length_and_fold_what_reads_it") {
  Builder b;
  const int x = b.input("float64", {5});
  const int s = b.node("Sum", {x}, "float64", json::array(), {{"axis", nullptr}});
  const int last = b.node("DimShuffle", {b.ew("Neg", {s}, "float64", json::array())}, "float64", {1},
                          {{"new_order", {"x"}}});
  const int j = b.node("Join", {x, last}, "float64", {json(nullptr)}, {{"axis", 0}});
  const int e = b.ew("Exp", {j}, "float64", {json(nullptr)});
  const int n = b.ew("Cast", {b.node("Shape", {e}, "int64", {1})}, "float64", {1});
  const int parts = b.constant("int64", {2}, {5, 1});
  const int head = b.var("float64", {nullptr}), tail = b.var("float64", {nullptr});
  b.nodes.push_back({{"op", "Split"}, {"inputs", {e, parts}}, {"outputs", {head, tail}},
                     {"attrs", {{"axis", 0}, {"len_splits", 2}}}});
  const int head_sum = b.node("Sum", {b.ew("Neg", {head}, "float64", {nullptr})}, "float64", json::array(),
                              {{"axis", nullptr}});
  const int inc = b.node("IncSubtensor", {e, s}, "float64", {json(nullptr)},
                         {{"idx_list", json::array({json{{"type", "index"}, {"value", 0}}})}, {"set_instead_of_inc", false}});
  const int col = b.node("DimShuffle", {inc}, "float64", {json(nullptr), 1}, {{"new_order", {0, "x"}}});
  b.outputs = {n, head_sum, tail, col};
  Options::Passes on = kOff;
  on.simplify = on.fold = true;
  auto p = same_bits(b.str(), {vec({0.3, -1.2, 0.5, 2.0, -0.1})}, with(on));
  CHECK(count_op(p, "Shape") == 0);
  const auto& vars = p->graph().vars;
  auto dims = [&](int v) { return vars[v].static_shape.str(); };
  const Shape six = Shape{1, {6}};
  const std::string five = Shape{1, {5}}.str();
  int seen = 0;
  auto expect = [&](int v, const std::string& want) {
    CHECK(dims(v) == want);
    ++seen;
  };
  for (const NodeSpec& nd : p->graph().nodes) {
    const json op = nd.op == "Elemwise" ? nd.attrs["scalar_op"]["op"] : json(nd.op);
    if (op == "Exp" || op == "IncSubtensor") expect(nd.outputs[0], six.str());
    if (op == "Split") expect(nd.outputs[0], five);
    if (op == "Neg" && vars[nd.outputs[0]].static_shape.ndim == 1) expect(nd.outputs[0], five);
  }
  CHECK(seen == 4);
  // Graph outputs as declared: a split piece and the column.
  CHECK(vars[tail].static_shape.dims[0] < 0);
  CHECK(vars[col].static_shape.dims[0] < 0);
  // Without simplify (and so without the refinement) the Shape stays.
  on.simplify = false;
  CHECK(count_op(Program::from_json(b.str(), with(on)), "Shape") == 1);
}

// PyTensor leaves x[:-1] and x[1:] of a known vector unknown (an
// Euler-Maruyama model's increments). Literal basic indexing of an input of
// known dims fixes them: slices by their lengths, an index drops its axis,
// the axes past the list stay the input's.
TEST_CASE("passes_shapes_fix_literal_slices_of_a_known_vector") {
  Builder b;
  const int x = b.input("float64", {100, 3});
  auto sub = [&](json idx, json shape) {
    return b.node("Subtensor", {x}, "float64", shape, {{"idx_list", idx}});
  };
  auto sl = [](json start, json stop, json step) {
    return json{{"type", "slice"}, {"start", start}, {"stop", stop}, {"step", step}};
  };
  const int head = sub(json::array({sl(nullptr, -1, nullptr)}), {nullptr, nullptr});
  const int tail = sub(json::array({sl(1, nullptr, nullptr)}), {nullptr, nullptr});
  const int every3 = sub(json::array({sl(-10, nullptr, 3), json{{"type", "index"}, {"value", -1}}}), {nullptr});
  const int diff = b.ew("Sub", {tail, head}, "float64", {nullptr, nullptr});
  const int total = b.node("Sum", {diff}, "float64", json::array(), {{"axis", nullptr}});
  const int t3 = b.node("Sum", {every3}, "float64", json::array(), {{"axis", nullptr}});
  b.outputs = {total, t3};
  Options::Passes on = kOff;
  on.simplify = true;
  std::vector<double> xs(300);
  for (int i = 0; i < 300; ++i) xs[i] = 0.01 * i - 1;
  auto p = Program::from_json(b.str(), with(on));
  const auto& vars = p->graph().vars;
  CHECK(vars[head].static_shape.str() == Shape{2, {99, 3}}.str());
  CHECK(vars[tail].static_shape.str() == Shape{2, {99, 3}}.str());
  CHECK(vars[diff].static_shape.str() == Shape{2, {99, 3}}.str());
  CHECK(vars[every3].static_shape.str() == Shape{1, {4}}.str());  // rows 90, 93, 96, 99
  // The values are the same with and without the refinement.
  Array a = Array::of<double>({2, {100, 3}}, xs);
  auto off = Program::from_json(b.str(), with(kOff));
  const auto y = p->call({a.t}), z = off->call({a.t});
  CHECK(y[0].data<double>()[0] == z[0].data<double>()[0]);
  CHECK(y[1].data<double>()[0] == z[1].data<double>()[0]);
}

// A gradient's pieces as PyTensor writes them: one element of a zero vector
// incremented by a one-element value, then read back by literal indices and
// joined. With no Elemwise or Sum over a tensor, the stretch still becomes
// part of the one-element step: every tensor it rewrites is read inside it,
// or is a vector (a MakeVector the step writes in place). A stretch whose
// (2, 1) tensor a node left as it is reads keeps its Join: its elements
// would need a MakeVector and a Reshape, one step more than the Join.
TEST_CASE("passes_scalarize_folds_a_gradients_increment_into_the_one_element_step") {
  {
    Builder b;
    const int x = b.input("float64", {2});
    const json at0 = json::array({json{{"type", "index"}, {"value", 0}}});
    const json at1 = json::array({json{{"type", "index"}, {"value", 1}}});
    const int x0 = b.node("Subtensor", {x}, "float64", json::array(), {{"idx_list", at0}});
    const int e = b.ew("Exp", {x0}, "float64", json::array());
    const int zeros = b.constant("float64", {2}, {0.0, 0.0});
    const int inc = b.node("IncSubtensor", {zeros, e}, "float64", {2}, {{"idx_list", at1}, {"set_instead_of_inc", false}});
    const int g0 = b.node("Subtensor", {inc}, "float64", json::array(), {{"idx_list", at0}});
    const int g1 = b.node("Subtensor", {inc}, "float64", json::array(), {{"idx_list", at1}});
    const int lp = b.ew("Mul", {e, g1}, "float64", json::array());
    const int g0v = b.node("DimShuffle", {g0}, "float64", {1}, {{"new_order", {"x"}}});
    const int g1v = b.node("DimShuffle", {b.ew("Neg", {g1}, "float64", json::array())}, "float64", {1}, {{"new_order", {"x"}}});
    b.outputs = {lp, b.node("Join", {g0v, g1v}, "float64", {2}, {{"axis", 0}})};
    auto p = same_bits(b.str(), {vec({-0.4, 1.3})}, only("scalarize"));
    CHECK(count_op(p, "IncSubtensor") == 0);
    CHECK(p->impl().steps.size() == 1);
    CHECK(Program::from_json(b.str(), with(kOff))->impl().steps.size() > 1);
  }
  {
    Builder b;
    const int x = b.input("float64", {2});
    const json at0 = json::array({json{{"type", "index"}, {"value", 0}}});
    const json at1 = json::array({json{{"type", "index"}, {"value", 1}}});
    auto col = [&](const json& at) {
      const int xi = b.node("Subtensor", {x}, "float64", json::array(), {{"idx_list", at}});
      return b.node("DimShuffle", {b.ew("Exp", {xi}, "float64", json::array())}, "float64", {1, 1},
                    {{"new_order", {"x", "x"}}});
    };
    const int j = b.node("Join", {col(at0), col(at1)}, "float64", {2, 1}, {{"axis", 0}});
    const int row = b.node("DimShuffle", {x}, "float64", {1, 2}, {{"new_order", {"x", 0}}});
    b.outputs = {b.node("Dot", {j, row}, "float64", {2, 2})};
    auto p = same_bits(b.str(), {vec({-0.4, 1.3})}, only("scalarize"));
    CHECK(count_op(p, "Join") == 1);
    CHECK(count_op(p, "Reshape") == 0);
  }
}

// A Sum's Add chain follows the summation tree of its R elements: left to
// right below 8, else 8 lanes combined pairwise and the tail folded in.
// Terms of +-1e16 among small ones make other orders round differently; reduced
// over every axis, trailing axes and a leading one.
TEST_CASE("passes_scalarize_sums_in_the_reduction_trees_order") {
  for (const auto& [shape, axes] : std::vector<std::pair<std::vector<int64_t>, json>>{
           {{13}, nullptr}, {{16}, nullptr}, {{7}, nullptr}, {{2, 6}, {1}}, {{4, 3}, {0}}, {{2, 2, 3}, {0, 2}}}) {
    Builder b;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const int x = b.input("float64", {n});
    const int r = b.node("Reshape", {x, b.constant("int64", {static_cast<int64_t>(shape.size())}, shape)}, "float64",
                         shape, {{"ndim", shape.size()}});
    const int sq = b.ew("Add", {r, r}, "float64", shape);
    json kept = json::array();
    for (size_t d = 0; d < shape.size(); ++d)
      if (axes.is_null() ? false : std::find(axes.begin(), axes.end(), json(d)) == axes.end()) kept.push_back(shape[d]);
    b.outputs = {b.node("Sum", {sq}, "float64", kept, {{"axis", axes}})};
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(i % 3 == 0 ? (i % 2 ? -1e16 : 1e16) : 1.0 + 0.1 * i);
    INFO("shape " << json(shape).dump() << " axes " << axes.dump());
    auto p = same_bits(b.str(), {vec(v)}, only("scalarize"));
    CHECK(count_op(p, "Sum") == 0);
  }
}

// What stays: a lone small node (its picks and elements would be as many
// steps), an out-of-range literal index (its error is the call's), and values
// read by an op the pass leaves, which get a tensor of the elements back in
// their own shape.
TEST_CASE("passes_scalarize_leaves_lone_nodes_and_feeds_readers_left_as_they_are") {
  {
    Builder b;
    const int x = b.input("float64", {3});
    b.outputs = {b.ew("Exp", {x}, "float64", {3})};
    auto p = same_bits(b.str(), {vec({1, 2, 3})}, only("scalarize"));
    CHECK(p->graph().nodes.size() == 1);
  }
  {
    Builder b;
    const int x = b.input("float64", {4});
    const int m = b.node("Reshape", {x, b.constant("int64", {2}, {2, 2})}, "float64", {2, 2}, {{"ndim", 2}});
    const int e = b.ew("Exp", {m}, "float64", {2, 2});
    const int t = b.node("DimShuffle", {e}, "float64", {2, 2}, {{"new_order", {1, 0}}});
    const int big = b.node("Dot", {t, m}, "float64", {2, 2});
    b.outputs = {big, t};
    auto p = same_bits(b.str(), {vec({0.5, -1, 2, 0.25})}, only("scalarize"));
    CHECK(count_op(p, "Dot") == 1);
    CHECK(count_op(p, "DimShuffle") == 0);
  }
  {
    Builder b;
    const int x = b.input("float64", {3});
    const json bad = json::array({json{{"type", "index"}, {"value", 3}}});
    const int pick = b.node("Subtensor", {b.ew("Exp", {x}, "float64", {3})}, "float64", json::array(), {{"idx_list", bad}});
    b.outputs = {b.ew("Neg", {pick}, "float64", json::array())};
    Options o = only("scalarize");
    CHECK_THROWS(Program::from_json(b.str(), o));
    CHECK_THROWS(Program::from_json(b.str(), with(kOff)));
  }
}

// Rows taken by a constant index vector are picks; a cumulative sum or
// product is its chain in NumPy's order, along an axis or flattened. An index
// out of range keeps its node (and its error).
TEST_CASE("passes_scalarize_takes_constant_rows_and_cumulative_ops") {
  Builder b;
  const int x = b.input("float64", {6});
  const int m = b.node("Reshape", {x, b.constant("int64", {2}, {3, 2})}, "float64", {3, 2}, {{"ndim", 2}});
  const int t = b.node("AdvancedSubtensor1", {m, b.constant("int64", {3}, {2, -1, 0})}, "float64", {3, 2});
  const int e = b.ew("Exp", {t}, "float64", {3, 2});
  const int c0 = b.node("CumOp", {e}, "float64", {3, 2}, {{"axis", 0}, {"mode", "add"}});
  const int c1 = b.node("CumOp", {e}, "float64", {6}, {{"axis", nullptr}, {"mode", "mul"}});
  b.outputs = {b.node("Sum", {c0}, "float64", json::array(), {{"axis", nullptr}}), c1};
  auto p = same_bits(b.str(), {vec({0.3, -1.7, 2.5, 1e-3, -4.0, 0.7})}, only("scalarize"));
  CHECK(count_op(p, "CumOp") == 0);
  CHECK(count_op(p, "AdvancedSubtensor1") == 0);
  CHECK(p->impl().steps.size() == 1);

  Builder bad;
  const int y = bad.input("float64", {3});
  const int ty = bad.node("AdvancedSubtensor1", {bad.ew("Exp", {y}, "float64", {3}), bad.constant("int64", {2}, {0, 3})},
                          "float64", {2});
  bad.outputs = {bad.node("Sum", {ty}, "float64", json::array(), {{"axis", nullptr}})};
  auto q = Program::from_json(bad.str(), only("scalarize"));
  CHECK(count_op(q, "AdvancedSubtensor1") == 1);
}

// log(x[idx]) per observation is log(x) per group, gathered: the same scalar
// op on the same values, so the same bits; cheap ops, short indices and two
// gathered operands stay, and an index out of range still fails.
TEST_CASE("passes_costly_element_wise_work_on_gathered_values_runs_on_the_values_gathered_from") {
  Builder b;
  const int x = b.input("float64", {4}, "x"), m = b.input("float64", {3, 2}, "m");
  const int idx = b.constant("int64", {9}, {0, 3, 1, 1, 2, 0, 3, 3, 2});
  const int rows = b.constant("int64", {6}, {2, 0, 2, 1, 0, 2});
  const int g = b.node("AdvancedSubtensor1", {x, idx}, "float64", {9});
  const int lg = b.ew("Log", {g}, "float64", {9});                                     // lifted
  const int dv = b.ew("TrueDiv", {b.constant("float64", {1}, {1.5}), g}, "float64", {9});  // lifted
  const int ml = b.ew("Mul", {g, b.constant("float64", {1}, {2.0})}, "float64", {9});    // cheap: stays
  const int gm = b.node("AdvancedSubtensor1", {m, rows}, "float64", {6, 2});
  const int sq = b.ew("Sqrt", {gm}, "float64", {6, 2});                                // rows of a matrix: lifted
  const int short_idx = b.constant("int64", {5}, {0, 1, 2, 3, 0});
  const int gs = b.node("AdvancedSubtensor1", {x, short_idx}, "float64", {5});
  const int ex = b.ew("Exp", {gs}, "float64", {5});                                    // 5 < 2 * 4: stays
  const int two = b.ew("Pow", {g, b.node("AdvancedSubtensor1", {x, idx}, "float64", {9})}, "float64", {9});  // two gathered: stays
  b.outputs = {lg, dv, ml, sq, ex, two};
  const std::vector<Array> args = {vec({2.5, -1.0, NAN, 0.0}),
                                   Array::of<double>(Shape{2, {3, 2}}, {4.0, -0.0, 1e-300, 9.0, 2.0, INFINITY})};
  Options o = only("simplify");
  o.passes.dce = true;
  auto p = same_bits(b.str(), args, o);
  const Graph& gr = p->graph();
  for (const NodeSpec& n : gr.nodes) {
    if (n.op != "Elemwise") continue;
    const std::string op = n.attrs["scalar_op"]["op"];
    const Shape& s = gr.vars[n.outputs[0]].static_shape;
    INFO(op);
    if (op == "Log" || op == "TrueDiv") CHECK(s.dims[0] == 4);
    if (op == "Sqrt") CHECK((s.dims[0] == 3 && s.dims[1] == 2));
    if (op == "Mul") CHECK(s.dims[0] == 9);
    if (op == "Exp") CHECK(s.dims[0] == 5);
    if (op == "Pow") CHECK(s.dims[0] == 9);
  }
  // An index out of range fails either way.
  Builder bad;
  const int bx = bad.input("float64", {2}, "x");
  const int bi = bad.constant("int64", {5}, {0, 1, 2, 0, 1});
  bad.outputs = {bad.ew("Log", {bad.node("AdvancedSubtensor1", {bx, bi}, "float64", {5})}, "float64", {5})};
  for (const Options& opt : {o, with(kOff)}) {
    auto q = Program::from_json(bad.str(), opt);
    CHECK_THROWS_WITH(call(q, {vec({1.0, 2.0})}), Catch::Contains("out of bounds") || Catch::Contains("out of range"));
  }
}

// switch(m, A, B) on a constant mask computes the branch its few entries take
// only there: A's element-wise graph runs on the gathered entries, then is
// scattered back; the other entries (NaN here) never reach the output. A
// branch read elsewhere, a mask true at more than a third of its entries and
// a cheap branch stay.
TEST_CASE("passes_a_switch_on_a_constant_mask_computes_its_rare_branch_only_where_the_mask_selects_it") {
  Builder b;
  const int x = b.input("float64", {8}, "x"), y = b.input("float64", {8}, "y");
  const int rare = b.constant("bool", {8}, {false, true, false, false, false, false, true, false});
  const int common = b.constant("bool", {8}, {true, true, true, false, true, true, true, true});
  const int half = b.constant("bool", {8}, {true, false, true, false, true, false, true, false});
  const int lx = b.ew("Log", {x}, "float64", {8});
  const int a = b.ew("Mul", {lx, b.ew("Exp", {y}, "float64", {8})}, "float64", {8});  // log(x) * exp(y)
  const int s1 = b.ew("Switch", {rare, a, y}, "float64", {8});                         // A at 2 of 8
  const int gl = b.ew("GammaLn", {y}, "float64", {8});
  const int s2 = b.ew("Switch", {common, x, gl}, "float64", {8});                      // B at 1 of 8
  const int s3 = b.ew("Switch", {half, b.ew("Sqrt", {x}, "float64", {8}), y}, "float64", {8});  // 4 of 8: stays
  const int s4 = b.ew("Switch", {rare, b.ew("Add", {x, y}, "float64", {8}), x}, "float64", {8});  // cheap: stays
  b.outputs = {s1, s2, s3, s4};
  const std::vector<Array> args = {vec({-1.0, 2.5, NAN, 0.0, 3.0, -0.0, 1e-300, INFINITY}),
                                   vec({800.0, -1.0, 2.0, -3.0, 0.5, NAN, 0.25, -2.0})};
  Options o = only("simplify");
  o.passes.dce = true;
  auto p = same_bits(b.str(), args, o);
  const Graph& g = p->graph();
  for (const NodeSpec& n : g.nodes) {
    if (n.op != "Elemwise") continue;
    const std::string op = n.attrs["scalar_op"]["op"];
    INFO(op);
    const int64_t len = g.vars[n.outputs[0]].static_shape.dims[0];
    if (op == "Log" || op == "Exp") CHECK(len == 2);
    if (op == "GammaLn") CHECK(len == 1);
    if (op == "Sqrt" || op == "Add") CHECK(len == 8);
  }
  CHECK(count_op(p, "AdvancedIncSubtensor1") == 2);
}
