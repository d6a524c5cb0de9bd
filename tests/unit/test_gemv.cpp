// Matrix times vector (engine/ops/linalg_gemv.hpp): the documented order
// (four partial sums by j % 4, then (p0 + p1) + (p2 + p3), no FMA), the same
// bits from rows or columns in place, and Dot's matrix-vector and
// vector-matrix products through a program, transposed views included.
#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.hpp"
#include "engine/ops/linalg_gemv.hpp"

using namespace ember;

namespace {

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

double reference(const std::vector<double>& A, int64_t i, int64_t k, const std::vector<double>& x) {
  volatile double p[4] = {0.0, 0.0, 0.0, 0.0};  // volatile: no contraction, no reordering
  for (int64_t j = 0; j < k; ++j) {
    const volatile double prod = A[i * k + j] * x[j];
    p[j % 4] = p[j % 4] + prod;
  }
  const volatile double a = p[0] + p[1], b = p[2] + p[3];
  return a + b;
}

std::string dot_graph(const std::string& ashape, const std::string& bshape, const std::string& yshape) {
  return R"({"format": "ember-graph", "version": 1,
    "variables": [{"name": "a", "dtype": "float64", "shape": )" + ashape + R"(},
                  {"name": "b", "dtype": "float64", "shape": )" + bshape + R"(},
                  {"name": "y", "dtype": "float64", "shape": )" + yshape + R"(}],
    "inputs": [{"var": 0}, {"var": 1}], "outputs": [2],
    "nodes": [{"op": "Dot", "inputs": [0, 1], "outputs": [2], "attrs": {}}]})";
}

}  // namespace

TEST_CASE("gemv_rows_and_columns_in_place_follow_the_documented_order") {
  std::mt19937_64 gen(41);
  std::normal_distribution<double> nd(0.0, 10.0);
  for (int64_t m : {1, 3, 4, 5, 8, 50, 203}) {
    for (int64_t k : {1, 2, 3, 4, 5, 7, 8, 50, 201}) {
      std::vector<double> A(static_cast<size_t>(m * k)), At(A.size()), x(static_cast<size_t>(k));
      for (double& v : A) v = nd(gen);
      for (double& v : x) v = nd(gen);
      if (m * k > 2) A[1] = -0.0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) At[j * m + i] = A[i * k + j];
      std::vector<double> yr(static_cast<size_t>(m)), yc(static_cast<size_t>(m));
      linalg::gemv_f64(A.data(), k, 1, x.data(), m, k, yr.data());
      linalg::gemv_f64(At.data(), 1, m, x.data(), m, k, yc.data());
      for (int64_t i = 0; i < m; ++i) {
        INFO("m = " << m << ", k = " << k << ", row " << i);
        CHECK(bits(yr[i]) == bits(reference(A, i, k, x)));
        CHECK(bits(yc[i]) == bits(yr[i]));
      }
    }
  }
}

TEST_CASE("dot_matrix_vector_products_give_one_result_for_every_layout") {
  std::mt19937_64 gen(42);
  std::normal_distribution<double> nd(0.0, 3.0);
  const int64_t m = 37, k = 29;
  std::vector<double> A(static_cast<size_t>(m * k)), At(A.size()), x(static_cast<size_t>(k)), v(static_cast<size_t>(m));
  for (double& e : A) e = nd(gen);
  for (double& e : x) e = nd(gen);
  for (double& e : v) e = nd(gen);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) At[j * m + i] = A[i * k + j];
  Array a = Array::of<double>({2, {m, k}}, A), at = Array::of<double>({2, {k, m}}, At);
  Tensor a_view = at.t;  // A again, as the transpose of its transpose: columns contiguous
  a_view.shape = Shape{2, {m, k}};
  a_view.strides[0] = 1;
  a_view.strides[1] = m;
  Tensor at_view = a.t;  // A^T as a view of A: rows of A^T strided
  at_view.shape = Shape{2, {k, m}};
  at_view.strides[0] = 1;
  at_view.strides[1] = k;
  Array xv = Array::of<double>({1, {k}}, x), xc = Array::of<double>({2, {k, 1}}, x), vv = Array::of<double>({1, {m}}, v);

  auto mv = Program::from_json(dot_graph("[null, null]", "[null]", "[null]"));
  auto mc = Program::from_json(dot_graph("[null, null]", "[null, 1]", "[null, 1]"));
  auto vm = Program::from_json(dot_graph("[null]", "[null, null]", "[null]"));
  const auto y0 = mv->call({a.t, xv.t})[0], y1 = mv->call({a_view, xv.t})[0], y2 = mc->call({a.t, xc.t})[0];
  for (int64_t i = 0; i < m; ++i) {
    INFO("row " << i);
    CHECK(bits(y0.data<double>()[i]) == bits(reference(A, i, k, x)));
    CHECK(bits(y1.data<double>()[i]) == bits(y0.data<double>()[i]));
    CHECK(bits(y2.data<double>()[i]) == bits(y0.data<double>()[i]));
  }
  // v @ A = A^T v: from A in place (columns of A^T contiguous) and from a copy of A^T.
  const auto z0 = vm->call({vv.t, a.t})[0], z1 = mv->call({at.t, vv.t})[0], z2 = mv->call({at_view, vv.t})[0];
  for (int64_t j = 0; j < k; ++j) {
    INFO("column " << j);
    CHECK(bits(z0.data<double>()[j]) == bits(reference(At, j, m, v)));
    CHECK(bits(z1.data<double>()[j]) == bits(z0.data<double>()[j]));
    CHECK(bits(z2.data<double>()[j]) == bits(z0.data<double>()[j]));
  }
}

TEST_CASE("dot_of_few_outputs_over_a_long_inner_dim_is_gemv_per_column_for_every_layout") {
  // (m, k) @ (k, n) with m * n small and k long, or one row (m == 1, any n:
  // the vector-matrix product): column j of the product is gemv's order over
  // row i of a and column j of b, whatever their layouts.
  std::mt19937_64 gen(43);
  std::normal_distribution<double> nd(0.0, 3.0);
  auto g = Program::from_json(dot_graph("[null, null]", "[null, null]", "[null, null]"));
  for (const auto [m, k, n] :
       {std::array<int64_t, 3>{3, 200, 3}, {5, 100, 5}, {1, 37, 4}, {8, 16, 8}, {2, 15, 2}, {1, 25, 25}, {1, 6, 90}, {1, 37, 1}, {1, 2, 1}}) {
    std::vector<double> A(static_cast<size_t>(m * k)), At(A.size()), B(static_cast<size_t>(k * n)), Bt(B.size());
    for (double& e : A) e = nd(gen);
    for (double& e : B) e = nd(gen);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t t = 0; t < k; ++t) At[t * m + i] = A[i * k + t];
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j) Bt[j * k + t] = B[t * n + j];
    Array a = Array::of<double>({2, {m, k}}, A), at = Array::of<double>({2, {k, m}}, At);
    Array b = Array::of<double>({2, {k, n}}, B), bt = Array::of<double>({2, {n, k}}, Bt);
    Tensor a_view = at.t;  // A, columns contiguous
    a_view.shape = Shape{2, {m, k}};
    a_view.strides[0] = 1;
    a_view.strides[1] = m;
    Tensor b_view = bt.t;  // B, columns contiguous (an MvNormal gradient's transposed solve)
    b_view.shape = Shape{2, {k, n}};
    b_view.strides[0] = 1;
    b_view.strides[1] = k;
    const Tensor as[] = {a.t, a_view}, bs[] = {b.t, b_view};
    std::vector<double> want(static_cast<size_t>(m * n));
    for (int64_t j = 0; j < n; ++j) {
      std::vector<double> col(Bt.begin() + j * k, Bt.begin() + (j + 1) * k);
      for (int64_t i = 0; i < m; ++i) want[i * n + j] = reference(A, i, k, col);
    }
    for (const Tensor& x : as)
      for (const Tensor& y : bs) {
        const auto got = g->call({x, y})[0];
        for (int64_t e = 0; e < m * n; ++e) {
          INFO("m " << m << " k " << k << " n " << n << " element " << e);
          if (k >= 16 || m == 1) CHECK(bits(got.data<double>()[e]) == bits(want[e]));
          else CHECK(got.data<double>()[e] == Approx(want[e]).epsilon(1e-13));
        }
      }
  }
}
