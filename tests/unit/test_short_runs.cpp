// Short inner axes: an Elemwise whose innermost dim is short runs as one
// packed run or with a longer dim inside (engine/ops/ops_elemwise.cpp),
// checked against the general path and one-element calls; reductions over
// a few inner elements give the same bits whichever mode runs them (serial,
// row tasks, column tiles).
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "reduce_fixture.hpp"

using namespace ember;
using ember::test::rfx::reduce_graph;

namespace {

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// y = log1p(exp(a - b) / (b * b + 0.5)) + a * b over broadcast a, b (rank 2 or 3).
std::string elemwise_graph(int nd) {
  const std::string s = nd == 2 ? "[null, null]" : "[null, null, null]";
  return R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "a", "dtype": "float64", "shape": )" + s + R"(},
                  {"name": "b", "dtype": "float64", "shape": )" + s + R"(},
                  {"name": "y", "dtype": "float64", "shape": )" + s + R"(}],
    "inputs": [0, 1], "outputs": [2],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Composite",
      "inputs": ["float64", "float64"], "constants": [{"dtype": "float64", "value": 0.5}],
      "nodes": [{"op": "Sub", "dtype": "float64", "inputs": [0, 1]},
                {"op": "Exp", "dtype": "float64", "inputs": [3]},
                {"op": "Mul", "dtype": "float64", "inputs": [1, 1]},
                {"op": "Add", "dtype": "float64", "inputs": [5, 2]},
                {"op": "TrueDiv", "dtype": "float64", "inputs": [4, 6]},
                {"op": "Log1p", "dtype": "float64", "inputs": [7]},
                {"op": "Mul", "dtype": "float64", "inputs": [0, 1]},
                {"op": "Add", "dtype": "float64", "inputs": [8, 9]}],
      "outputs": [10]}}}]})";
}

Array random_array(std::mt19937_64& g, Shape s) {
  std::normal_distribution<double> nd(0.0, 2.0);
  Array a = Array::empty(DType::Float64, s);
  for (int64_t i = 0; i < a.size(); ++i) a.data<double>()[i] = nd(g);
  return a;
}

// The (r, c) transpose view of a 2-d array.
Tensor transposed(const Array& a) {
  Tensor t = a.t;
  std::swap(t.shape.dims[0], t.shape.dims[1]);
  std::swap(t.strides[0], t.strides[1]);
  return t;
}

}  // namespace

TEST_CASE("elemwise_short_inner_dim_matches_the_transposed_layout") {
  // y(a, b)[i, j] against y(a^T, b^T)[j, i], whose inner dim is long: the
  // same elements through the unswapped loop.
  auto p = Program::from_json(elemwise_graph(2));
  std::mt19937_64 g(5);
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      {{2, {600, 1}}, {2, {1, 3}}},   {{2, {600, 3}}, {2, {1, 3}}},  {{2, {600, 3}}, {2, {600, 3}}},
      {{2, {1, 2}}, {2, {40, 1}}},    {{2, {17, 15}}, {2, {17, 15}}}, {{2, {1, 1}}, {2, {300, 2}}},
      {{2, {5, 1}}, {2, {1, 1}}},     {{2, {1, 4}}, {2, {3, 1}}},    {{2, {0, 3}}, {2, {1, 3}}},
      {{2, {100000, 1}}, {2, {1, 2}}}};
  for (const Case& c : cases) {
    Array a = random_array(g, c.a), b = random_array(g, c.b);
    auto y = p->call({a.t, b.t});
    auto yt = p->call({transposed(a), transposed(b)});
    const int64_t r = y[0].t.shape.dims[0], k = y[0].t.shape.dims[1];
    INFO("a " << c.a.str() << ", b " << c.b.str());
    REQUIRE(yt[0].t.shape == Shape{2, {k, r}});
    int64_t bad = 0;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < k; ++j)
        bad += bits(y[0].data<double>()[i * k + j]) != bits(yt[0].data<double>()[j * r + i]);
    CHECK(bad == 0);
  }
}

TEST_CASE("elemwise_short_inner_dim_of_strided_and_rank_3_inputs") {
  // Strided views and rank 3: every element against its own one-element call.
  auto p2 = Program::from_json(elemwise_graph(2));
  auto p3 = Program::from_json(elemwise_graph(3));
  std::mt19937_64 g(6);
  Array base = random_array(g, Shape{2, {200, 6}});
  Tensor v = base.t;  // (200, 3): every other column
  v.shape = Shape{2, {200, 3}};
  v.strides[1] = 2;
  Array b = random_array(g, Shape{2, {1, 3}});
  auto y = p2->call({v, b.t});
  int64_t bad = 0;
  for (int64_t i = 0; i < 200; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      Array ai = Array::of<double>({2, {1, 1}}, {base.data<double>()[i * 6 + 2 * j]});
      Array bj = Array::of<double>({2, {1, 1}}, {b.data<double>()[j]});
      bad += bits(p2->call({ai.t, bj.t})[0].data<double>()[0]) != bits(y[0].data<double>()[i * 3 + j]);
    }
  CHECK(bad == 0);
  Array a3 = random_array(g, Shape{3, {2, 50, 1}}), b3 = random_array(g, Shape{3, {1, 1, 3}});
  auto y3 = p3->call({a3.t, b3.t});
  REQUIRE(y3[0].t.shape == Shape{3, {2, 50, 3}});
  bad = 0;
  for (int64_t i = 0; i < 100; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      Array ai = Array::of<double>({3, {1, 1, 1}}, {a3.data<double>()[i]});
      Array bj = Array::of<double>({3, {1, 1, 1}}, {b3.data<double>()[j]});
      bad += bits(p3->call({ai.t, bj.t})[0].data<double>()[0]) != bits(y3[0].data<double>()[i * 3 + j]);
    }
  CHECK(bad == 0);
}

TEST_CASE("short_row_reductions_match_the_general_row_path") {
  // parallel_threshold 1 keeps every reduction on the general row tasks.
  Options general;
  general.parallel_threshold = 1;
  std::mt19937_64 g(7);
  for (const char* op : {"Sum", "Max", "Min", "Prod"}) {
    const std::string gr = reduce_graph(op, "float64", "[null, null]", "float64", "[null]", R"({"axis": [1]})");
    auto fast = Program::from_json(gr);
    auto slow = Program::from_json(gr, general);
    for (int64_t o : {1, 2, 600}) {
      for (int64_t r : {0, 1, 2, 3, 7, 8, 9, 16, 127, 128, 129}) {
        if (r == 0 && (std::string(op) == "Max" || std::string(op) == "Min")) continue;
        for (int64_t st : {1, 2}) {  // st 2: every other column of a wider array
          Array base = random_array(g, Shape{2, {o, r * st}});
          Tensor x = base.t;
          x.shape.dims[1] = r;
          x.strides[1] = st;
          auto a = fast->call({x});
          auto b = slow->call({x});
          INFO(op << " (" << o << ", " << r << ") stride " << st);
          REQUIRE(a[0].t.shape == Shape{1, {o}});
          int64_t bad = 0;
          for (int64_t i = 0; i < o; ++i) bad += bits(a[0].data<double>()[i]) != bits(b[0].data<double>()[i]);
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("short_row_reductions_of_ints_bools_and_rank_3") {
  Options general;
  general.parallel_threshold = 1;
  const std::string gi = reduce_graph("Sum", "int32", "[null, null, null]", "int64", "[null, null]",
                                      R"({"axis": [2], "acc_dtype": "int64"})");
  const std::string gb = reduce_graph("Any", "bool", "[null, null]", "bool", "[null]", R"({"axis": [1]})");
  std::mt19937_64 g(8);
  Array xi = Array::empty(DType::Int32, Shape{3, {4, 50, 3}});
  for (int64_t i = 0; i < xi.size(); ++i) xi.data<int32_t>()[i] = static_cast<int32_t>(g() % 2000000000) - 1000000000;
  auto a = Program::from_json(gi)->call({xi.t});
  auto b = Program::from_json(gi, general)->call({xi.t});
  REQUIRE(a[0].t.shape == Shape{2, {4, 50}});
  CHECK(std::memcmp(a[0].data<int64_t>(), b[0].data<int64_t>(), 200 * 8) == 0);
  Array xb = Array::empty(DType::Bool, Shape{2, {300, 3}});
  for (int64_t i = 0; i < xb.size(); ++i) xb.data<bool>()[i] = g() % 5 == 0;
  auto c = Program::from_json(gb)->call({xb.t});
  auto d = Program::from_json(gb, general)->call({xb.t});
  CHECK(std::memcmp(c[0].data<bool>(), d[0].data<bool>(), 300) == 0);
}

TEST_CASE("few_column_reductions_over_axis_0_match_the_column_tiles") {
  // (r, k) over axis 0 and the same columns inside an (r, 9) input: the
  // same tree, whichever mode each shape takes.
  std::mt19937_64 g(9);
  for (const char* op : {"Sum", "Max", "Prod"}) {
    auto p = Program::from_json(reduce_graph(op, "float64", "[null, null]", "float64", "[null]", R"({"axis": [0]})"));
    for (int64_t r : {1, 2, 7, 8, 9, 128, 129, 600, 70000}) {
      for (int64_t k : {1, 2, 3, 4, 7, 8}) {
        Array wide = random_array(g, Shape{2, {r, 9}});
        Array narrow = Array::empty(DType::Float64, Shape{2, {r, k}});
        for (int64_t i = 0; i < r; ++i)
          for (int64_t j = 0; j < k; ++j) narrow.data<double>()[i * k + j] = wide.data<double>()[i * 9 + j];
        auto a = p->call({narrow.t});
        auto b = p->call({wide.t});
        INFO(op << " (" << r << ", " << k << ")");
        int64_t bad = 0;
        for (int64_t j = 0; j < k; ++j) bad += bits(a[0].data<double>()[j]) != bits(b[0].data<double>()[j]);
        CHECK(bad == 0);
      }
    }
  }
}

namespace {

// y = Switch(c, a * Cast(i), a - b) over broadcast a, b (float64), i (int32), c (bool).
std::string mixed_graph(int nd) {
  std::string s = "[null";
  for (int d = 1; d < nd; ++d) s += ", null";
  s += "]";
  auto var = [&](const char* n, const char* dt) {
    return std::string(R"({"name": ")") + n + R"(", "dtype": ")" + dt + R"(", "shape": )" + s + "}";
  };
  return R"({"format": "ember-graph", "version": 1, "variables": [)" + var("a", "float64") + ", " +
         var("b", "float64") + ", " + var("i", "int32") + ", " + var("c", "bool") + ", " + var("y", "float64") +
         R"(], "inputs": [0, 1, 2, 3], "outputs": [4],
    "nodes": [{"op": "Elemwise", "inputs": [0, 1, 2, 3], "outputs": [4], "attrs": {"scalar_op": {"op": "Composite",
      "inputs": ["float64", "float64", "int32", "bool"],
      "nodes": [{"op": "Cast", "dtype": "float64", "inputs": [2]},
                {"op": "Mul", "dtype": "float64", "inputs": [0, 4]},
                {"op": "Sub", "dtype": "float64", "inputs": [0, 1]},
                {"op": "Switch", "dtype": "float64", "inputs": [3, 5, 6]}],
      "outputs": [7]}}}]})";
}

// A view of `a` reversed along its last dim (a negative stride).
Tensor reversed_last(const Array& a) {
  Tensor t = a.t;
  const int l = t.shape.ndim - 1;
  t.data = static_cast<double*>(t.data) + (t.shape.dims[l] - 1) * t.strides[l];
  t.strides[l] = -t.strides[l];
  return t;
}

}  // namespace

TEST_CASE("elemwise_short_inner_dim_packs_broadcast_reversed_and_narrow_operands") {
  // Every element against its own one-element call: operands broadcast along
  // rows or columns, reversed along the short dim, of 4- and 1-byte dtypes,
  // at rank 2 and 3 and with every dim short.
  std::mt19937_64 g(11);
  struct Case {
    Shape a, b, i, c;
    bool reverse_a;
  };
  const std::vector<Case> cases = {
      {{2, {600, 3}}, {2, {600, 1}}, {2, {1, 3}}, {2, {600, 3}}, true},
      {{2, {1, 3}}, {2, {600, 1}}, {2, {600, 3}}, {2, {1, 1}}, false},
      {{2, {600, 2}}, {2, {1, 2}}, {2, {600, 1}}, {2, {1, 2}}, true},
      {{2, {3, 3}}, {2, {3, 1}}, {2, {1, 3}}, {2, {3, 3}}, true},
      {{2, {5, 7}}, {2, {1, 7}}, {2, {5, 1}}, {2, {5, 7}}, false},
      {{3, {2, 50, 3}}, {3, {2, 1, 3}}, {3, {1, 50, 1}}, {3, {2, 50, 3}}, true},
      {{3, {4, 1, 3}}, {3, {1, 30, 1}}, {3, {4, 30, 3}}, {3, {1, 1, 3}}, false},
  };
  for (const Case& cs : cases) {
    const int nd = cs.a.ndim;
    auto p = Program::from_json(mixed_graph(nd));
    Array a = random_array(g, cs.a), b = random_array(g, cs.b);
    Array i = Array::empty(DType::Int32, cs.i);
    for (int64_t k = 0; k < i.size(); ++k) i.data<int32_t>()[k] = static_cast<int32_t>(g() % 2001) - 1000;
    Array c = Array::empty(DType::Bool, cs.c);
    for (int64_t k = 0; k < c.size(); ++k) c.data<bool>()[k] = g() % 3 == 0;
    const Tensor at = cs.reverse_a ? reversed_last(a) : a.t;
    auto y = p->call({at, b.t, i.t, c.t});
    Shape out = cs.a;
    for (const Shape* s : {&cs.b, &cs.i, &cs.c})
      for (int d = 0; d < nd; ++d) out.dims[d] = std::max(out.dims[d], s->dims[d]);
    INFO("a " << cs.a.str() << " b " << cs.b.str() << " i " << cs.i.str() << " c " << cs.c.str());
    REQUIRE(y[0].t.shape == out);
    // Element at out index `idx` of an operand (broadcast dims read index 0).
    auto at_index = [&](const Tensor& t, const int64_t* idx) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += (t.shape.dims[d] == 1 ? 0 : idx[d]) * t.strides[d];
      return off;
    };
    Shape one{nd, {}};
    for (int d = 0; d < nd; ++d) one.dims[d] = 1;
    int64_t bad = 0, idx[3] = {0, 0, 0};
    for (int64_t e = 0; e < y[0].t.size(); ++e) {
      int64_t r = e;
      for (int d = nd - 1; d >= 0; --d) idx[d] = r % out.dims[d], r /= out.dims[d];
      Array ae = Array::of<double>(one, {static_cast<const double*>(at.data)[at_index(at, idx)]});
      Array be = Array::of<double>(one, {b.data<double>()[at_index(b.t, idx)]});
      Array ie = Array::of<int32_t>(one, {i.data<int32_t>()[at_index(i.t, idx)]});
      Array ce = Array::of<bool>(one, {c.data<bool>()[at_index(c.t, idx)]});
      bad += bits(p->call({ae.t, be.t, ie.t, ce.t})[0].data<double>()[0]) != bits(y[0].data<double>()[e]);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("elemwise_one_run_of_reversed_and_stepped_operands_matches_each_element") {
  // Operands in C order with an element step other than 1 (the x[::-1] of a
  // cumsum's gradient, every other column) run as one flat run; each element
  // against its own one-element call.
  std::mt19937_64 g(5);
  auto p = Program::from_json(elemwise_graph(2));
  Array r = random_array(g, {2, {20, 30}}), w = random_array(g, {2, {20, 60}}), b = random_array(g, {2, {20, 30}});
  Tensor rev = r.t;  // r reversed in both dims: element step -1
  rev.data = r.data<double>() + r.size() - 1;
  rev.strides[0] = -rev.strides[0];
  rev.strides[1] = -rev.strides[1];
  Tensor every_other = w.t;  // w[:, ::2]: element step 2
  every_other.shape.dims[1] = 30;
  every_other.strides[1] = 2;
  const Shape one{2, {1, 1}};
  for (const Tensor& x : {rev, every_other}) {
    for (const bool x_first : {true, false}) {
      auto y = x_first ? p->call({x, b.t}) : p->call({b.t, x});
      REQUIRE(y[0].t.shape == Shape{2, {20, 30}});
      int64_t bad = 0;
      for (int64_t e = 0; e < 600; ++e) {
        const double xe = static_cast<const double*>(x.data)[(e / 30) * x.strides[0] + (e % 30) * x.strides[1]];
        Array ae = Array::of<double>(one, {xe}), be = Array::of<double>(one, {b.data<double>()[e]});
        const double want = (x_first ? p->call({ae.t, be.t}) : p->call({be.t, ae.t}))[0].data<double>()[0];
        bad += bits(want) != bits(y[0].data<double>()[e]);
      }
      CHECK(bad == 0);
    }
  }
}
