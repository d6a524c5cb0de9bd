// Engine differentiation (engine/program/grad/): a document's "gradient"
// directive gives the flat-point program nutpie calls, whose gradient agrees
// with central differences; PyMC's parameter checks become -inf switches;
// an op without an adjoint and a malformed directive fail with messages
// that say so; the same document always gives the same graph and bits.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "ember/error.hpp"
#include "engine/graph/graph.hpp"
#include "gradient_harness.hpp"
#include "graph_builder.hpp"

using namespace ember;
using nlohmann::json;

namespace {

// logp = sum(-0.5 * ((x - mu) / exp(log_s))^2) - n * log_s + log(sigmoid(mu)),
// over x (2, 3) and mu, log_s (0-d), with a parameter check mu < 10 on the sum's terms.
std::string model(bool check_bounds, json wrt_override = nullptr) {
  test::GraphBuilder b;
  const int x = b.input("float64", {2, 3}, "x");
  const int mu = b.input("float64", json::array(), "mu");
  const int ls = b.input("float64", json::array(), "log_s");
  const int data = b.constant("float64", {2, 3}, {0.5, -1.0, 2.0, 0.25, 1.5, -0.75});
  const int mu2 = b.node("DimShuffle", {mu}, "float64", {1, 1}, {{"new_order", {"x", "x"}}});
  const int s = b.ew("Exp", {ls}, "float64", json::array());
  const int s2 = b.node("DimShuffle", {s}, "float64", {1, 1}, {{"new_order", {"x", "x"}}});
  const int z = b.ew("TrueDiv", {b.ew("Sub", {b.ew("Add", {x, data}, "float64", {2, 3}), mu2}, "float64", {2, 3}), s2},
                     "float64", {2, 3});
  const int half = b.constant("float64", {1, 1}, {-0.5});
  const int terms = b.ew("Mul", {half, b.ew("Sqr", {z}, "float64", {2, 3})}, "float64", {2, 3});
  const int pos = b.ew("LT", {mu, b.constant("float64", json::array(), {10.0})}, "bool", json::array());
  const int checked = b.node("CheckAndRaise", {terms, pos}, "float64", {2, 3},
                             {{"msg", "mu < 10"}, {"parameter_check", true}, {"ninf", true}});
  const int sum = b.node("Sum", {checked}, "float64", json::array(), {{"axis", nullptr}});
  const int nls = b.ew("Mul", {b.constant("float64", json::array(), {6.0}), ls}, "float64", json::array());
  const int prior = b.ew("Log", {b.ew("Sigmoid", {mu}, "float64", json::array())}, "float64", json::array());
  const int logp = b.ew("Add", {b.ew("Sub", {sum, nls}, "float64", json::array()), prior}, "float64", json::array());
  b.outputs.push_back(logp);
  json d = json::parse(b.str());
  d["gradient"] = {{"wrt", wrt_override.is_null() ? json::array({{{"input", 0}, {"shape", {2, 3}}},
                                                                  {{"input", 1}, {"shape", json::array()}},
                                                                  {{"input", 2}, {"shape", json::array()}}})
                                                  : wrt_override},
                   {"check_bounds", check_bounds}};
  return d.dump();
}

using test::call;

}  // namespace

TEST_CASE("a gradient directive gives logp and its gradient over one flat point", "[gradient]") {
  auto p = Program::from_json(model(true));
  REQUIRE(p->args().size() == 1);
  CHECK(p->args()[0].name == "_unconstrained_point");
  CHECK(p->args()[0].static_shape.dims[0] == 8);
  REQUIRE(p->outputs().size() == 2);
  const std::vector<double> pt{0.3, -0.2, 0.1, 0.7, -1.1, 0.4, 0.25, -0.3};
  const auto [lp, g] = call(p, pt);
  REQUIRE(g.size() == 8);
  for (size_t i = 0; i < pt.size(); ++i) {
    const double h = 1e-6;
    std::vector<double> a = pt, b = pt;
    a[i] += h;
    b[i] -= h;
    const double fd = (call(p, a).first - call(p, b).first) / (2 * h);
    INFO("coordinate " << i);
    CHECK(g[i] == Approx(fd).epsilon(1e-7).margin(1e-8));
  }
}

TEST_CASE("a parameter check becomes a -inf switch, or goes without check_bounds", "[gradient]") {
  const std::vector<double> pt{0, 0, 0, 0, 0, 0, 20, 0};  // mu = 20 fails the check
  const auto [lp, g] = call(Program::from_json(model(true)), pt);
  CHECK(lp == -std::numeric_limits<double>::infinity());
  CHECK(g[0] == 0.0);  // the switch's untaken branch gets no gradient
  const auto [lp2, g2] = call(Program::from_json(model(false)), pt);
  CHECK(std::isfinite(lp2));  // as PyMC's compile with check_bounds=False
  CHECK(g2[0] != 0.0);
}

TEST_CASE("log(sigmoid(x)) is stabilized before it is differentiated", "[gradient]") {
  auto p = Program::from_json(model(true));
  const auto [lp, g] = call(p, {0, 0, 0, 0, 0, 0, -800, 0});
  CHECK(std::isfinite(lp));
  CHECK(g[6] == Approx(1.0 + (0.5 - 1.0 + 2.0 + 0.25 + 1.5 - 0.75 + 6 * 800)).epsilon(1e-12));
}

TEST_CASE("the same document gives the same gradient graph and bits", "[gradient]") {
  auto a = Program::from_json(model(true)), b = Program::from_json(model(true));
  std::vector<uint8_t> pa, pb;
  CHECK(a->graph().to_json(&pa) == b->graph().to_json(&pb));
  CHECK(pa == pb);
  const std::vector<double> pt{0.3, -0.2, 0.1, 0.7, -1.1, 0.4, 0.25, -0.3};
  CHECK(call(a, pt).second == call(b, pt).second);
}

TEST_CASE("an op without an adjoint fails the load saying it cannot differentiate", "[gradient]") {
  test::GraphBuilder b;
  const int x = b.input("float64", {2, 2}, "x");
  const int c = b.node("MatrixPinv", {x}, "float64", {2, 2}, {{"hermitian", false}});
  b.outputs.push_back(b.node("Sum", {c}, "float64", json::array(), {{"axis", nullptr}}));
  json d = json::parse(b.str());
  d["gradient"] = {{"wrt", {{{"input", 0}, {"shape", {2, 2}}}}}};
  try {
    Program::from_json(d.dump());
    FAIL("loaded");
  } catch (const LoadError& e) {
    const std::string m = e.what();
    CHECK(m.find("cannot differentiate") != std::string::npos);
    CHECK(m.find("MatrixPinv") != std::string::npos);
  }
}

// Differentiation rewrites the graph before the nodes are checked: messages
// still number the nodes as the file does (node 0, unused, is dropped first).
TEST_CASE("load errors in a differentiated graph name the file's node", "[gradient]") {
  auto msg = [](const char* op, json attrs) {
    test::GraphBuilder b;
    const int x = b.input("float64", {2, 2}, "x");
    b.ew("Exp", {x}, "float64", {2, 2});
    const int y = b.node(op, {b.ew("Sqr", {x}, "float64", {2, 2})}, "float64", {2}, attrs);
    b.outputs.push_back(b.node("Sum", {y}, "float64", json::array(), {{"axis", nullptr}}));
    json d = json::parse(b.str());
    d["gradient"] = {{"wrt", {{{"input", 0}, {"shape", {2, 2}}}}}};
    try {
      Program::from_json(d.dump());
    } catch (const LoadError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  const std::string bad_axis = msg("Sum", {{"axis", {5}}});
  CHECK(bad_axis.find("node 2 (Sum): field 'axis'") != std::string::npos);
  const std::string no_rule = msg("MatrixPinv", {{"hermitian", false}});
  CHECK(no_rule.find("cannot differentiate node 2 (MatrixPinv)") != std::string::npos);
}

TEST_CASE("a malformed gradient directive names its field", "[gradient]") {
  auto msg = [](json wrt) {
    try {
      Program::from_json(model(true, wrt));
    } catch (const LoadError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  CHECK(msg(json::array({{{"input", 7}, {"shape", {2, 3}}}})).find("gradient.wrt[0].input") != std::string::npos);
  CHECK(msg(json::array({{{"input", 0}, {"shape", {3, 2}}}})).find("gradient.wrt[0].shape") != std::string::npos);
  CHECK(msg(json::array({{{"input", 0}, {"shape", {2, 3}}}, {{"input", 0}, {"shape", {2, 3}}}}))
            .find("listed twice") != std::string::npos);
  CHECK(msg(json::array({json(3)})).find("gradient.wrt[0]") != std::string::npos);
}

TEST_CASE("a malformed attribute on the differentiated path is a load error, not a crash", "[gradient]") {
  test::GraphBuilder b;
  const int x = b.input("float64", {3}, "x");
  const int y = b.node("Elemwise", {x}, "float64", {3}, {{"scalar_op", 3}});
  b.outputs.push_back(b.node("Sum", {y}, "float64", json::array(), {{"axis", nullptr}}));
  json d = json::parse(b.str());
  d["gradient"] = {{"wrt", {{{"input", 0}, {"shape", {3}}}}}};
  CHECK_THROWS_AS(Program::from_json(d.dump()), LoadError);
}

namespace {

// cost = sum(switch(x > 0.5, sin(x * y), y)) + sum(w * (x * y)), x (3,) and y
// (1,) broadcast; the scalar work one Composite with two outputs, or each
// op its own Elemwise. With `second_only`, the cost reads only the second.
std::string composite_model(bool fused, bool second_only = false) {
  test::GraphBuilder b;
  const int x = b.input("float64", {3}, "x");
  const int y = b.input("float64", {1}, "y");
  int sw, xy;
  if (fused) {
    const json so = {{"op", "Composite"},
                     {"inputs", {"float64", "float64"}},
                     {"constants", {{{"dtype", "float64"}, {"value", 0.5}}}},
                     {"nodes", {{{"op", "Mul"}, {"inputs", {0, 1}}, {"dtype", "float64"}},
                                {{"op", "Sin"}, {"inputs", {3}}, {"dtype", "float64"}},
                                {{"op", "GT"}, {"inputs", {0, 2}}, {"dtype", "bool"}},
                                {{"op", "Switch"}, {"inputs", {5, 4, 1}}, {"dtype", "float64"}}}},
                     {"outputs", {6, 3}}};
    sw = b.var("float64", {3});
    xy = b.var("float64", {3});
    b.nodes.push_back({{"op", "Elemwise"}, {"inputs", {x, y}}, {"outputs", {sw, xy}}, {"attrs", {{"scalar_op", so}}}});
  } else {
    xy = b.ew("Mul", {x, y}, "float64", {3});
    const int gt = b.ew("GT", {x, b.constant("float64", {1}, {0.5})}, "bool", {3});
    sw = b.ew("Switch", {gt, b.ew("Sin", {xy}, "float64", {3}), y}, "float64", {3});
  }
  const int w = b.constant("float64", {3}, {0.75, -1.25, 2.0});
  const int s2 = b.node("Sum", {b.ew("Mul", {xy, w}, "float64", {3})}, "float64", json::array(), {{"axis", nullptr}});
  if (second_only) {
    b.outputs.push_back(s2);
  } else {
    const int s1 = b.node("Sum", {sw}, "float64", json::array(), {{"axis", nullptr}});
    b.outputs.push_back(b.ew("Add", {s1, s2}, "float64", json::array()));
  }
  json d = json::parse(b.str());
  d["gradient"] = {{"wrt", {{{"input", 0}, {"shape", {3}}}, {{"input", 1}, {"shape", {1}}}}}};
  return d.dump();
}

}  // namespace

TEST_CASE("an Elemwise over a Composite differentiates as its ops one by one", "[gradient]") {
  for (bool second_only : {false, true}) {
    auto fused = Program::from_json(composite_model(true, second_only));
    auto split = Program::from_json(composite_model(false, second_only));
    for (const std::vector<double>& pt : {std::vector<double>{0.3, 0.9, -1.2, 0.7}, {1.5, 0.2, 0.6, -2.1}}) {
      const auto [lp, g] = call(fused, pt);
      const auto [lp2, g2] = call(split, pt);
      CHECK(lp == Approx(lp2).epsilon(1e-13));
      REQUIRE(g.size() == 4);
      for (size_t i = 0; i < pt.size(); ++i) {
        INFO("second_only " << second_only << " coordinate " << i);
        CHECK(g[i] == Approx(g2[i]).epsilon(1e-14).margin(1e-15));
        const double h = 1e-6;
        std::vector<double> a = pt, b = pt;
        a[i] += h;
        b[i] -= h;
        const double fd = (call(fused, a).first - call(fused, b).first) / (2 * h);
        CHECK(g[i] == Approx(fd).epsilon(1e-7).margin(1e-8));
      }
    }
  }
}

TEST_CASE("a Composite op without a rule on the differentiated path fails naming it", "[gradient]") {
  test::GraphBuilder b;
  const int x = b.input("float64", {3}, "x");
  const json so = {{"op", "Composite"},
                   {"inputs", {"float64"}},
                   {"constants", {{{"dtype", "float64"}, {"value", 2.0}}}},
                   {"nodes", {{{"op", "Exp"}, {"inputs", {0}}, {"dtype", "float64"}},
                              {{"op", "Mod"}, {"inputs", {2, 1}}, {"dtype", "float64"}}}},
                   {"outputs", {3}}};
  const int m = b.var("float64", {3});
  b.nodes.push_back({{"op", "Elemwise"}, {"inputs", {x}}, {"outputs", {m}}, {"attrs", {{"scalar_op", so}}}});
  b.outputs.push_back(b.node("Sum", {m}, "float64", json::array(), {{"axis", nullptr}}));
  json d = json::parse(b.str());
  d["gradient"] = {{"wrt", {{{"input", 0}, {"shape", {3}}}}}};
  try {
    Program::from_json(d.dump());
    FAIL("loaded");
  } catch (const LoadError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cannot differentiate") != std::string::npos);
    CHECK(msg.find("Mod") != std::string::npos);
  }
}

TEST_CASE("a gradient that is an unchanged variable stays an output through the canonicalizations", "[gradient]") {
  // sum(x * c): the gradient is c's fill, which the fill sinking rewrites.
  test::GraphBuilder b;
  const int x = b.input("float64", {3}, "x");
  const int c = b.constant("float64", {3}, {1.0, 2.0, 3.0});
  b.outputs.push_back(
      b.node("Sum", {b.ew("Mul", {x, c}, "float64", {3})}, "float64", json::array(), {{"axis", nullptr}}));
  json d = json::parse(b.str());
  d["gradient"] = {{"wrt", {{{"input", 0}, {"shape", {3}}}}}};
  const auto [lp, g] = call(Program::from_json(d.dump()), {0.5, 0.5, 0.5});
  CHECK(lp == 3.0);
  CHECK(g == std::vector<double>{1.0, 2.0, 3.0});
}
