// Each tensor op's adjoint against central differences: a small graph
// sum(w * f(inputs)) with a "gradient" directive over its inputs, at a point
// where the linear algebra is non-symmetric and not well conditioned, and
// the batched (Blockwise) forms with batch dims broadcast.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "ember/error.hpp"
#include "gradient_harness.hpp"
#include "graph_builder.hpp"

using namespace ember;
using nlohmann::json;

namespace {

struct In {
  json shape;
  std::vector<double> value;
};

int64_t count(const json& shape) {
  int64_t n = 1;
  for (const json& d : shape) n *= d.get<int64_t>();
  return n;
}

// f builds on the inputs' variables and returns its output and the output's shape.
using Body = std::function<std::pair<int, json>(test::GraphBuilder&, const std::vector<int>&)>;

std::string document(const std::vector<In>& ins, const Body& f) {
  test::GraphBuilder b;
  std::vector<int> vars;
  for (size_t i = 0; i < ins.size(); ++i) vars.push_back(b.input("float64", ins[i].shape));
  const auto [y, shape] = f(b, vars);
  std::vector<double> w;
  for (int64_t k = 0; k < count(shape); ++k) w.push_back(0.5 + 0.37 * static_cast<double>((k * 7) % 5) - 0.2 * k);
  const int wy = b.ew("Mul", {y, b.constant("float64", shape, w)}, "float64", shape);
  b.outputs.push_back(b.node("Sum", {wy}, "float64", json::array(), {{"axis", nullptr}}));
  json d = json::parse(b.str());
  json wrt = json::array();
  for (size_t i = 0; i < ins.size(); ++i) wrt.push_back({{"input", i}, {"shape", ins[i].shape}});
  d["gradient"] = {{"wrt", wrt}};
  return d.dump();
}

using test::call;

// The loaded gradient agrees with central differences in every coordinate.
void check(const std::vector<In>& ins, const Body& f, double tol = 1e-6) {
  auto p = Program::from_json(document(ins, f));
  std::vector<double> pt;
  for (const In& i : ins) pt.insert(pt.end(), i.value.begin(), i.value.end());
  const auto [lp, g] = call(p, pt);
  REQUIRE(std::isfinite(lp));
  REQUIRE(g.size() == pt.size());
  double scale = 0;
  for (double v : g) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < pt.size(); ++i) {
    const double h = 1e-6 * std::max(1.0, std::abs(pt[i]));
    std::vector<double> a = pt, b = pt;
    a[i] += h;
    b[i] -= h;
    const double fd = (call(p, a).first - call(p, b).first) / (2 * h);
    INFO("coordinate " << i);
    CHECK(g[i] == Approx(fd).epsilon(tol).margin(tol * scale));
  }
}

json blockwise(const char* op, json attrs, const char* sig) {
  return {{"core_op", {{"op", op}, {"attrs", attrs}}}, {"signature", sig}};
}

// Non-symmetric, condition number about 1e3.
const std::vector<double> A3{2.0, -1.3, 0.7, 0.4, 0.011, 1.9, -0.8, 0.5, 1.1};
const std::vector<double> A3b{1.5, 0.2, -0.9, 2.2, -0.7, 0.3, 0.1, 1.4, -2.6};

}  // namespace

TEST_CASE("softmax and log-softmax adjoints, over one axis and all", "[gradient][adjoints]") {
  const In x{{2, 3}, {0.3, -1.2, 2.0, 0.5, 0.1, -0.4}};
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (json axis : {json(1), json(0), json(nullptr)}) {
      INFO(op << " axis " << axis.dump());
      check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
        return std::pair{b.node(op, {v[0]}, "float64", {2, 3}, {{"axis", axis}}), json{2, 3}};
      });
    }
}

TEST_CASE("prod adjoint, groups with no zero, one zero and two zeros", "[gradient][adjoints]") {
  const In x{{3, 3}, {0.7, -1.3, 2.1, 0.0, 1.7, -0.6, 0.0, 0.0, 1.4}};
  for (json axis : {json::array({1}), json::array({0}), json(nullptr)}) {
    INFO("axis " << axis.dump());
    const json oshape = axis.is_null() ? json::array() : json::array({3});
    check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      return std::pair{b.node("Prod", {v[0]}, "float64", oshape, {{"axis", axis}}), oshape};
    });
    check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      return std::pair{b.node("CAReduce", {v[0]}, "float64", oshape, {{"axis", axis}, {"scalar_op", "Mul"}}), oshape};
    });
  }
}

TEST_CASE("cumulative product adjoint", "[gradient][adjoints]") {
  const In x{{3, 2}, {0.7, -1.3, 2.1, 0.4, 1.7, -0.6}};
  for (int axis : {0, 1, -1})
    check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      return std::pair{b.node("CumOp", {v[0]}, "float64", {3, 2}, {{"axis", axis}, {"mode", "mul"}}), json{3, 2}};
    });
}

TEST_CASE("solve adjoints: general, symmetric and positive definite", "[gradient][adjoints]") {
  const In A{{3, 3}, A3}, B{{3, 2}, {0.3, -1.0, 2.0, 0.5, -0.7, 1.2}}, v{{3}, {0.3, -1.0, 2.0}};
  check({A, B}, [](test::GraphBuilder& b, const std::vector<int>& x) {
    return std::pair{b.node("Solve", x, "float64", {3, 2}, {{"assume_a", "gen"}, {"lower", false}, {"b_ndim", 2}}),
                     json{3, 2}};
  });
  check({A, v}, [](test::GraphBuilder& b, const std::vector<int>& x) {
    return std::pair{b.node("Solve", x, "float64", {3}, {{"assume_a", "gen"}, {"b_ndim", 1}}), json{3}};
  });
  for (const char* assume : {"sym", "pos"})
    for (bool lower : {true, false}) {
      INFO(assume << " lower " << lower);
      check({A, B}, [&](test::GraphBuilder& b, const std::vector<int>& x) {
        // A symmetric matrix made from the input: M + M^T, or M M^T + I.
        const int mt = b.node("DimShuffle", {x[0]}, "float64", {3, 3}, {{"new_order", {1, 0}}});
        const int s = std::string(assume) == "sym"
                          ? b.ew("Add", {x[0], mt}, "float64", {3, 3})
                          : b.ew("Add", {b.node("Dot", {x[0], mt}, "float64", {3, 3}),
                                         b.constant("float64", {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1})},
                                 "float64", {3, 3});
        return std::pair{b.node("Solve", {s, x[1]}, "float64", {3, 2},
                                {{"assume_a", assume}, {"lower", lower}, {"b_ndim", 2}}),
                         json{3, 2}};
      });
    }
}

TEST_CASE("triangular solve adjoints: upper, unit diagonal, vector b", "[gradient][adjoints]") {
  const In A{{3, 3}, A3}, B{{3, 2}, {0.3, -1.0, 2.0, 0.5, -0.7, 1.2}}, v{{3}, {0.3, -1.0, 2.0}};
  for (bool lower : {true, false})
    for (bool unit : {false, true}) {
      INFO("lower " << lower << " unit " << unit);
      check({A, B}, [&](test::GraphBuilder& b, const std::vector<int>& x) {
        return std::pair{b.node("SolveTriangular", x, "float64", {3, 2},
                                {{"lower", lower}, {"trans", 0}, {"unit_diagonal", unit}, {"b_ndim", 2}}),
                         json{3, 2}};
      });
      check({A, v}, [&](test::GraphBuilder& b, const std::vector<int>& x) {
        return std::pair{b.node("SolveTriangular", x, "float64", {3},
                                {{"lower", lower}, {"trans", "N"}, {"unit_diagonal", unit}, {"b_ndim", 1}}),
                         json{3}};
      });
    }
}

TEST_CASE("matrix inverse, determinant and log-determinant adjoints", "[gradient][adjoints]") {
  const In A{{3, 3}, A3}, Aneg{{3, 3}, A3b};
  check({A}, [](test::GraphBuilder& b, const std::vector<int>& x) {
    return std::pair{b.node("MatrixInverse", x, "float64", {3, 3}), json{3, 3}};
  }, 1e-5);
  for (const In& a : {A, Aneg}) {
    check({a}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Det", x, "float64", json::array()), json::array()};
    });
    check({a}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      const int sign = b.var("float64", json::array()), logabs = b.var("float64", json::array());
      b.nodes.push_back({{"op", "SLogDet"}, {"inputs", x}, {"outputs", {sign, logabs}}, {"attrs", json::object()}});
      return std::pair{b.ew("Add", {b.ew("Mul", {sign, sign}, "float64", json::array()), logabs}, "float64",
                            json::array()),
                       json::array()};
    });
  }
}

// Eigh's outputs read through functions of them that the eigenvectors'
// signs do not change (v * v, V diag(s) V^T). The inputs are not symmetric:
// the op reads one triangle, so the other's gradient is zero, and a change in
// the one read moves both mirrored entries of the matrix decomposed. Every
// point has eigenvalues at least 0.3 apart.
TEST_CASE("eigh adjoint: eigenvalues, eigenvectors, either triangle, with B, batched", "[gradient][adjoints]") {
  const In A{{3, 3}, A3}, Ab{{3, 3}, A3b};
  const In P{{3, 3}, {2.0, 0.7, -0.4, 0.3, 1.5, 0.9, -0.2, 0.4, 1.8}};  // positive definite from either triangle
  // An Eigh node over x (a Blockwise when sig is set) and the two outputs' uses.
  // PyTensor 2.x types the outputs without static shapes (attrs with UPLO).
  auto eigh = [](test::GraphBuilder& b, const std::vector<int>& x, json attrs, json batch, const char* sig) {
    const json m = attrs.contains("UPLO") ? json(nullptr) : json(3);
    json ws = batch, vs = batch;
    ws.push_back(m);
    vs.push_back(m);
    vs.push_back(m);
    const int w = b.var("float64", ws), v = b.var("float64", vs);
    json node = {{"op", "Eigh"}, {"inputs", x}, {"outputs", {w, v}}, {"attrs", attrs}};
    if (sig) node = {{"op", "Blockwise"}, {"inputs", x}, {"outputs", {w, v}},
                     {"attrs", {{"core_op", {{"op", "Eigh"}, {"attrs", attrs}}}, {"signature", sig}}}};
    b.nodes.push_back(node);
    return std::pair{w, v};
  };
  enum Use { Values, Vectors, Both, Quadratic };
  auto body = [&](json attrs, Use use, json batch = json::array(), const char* sig = nullptr) {
    return [=](test::GraphBuilder& b, const std::vector<int>& x) {
      const auto [w, v] = eigh(b, x, attrs, batch, sig);
      json ws = batch, vs = batch;
      ws.push_back(3);
      vs.push_back(3);
      vs.push_back(3);
      if (use == Values) return std::pair{w, ws};
      const int vv = b.ew("Mul", {v, v}, "float64", vs);
      if (use == Vectors) return std::pair{vv, vs};
      if (use == Both) {
        json order = json::array(), rs = batch;
        for (size_t d = 0; d < batch.size(); ++d) order.push_back(d);
        order.push_back("x");
        order.push_back(batch.size());
        rs.push_back(1);
        rs.push_back(3);
        const int wr = b.node("DimShuffle", {w}, "float64", rs, {{"new_order", order}});
        return std::pair{b.ew("Add", {vv, wr}, "float64", vs), vs};
      }
      // V diag(s) V^T, s fixed
      const int s = b.constant("float64", {1, 3}, {0.9, -1.7, 0.4});
      const int vt = b.node("DimShuffle", {v}, "float64", {3, 3}, {{"new_order", {1, 0}}});
      return std::pair{b.node("Dot", {b.ew("Mul", {v, s}, "float64", {3, 3}), vt}, "float64", {3, 3}), json{3, 3}};
    };
  };
  SECTION("either triangle, PyTensor 3's lower and 2's UPLO (outputs of unknown size)") {
    for (json attrs : {json{{"lower", true}}, json{{"lower", false}}, json{{"UPLO", "U"}}, json{{"UPLO", "L"}}})
      for (Use use : {Values, Vectors, Both, Quadratic})
        for (const In& a : {A, Ab}) {
          INFO(attrs.dump() << " use " << use);
          check({a}, body(attrs, use));
        }
  }
  SECTION("generalized, A V = B V diag(w)") {
    for (bool lower : {true, false})
      for (Use use : {Values, Vectors, Both, Quadratic}) {
        INFO("lower " << lower << " use " << use);
        check({A, P}, body({{"lower", lower}}, use));
      }
  }
  SECTION("a Blockwise: a batch of two, and B broadcast over it") {
    std::vector<double> two(A3);
    two.insert(two.end(), A3b.begin(), A3b.end());
    const In A2{{2, 3, 3}, two}, P1{{1, 3, 3}, P.value};
    for (Use use : {Values, Vectors, Both}) {
      INFO("use " << use);
      check({A2}, body({{"lower", true}}, use, {2}, "(m,m)->(m),(m,m)"));
      check({A2, P1}, body({{"lower", false}}, use, {2}, "(m,m),(m,m)->(m),(m,m)"));
    }
  }
}

TEST_CASE("the diagonal of a stack of matrices", "[gradient][adjoints]") {
  In xv{{2, 3, 3}, {}};
  for (int k = 0; k < 18; ++k) xv.value.push_back(0.1 * k - 0.7);
  check({xv}, [](test::GraphBuilder& b, const std::vector<int>& v) {
    return std::pair{b.node("ExtractDiag", v, "float64", {2, 3}, {{"offset", 0}, {"axis1", 1}, {"axis2", 2}}),
                     json{2, 3}};
  });
  In yv = xv;
  yv.shape = {3, 2, 3};
  check({yv}, [](test::GraphBuilder& b, const std::vector<int>& v) {  // axes apart, the diagonal last
    return std::pair{b.node("ExtractDiag", v, "float64", {2, 3}, {{"offset", 0}, {"axis1", 2}, {"axis2", 0}}),
                     json{2, 3}};
  });
}

// PyTensor takes axis 0 (or -1) of a 0-d input as reducing nothing (pm.CAR's
// Sum{axis=0} of its scalar quadratic form): the gradient passes through.
TEST_CASE("a reduction of a 0-d input over axis 0 passes its gradient through", "[gradient][adjoints]") {
  const In x{json::array(), {0.7}};
  for (const char* op : {"Sum", "Prod", "Max", "Min"})
    for (json axis : {json::array({0}), json::array({-1})}) {
      INFO(op << " axis " << axis.dump());
      check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
        const int e = b.ew("Mul", {b.ew("Exp", {v[0]}, "float64", json::array()), v[0]}, "float64", json::array());
        return std::pair{b.node(op, {e}, "float64", json::array(), {{"axis", axis}}), json::array()};
      });
    }
  // A bad axis is still the loader's error naming the node, not the gradient's.
  const Body bad = [](test::GraphBuilder& b, const std::vector<int>& v) {
    return std::pair{b.node("Sum", {v[0]}, "float64", json::array(), {{"axis", {1}}}), json::array()};
  };
  CHECK_THROWS_WITH(Program::from_json(document({x}, bad)),
                    Catch::Matchers::Contains("node 0 (Sum)") && Catch::Matchers::Contains("out of range"));
}

// LKJCorr (PyMC 5) sets its correlation matrix's diagonal with FillDiagonal.
TEST_CASE("fill-diagonal adjoint: the matrix off its diagonal, the value by the diagonal's sum",
          "[gradient][adjoints]") {
  for (json shape : {json{3, 3}, json{4, 3}, json{2, 4}}) {
    INFO("shape " << shape.dump());
    In a{shape, {}};
    for (int64_t k = 0; k < count(shape); ++k) a.value.push_back(0.3 * k - 1.1);
    const In val{json::array(), {0.45}};
    check({a, val}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      const int sq = b.ew("Sqr", {v[0]}, "float64", shape);
      return std::pair{b.node("FillDiagonal", {sq, b.ew("Exp", {v[1]}, "float64", json::array())}, "float64", shape),
                       shape};
    });
  }
}

TEST_CASE("batched adjoints: a Blockwise with batch dims broadcast", "[gradient][adjoints]") {
  std::vector<double> two(A3);
  two.insert(two.end(), A3b.begin(), A3b.end());
  const In A2{{2, 3, 3}, two}, A1{{1, 3, 3}, A3}, v{{3}, {0.3, -1.0, 2.0}};
  const In B4{{4, 3}, {0.3, -1.0, 2.0, 0.5, -0.7, 1.2, 1.1, 0.2, -0.4, 0.9, 1.3, -2.0}};
  SECTION("triangular solve of one matrix against a batch of vectors (a multivariate normal's)") {
    check({A1, B4}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Blockwise", x, "float64", {4, 3},
                              blockwise("SolveTriangular", {{"lower", true}, {"trans", 0}, {"unit_diagonal", false},
                                                            {"b_ndim", 1}},
                                        "(m,m),(m)->(m)")),
                       json{4, 3}};
    });
  }
  SECTION("solve of a batch of matrices against one vector") {
    check({A2, v}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Blockwise", x, "float64", {2, 3},
                              blockwise("Solve", {{"assume_a", "gen"}, {"lower", false}, {"b_ndim", 1}},
                                        "(m,m),(m)->(m)")),
                       json{2, 3}};
    });
  }
  SECTION("inverse, determinant") {
    check({A2}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Blockwise", x, "float64", {2, 3, 3}, blockwise("MatrixInverse", {}, "(m,m)->(m,m)")),
                       json{2, 3, 3}};
    }, 1e-5);
    check({A2}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Blockwise", x, "float64", {2}, blockwise("Det", {}, "(m,m)->()")), json{2}};
    });
  }
  SECTION("Cholesky of batched M M^T + I, the products batched too") {
    check({A2}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      const int mt = b.node("DimShuffle", {x[0]}, "float64", {2, 3, 3}, {{"new_order", {0, 2, 1}}});
      const int mm = b.node("Blockwise", {x[0], mt}, "float64", {2, 3, 3}, blockwise("Dot", {}, "(m,k),(k,n)->(m,n)"));
      const int eye = b.constant("float64", {1, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
      const int s = b.ew("Add", {mm, eye}, "float64", {2, 3, 3});
      return std::pair{b.node("Blockwise", {s}, "float64", {2, 3, 3},
                              blockwise("Cholesky", {{"lower", true}}, "(m,m)->(m,m)")),
                       json{2, 3, 3}};
    });
  }
  SECTION("matrix-vector and vector-matrix products") {
    check({A2, v}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Blockwise", x, "float64", {2, 3}, blockwise("Dot", {}, "(m,k),(k)->(m)")), json{2, 3}};
    });
    check({v, A2}, [](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Blockwise", x, "float64", {2, 3}, blockwise("Dot", {}, "(k),(k,n)->(n)")), json{2, 3}};
    });
  }
}
// One rank-1 input: its gradient is the program's output as it is, and the
// canonicalizations after the sweep rewrite that gradient's last node.
TEST_CASE("a gradient whose last node the canonicalizations rewrite stays the output", "[gradient][adjoints]") {
  const In x{{3}, {0.3, -0.2, 0.5}};
  check({x}, [](test::GraphBuilder& b, const std::vector<int>& v) {
    const int p = b.node("Prod", {b.ew("Exp", {v[0]}, "float64", {3})}, "float64", json::array(), {{"axis", nullptr}});
    const int mu = b.node("DimShuffle", {p}, "float64", {1}, {{"new_order", {"x"}}});
    const int d = b.ew("Sub", {b.constant("float64", {4}, {0.1, 0.7, -0.3, 1.2}), mu}, "float64", {4});
    const int sx = b.node("Sum", {v[0]}, "float64", json::array(), {{"axis", nullptr}});
    const int sx1 = b.node("DimShuffle", {sx}, "float64", {1}, {{"new_order", {"x"}}});
    return std::pair{b.ew("Add", {b.ew("Sqr", {d}, "float64", {4}), sx1}, "float64", {4}), json{4}};
  });
}

// Sum(second(x, w), axis 2) with w (1, 1, 1) and x (2, 1, 3): the count times
// w broadcast to the sum's (2, 1), not w's (1, 1) (a batched MvNormal's).
TEST_CASE("a sum of a fill keeps the dims the fill broadcasts but does not sum", "[gradient][adjoints]") {
  const In x{{2, 1, 3}, {0.3, -0.2, 0.5, 1.1, 0.7, -0.4}}, t{json::array(), {0.8}};
  check({x, t}, [](test::GraphBuilder& b, const std::vector<int>& v) {
    const int w = b.node("DimShuffle", {b.ew("Exp", {v[1]}, "float64", json::array())}, "float64", {1, 1, 1},
                         {{"new_order", {"x", "x", "x"}}});
    const int f = b.ew("Second", {v[0], w}, "float64", {2, 1, 3});
    const int s = b.node("Sum", {b.ew("Mul", {f, v[0]}, "float64", {2, 1, 3})}, "float64", {2, 1}, {{"axis", {2}}});
    const int s0 = b.node("Sum", {f}, "float64", {2, 1}, {{"axis", {2}}});
    const int e = b.node("DimShuffle", {s0}, "float64", {2, 1, 1}, {{"new_order", {0, 1, "x"}}});
    return std::pair{b.ew("Mul", {e, b.node("DimShuffle", {s}, "float64", {2, 1, 1}, {{"new_order", {0, 1, "x"}}})},
                          "float64", {2, 1, 1}),
                     json{2, 1, 1}};
  });
}

TEST_CASE("upper Cholesky adjoint: plain and batched", "[gradient][adjoints]") {
  const In P{{3, 3}, {2.0, 0.7, -0.4, 0.3, 1.5, 0.9, -0.2, 0.4, 1.8}};  // positive definite from either triangle
  check({P}, [](test::GraphBuilder& b, const std::vector<int>& x) {
    return std::pair{b.node("Cholesky", x, "float64", {3, 3}, {{"lower", false}}), json{3, 3}};
  });
  std::vector<double> two(A3);
  two.insert(two.end(), A3b.begin(), A3b.end());
  check({In{{2, 3, 3}, two}}, [](test::GraphBuilder& b, const std::vector<int>& x) {
    const int mt = b.node("DimShuffle", {x[0]}, "float64", {2, 3, 3}, {{"new_order", {0, 2, 1}}});
    const int mm = b.node("Blockwise", {x[0], mt}, "float64", {2, 3, 3}, blockwise("Dot", {}, "(m,k),(k,n)->(m,n)"));
    const int s = b.ew("Add", {mm, b.constant("float64", {1, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1})}, "float64", {2, 3, 3});
    return std::pair{b.node("Blockwise", {s}, "float64", {2, 3, 3},
                            blockwise("Cholesky", {{"lower", false}}, "(m,m)->(m,m)")),
                     json{2, 3, 3}};
  });
}

TEST_CASE("eigvalsh adjoint: either triangle, with B, batched", "[gradient][adjoints]") {
  const In A{{3, 3}, A3}, Ab{{3, 3}, A3b};
  const In P{{3, 3}, {2.0, 0.7, -0.4, 0.3, 1.5, 0.9, -0.2, 0.4, 1.8}};
  for (bool lower : {true, false}) {
    INFO("lower " << lower);
    for (const In& a : {A, Ab})
      check({a}, [&](test::GraphBuilder& b, const std::vector<int>& x) {
        return std::pair{b.node("Eigvalsh", x, "float64", {3}, {{"lower", lower}}), json{3}};
      });
    check({A, P}, [&](test::GraphBuilder& b, const std::vector<int>& x) {
      return std::pair{b.node("Eigvalsh", x, "float64", {3}, {{"lower", lower}}), json{3}};
    });
  }
  std::vector<double> two(A3);
  two.insert(two.end(), A3b.begin(), A3b.end());
  check({In{{2, 3, 3}, two}, In{{1, 3, 3}, P.value}}, [](test::GraphBuilder& b, const std::vector<int>& x) {
    return std::pair{b.node("Blockwise", x, "float64", {2, 3},
                            blockwise("Eigvalsh", {{"lower", true}}, "(m,m),(m,m)->(m)")),
                     json{2, 3}};
  });
}

TEST_CASE("singular values adjoint: without vectors, with unused thin vectors, batched", "[gradient][adjoints]") {
  const In w{{4, 3}, {0.3, -1.0, 2.0, 0.5, -0.7, 1.2, 1.1, 0.2, -0.4, 0.9, 1.3, -2.0}};
  const In t{{3, 4}, w.value};
  for (const In& x : {w, t}) {
    const json k = json{3};
    check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      return std::pair{b.node("SVD", v, "float64", k, {{"full_matrices", true}, {"compute_uv", false}}), k};
    });
    check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      const int64_t m = x.shape[0].get<int64_t>(), n = x.shape[1].get<int64_t>();
      const int u = b.var("float64", {m, 3}), s = b.var("float64", {3}), vt = b.var("float64", {3, n});
      b.nodes.push_back({{"op", "SVD"}, {"inputs", v}, {"outputs", {u, s, vt}},
                         {"attrs", {{"full_matrices", false}, {"compute_uv", true}}}});
      return std::pair{s, k};
    });
  }
  std::vector<double> two(w.value);
  for (double v : w.value) two.push_back(0.5 * v + 0.1);
  check({In{{2, 4, 3}, two}}, [](test::GraphBuilder& b, const std::vector<int>& v) {
    return std::pair{b.node("Blockwise", v, "float64", {2, 3},
                            blockwise("SVD", {{"full_matrices", true}, {"compute_uv", false}}, "(m,n)->(k)")),
                     json{2, 3}};
  });
}

TEST_CASE("sort adjoint: the gradient goes back through the sorting permutation", "[gradient][adjoints]") {
  const In x{{5}, {0.3, -1.2, 2.0, 0.5, -0.1}};
  for (json axis : {json(0), json(-1), json(nullptr)})
    check({x}, [&](test::GraphBuilder& b, const std::vector<int>& v) {
      return std::pair{b.node("SortOp", v, "float64", {5}, {{"kind", "quicksort"}, {"axis", axis}}), json{5}};
    });
}
