// The fast paths of engine/ops/ops_reduce.cpp: the small full reduction (one
// output over <= 256 elements, contiguous or 1-d strided, or a contiguous run
// up to one chunk) and the narrow columns (a dense (R, C) block reduced over
// its rows, C <= 16): values against references written here from the order
// documented in engine/ops/reduce_tree.hpp, and bits against the general path
// (the same data as a strided view the fast paths do not take).
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
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

// The documented tree, written out again with a generic combine.
template <class T, class F>
T ref_leaf(const T* a, int64_t n, F op) {
  if (n < 8) {
    T r = a[0];
    for (int64_t i = 1; i < n; ++i) r = op(r, a[i]);
    return r;
  }
  T l[8];
  for (int k = 0; k < 8; ++k) l[k] = a[k];
  int64_t i = 8;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) l[k] = op(l[k], a[i + k]);
  T r = op(op(op(l[0], l[1]), op(l[2], l[3])), op(op(l[4], l[5]), op(l[6], l[7])));
  for (; i < n; ++i) r = op(r, a[i]);
  return r;
}
template <class T, class F>
T ref_tree(const T* a, int64_t n, F op) {  // n <= 65536: one chunk
  if (n <= 128) return ref_leaf(a, n, op);
  const int64_t h = (n / 2) / 8 * 8;
  const T left = ref_tree(a, h, op);
  return op(left, ref_tree(a + h, n - h, op));
}
const auto add = [](double a, double b) { return a + b; };
const auto mul = [](double a, double b) { return a * b; };
const auto mx = [](double a, double b) { return (a > b || a != a) ? a : b; };  // NaN wins
// A reduction op by its graph name, with the combine of the reference tree.
struct Op {
  const char* name;
  std::function<double(double, double)> f;
};

// x as a 1-d view of n elements with element stride st (negative: reversed)
// over a buffer of n * |st| doubles.
Tensor strided_view(const Array& buf, int64_t n, int64_t st) {
  Tensor t = buf.t;
  t.shape = Shape{1, {n}};
  t.strides[0] = st;
  if (st < 0) t.data = buf.data<double>() + (n - 1) * -st;
  return t;
}

const std::vector<int64_t> kEdges = {1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 135, 136, 255, 256, 257, 300};

}  // namespace

TEST_CASE("small_sum_of_strided_1d_views_follows_the_documented_tree") {
  std::mt19937_64 gen(21);
  std::normal_distribution<double> nd(0.7, 50.0);
  auto p = Program::from_json(reduce_graph("Sum", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  for (int64_t st : {1, 3, -1, -2}) {
    for (int64_t n : kEdges) {
      const int64_t m = n * (st < 0 ? -st : st);
      std::vector<double> raw(static_cast<size_t>(m));
      for (double& v : raw) v = nd(gen);
      Array buf = Array::of<double>({1, {m}}, raw);
      std::vector<double> seen(static_cast<size_t>(n));  // the elements in view order
      for (int64_t i = 0; i < n; ++i) seen[i] = st > 0 ? raw[i * st] : raw[(n - 1 - i) * -st];
      const double got = p->call({strided_view(buf, n, st)})[0].data<double>()[0];
      INFO("n = " << n << ", stride = " << st);
      CHECK(bits(got) == bits(ref_tree(seen.data(), n, add)));
    }
  }
}

TEST_CASE("small_prod_follows_the_documented_tree_and_takes_2d_inputs") {
  std::mt19937_64 gen(22);
  std::uniform_real_distribution<double> ud(0.5, 1.7);
  auto p1 = Program::from_json(reduce_graph("Prod", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto p2 = Program::from_json(reduce_graph("Prod", "float64", "[null, null]", "float64", "[]", R"({"axis": null})"));
  // axis 1 of a (1, n) input: one output, the kept dim has size 1
  auto pk = Program::from_json(reduce_graph("Prod", "float64", "[1, null]", "float64", "[1]", R"({"axis": [1]})"));
  for (int64_t n : kEdges) {
    std::vector<double> x(static_cast<size_t>(n));
    for (double& v : x) v = ud(gen);
    const uint64_t want = bits(ref_tree(x.data(), n, mul));
    INFO("n = " << n);
    CHECK(bits(p1->call({Array::of<double>({1, {n}}, x).t})[0].data<double>()[0]) == want);
    CHECK(bits(pk->call({Array::of<double>({2, {1, n}}, x).t})[0].data<double>()[0]) == want);
    if (n % 3 == 0)
      CHECK(bits(p2->call({Array::of<double>({2, {3, n / 3}}, x).t})[0].data<double>()[0]) == want);
  }
}

TEST_CASE("small_reductions_of_zero_and_one_elements") {
  auto sum = Program::from_json(reduce_graph("Sum", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto prod = Program::from_json(reduce_graph("Prod", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto mx = Program::from_json(reduce_graph("Max", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto all = Program::from_json(reduce_graph("All", "float64", "[null]", "bool", "[]", R"({"axis": null})"));
  auto sum0d = Program::from_json(reduce_graph("Sum", "int32", "[]", "int64", "[]", R"({"axis": null})"));
  Array e = Array::of<double>({1, {0}}, std::vector<double>{});
  CHECK(sum->call({e.t})[0].data<double>()[0] == 0.0);
  CHECK(prod->call({e.t})[0].data<double>()[0] == 1.0);
  CHECK(all->call({e.t})[0].data<bool>()[0] == true);
  CHECK_THROWS_WITH(mx->call({e.t}), Catch::Matchers::Contains("zero-size array"));
  Array one = Array::of<double>({1, {1}}, {-0.0});
  CHECK(bits(sum->call({one.t})[0].data<double>()[0]) == bits(-0.0));
  CHECK(bits(mx->call({one.t})[0].data<double>()[0]) == bits(-0.0));
  CHECK(all->call({one.t})[0].data<bool>()[0] == false);
  Array s = Array::of<int32_t>({0, {}}, {-7});
  CHECK(sum0d->call({s.t})[0].data<int64_t>()[0] == -7);
}

TEST_CASE("small_max_min_propagate_nan_from_any_position") {
  auto mx = Program::from_json(reduce_graph("Max", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto mn = Program::from_json(reduce_graph("Min", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto mx32 = Program::from_json(reduce_graph("Max", "float32", "[null]", "float32", "[]", R"({"axis": null})"));
  for (int64_t n : {1, 5, 8, 9, 128, 129, 256}) {
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
      std::vector<double> x(static_cast<size_t>(n));
      std::vector<float> xf(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) xf[i] = static_cast<float>(x[i] = std::sin(double(i)) * 10);
      x[at] = std::numeric_limits<double>::quiet_NaN();
      xf[at] = std::numeric_limits<float>::quiet_NaN();
      INFO("n = " << n << ", NaN at " << at);
      CHECK(std::isnan(mx->call({Array::of<double>({1, {n}}, x).t})[0].data<double>()[0]));
      CHECK(std::isnan(mn->call({Array::of<double>({1, {n}}, x).t})[0].data<double>()[0]));
      CHECK(std::isnan(mx32->call({Array::of<float>({1, {n}}, xf).t})[0].data<float>()[0]));
    }
  }
  std::vector<double> x = {3, -1, 9.5, 2, -4, 9.25, 0, 1, 5};
  CHECK(mx->call({Array::of<double>({1, {9}}, x).t})[0].data<double>()[0] == 9.5);
  CHECK(mn->call({Array::of<double>({1, {9}}, x).t})[0].data<double>()[0] == -4);
}

TEST_CASE("small_reductions_of_integer_float32_and_bool_inputs") {
  std::mt19937_64 gen(23);
  auto sum_i32 = Program::from_json(reduce_graph("Sum", "int32", "[null]", "int32", "[]", R"({"axis": null})"));
  auto sum_f32 = Program::from_json(reduce_graph("Sum", "float32", "[null]", "float32", "[]", R"({"axis": null})"));
  auto max_i64 = Program::from_json(reduce_graph("Max", "int64", "[null]", "int64", "[]", R"({"axis": null})"));
  auto min_i16 = Program::from_json(reduce_graph("Min", "int16", "[null]", "int16", "[]", R"({"axis": null})"));
  auto any_b = Program::from_json(reduce_graph("Any", "bool", "[null]", "bool", "[]", R"({"axis": null})"));
  auto all_f = Program::from_json(reduce_graph("All", "float64", "[null]", "bool", "[]", R"({"axis": null})"));
  for (int64_t n : kEdges) {
    INFO("n = " << n);
    std::vector<int32_t> xi(static_cast<size_t>(n));
    std::vector<float> xf(static_cast<size_t>(n));
    std::vector<int64_t> xl(static_cast<size_t>(n));
    std::vector<int16_t> xs(static_cast<size_t>(n));
    int64_t isum = 0, lmax = std::numeric_limits<int64_t>::min();
    int16_t smin = std::numeric_limits<int16_t>::max();
    std::vector<double> fd(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      xi[i] = static_cast<int32_t>(gen() % 2000000001) - 1000000000;  // int32 sum wraps
      isum += xi[i];
      xf[i] = static_cast<float>(static_cast<int64_t>(gen() % 20001) - 10000) / 7.0f;
      fd[i] = xf[i];
      xl[i] = static_cast<int64_t>(gen());
      lmax = std::max(lmax, xl[i]);
      xs[i] = static_cast<int16_t>(gen());
      smin = std::min(smin, xs[i]);
    }
    CHECK(sum_i32->call({Array::of<int32_t>({1, {n}}, xi).t})[0].data<int32_t>()[0] ==
          static_cast<int32_t>(static_cast<uint32_t>(isum)));
    // float32 accumulates in float64 (the documented tree), then rounds once
    CHECK(sum_f32->call({Array::of<float>({1, {n}}, xf).t})[0].data<float>()[0] ==
          static_cast<float>(ref_tree(fd.data(), n, add)));
    CHECK(max_i64->call({Array::of<int64_t>({1, {n}}, xl).t})[0].data<int64_t>()[0] == lmax);
    CHECK(min_i16->call({Array::of<int16_t>({1, {n}}, xs).t})[0].data<int16_t>()[0] == smin);
    std::vector<bool> b(static_cast<size_t>(n), false);
    CHECK(any_b->call({Array::of<bool>({1, {n}}, b).t})[0].data<bool>()[0] == false);
    b[n - 1] = true;
    CHECK(any_b->call({Array::of<bool>({1, {n}}, b).t})[0].data<bool>()[0] == true);
    std::vector<double> ones(static_cast<size_t>(n), 2.5);
    CHECK(all_f->call({Array::of<double>({1, {n}}, ones).t})[0].data<bool>()[0] == true);
    ones[0] = 0.0;
    CHECK(all_f->call({Array::of<double>({1, {n}}, ones).t})[0].data<bool>()[0] == false);
  }
}

TEST_CASE("small_float32_sum_in_float32_follows_the_documented_tree") {
  // Float leaves run their 8 lanes as SIMD batches: each lane must keep the scalar order.
  std::mt19937_64 gen(25);
  std::normal_distribution<double> nd(0.0, 1e3);
  auto p = Program::from_json(
      reduce_graph("Sum", "float32", "[null]", "float32", "[]", R"({"axis": null, "acc_dtype": "float32"})"));
  for (int64_t n = 1; n <= 700; n += (n < 300 ? 1 : 37)) {
    INFO("n = " << n);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = static_cast<float>(nd(gen));
    const float got = p->call({Array::of<float>({1, {n}}, x).t})[0].data<float>()[0];
    const float want = ref_tree(x.data(), n, [](float a, float b) { return a + b; });
    CHECK(std::memcmp(&got, &want, 4) == 0);
  }
}

TEST_CASE("small_path_gives_the_general_paths_bits") {
  // The same values contiguous (fast path, up to one chunk) and as a (2, n/2)
  // view with a gap between its rows (two reduced axes: the general path).
  std::mt19937_64 gen(24);
  std::normal_distribution<double> nd(-0.2, 1e4);
  auto p1 = Program::from_json(reduce_graph("Sum", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto p2 = Program::from_json(reduce_graph("Sum", "float64", "[null, null]", "float64", "[]", R"({"axis": null})"));
  auto m1 = Program::from_json(reduce_graph("Max", "float64", "[null]", "float64", "[]", R"({"axis": null})"));
  auto m2 = Program::from_json(reduce_graph("Max", "float64", "[null, null]", "float64", "[]", R"({"axis": null})"));
  for (int64_t n : {2, 8, 16, 18, 254, 256, 258, 1000, 65536}) {
    const int64_t h = n / 2;
    std::vector<double> x(static_cast<size_t>(n)), gap(static_cast<size_t>(n + 5));
    for (int64_t i = 0; i < n; ++i) x[i] = gap[i < h ? i : i + 5] = nd(gen);
    Array a = Array::of<double>({1, {n}}, x), g = Array::of<double>({1, {n + 5}}, gap);
    Tensor v = g.t;
    v.shape = Shape{2, {2, h}};
    v.strides[0] = h + 5;
    v.strides[1] = 1;
    INFO("n = " << n);
    const double fast = p1->call({a.t})[0].data<double>()[0];
    CHECK(bits(fast) == bits(p2->call({v})[0].data<double>()[0]));
    CHECK(bits(fast) == bits(ref_tree(x.data(), n, add)));
    CHECK(bits(m1->call({a.t})[0].data<double>()[0]) == bits(m2->call({v})[0].data<double>()[0]));
  }
}

TEST_CASE("narrow_column_reductions_follow_the_documented_tree_per_column") {
  std::mt19937_64 gen(23);
  std::normal_distribution<double> nd(0.7, 50.0);
  const Op ops[] = {{"Sum", add}, {"Prod", mul}, {"Max", mx}};
  for (const Op& op : ops) {
    auto p = Program::from_json(
        reduce_graph(op.name, "float64", "[null, null]", "float64", "[null]", R"({"axis": [0]})"));
    for (int64_t C : {1, 2, 3, 5, 8, 9, 16, 17}) {
      for (int64_t R : {1, 2, 7, 8, 9, 17, 128, 129, 300, 1000, 5000}) {
        std::vector<double> x(static_cast<size_t>(R * C));
        for (double& v : x) v = op.f(2.0, 3.0) == 6.0 ? 1.0 + nd(gen) / 5000.0 : nd(gen);
        if (R > 3) x[C] = -0.0;  // a signed zero in column 0
        std::vector<double> col(static_cast<size_t>(R));
        auto y = p->call({Array::of<double>({2, {R, C}}, x).t})[0];
        // The same values as a transposed view: the rows path, not this one.
        std::vector<double> xt(static_cast<size_t>(R * C));
        for (int64_t i = 0; i < R; ++i)
          for (int64_t c = 0; c < C; ++c) xt[c * R + i] = x[i * C + c];
        Array t = Array::of<double>({2, {C, R}}, xt);
        Tensor tv = t.t;
        tv.shape = Shape{2, {R, C}};
        tv.strides[0] = 1;
        tv.strides[1] = R;
        auto yt = p->call({tv})[0];
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t i = 0; i < R; ++i) col[i] = x[i * C + c];
          INFO(op.name << " R = " << R << ", C = " << C << ", column " << c);
          CHECK(bits(y.data<double>()[c]) == bits(ref_tree(col.data(), R, op.f)));
          CHECK(bits(yt.data<double>()[c]) == bits(y.data<double>()[c]));
        }
      }
    }
  }
}

TEST_CASE("short_row_reductions_follow_the_documented_tree_per_row") {
  std::mt19937_64 gen(24);
  std::normal_distribution<double> nd(0.7, 50.0);
  const Op ops[] = {{"Sum", add}, {"Max", mx}};
  for (const Op& op : ops) {
    auto p = Program::from_json(
        reduce_graph(op.name, "float64", "[null, null]", "float64", "[null]", R"({"axis": [1]})"));
    for (int64_t R : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20, 31, 64, 127, 128}) {
      for (int64_t O : {1, 4, 5, 7, 600}) {
        std::vector<double> x(static_cast<size_t>(R * O));
        for (double& v : x) v = nd(gen);
        x[0] = -0.0;
        auto y = p->call({Array::of<double>({2, {O, R}}, x).t})[0];
        for (int64_t o = 0; o < O; ++o) {
          INFO(op.name << " R = " << R << ", O = " << O << ", row " << o);
          CHECK(bits(y.data<double>()[o]) == bits(ref_tree(x.data() + o * R, R, op.f)));
        }
      }
    }
  }
}

// All and Any over a whole contiguous bool tensor scan its bytes: one false
// (All) or one true (Any) decides wherever it is, of any rank, and a true is
// any nonzero byte.
TEST_CASE("all_and_any_of_a_whole_bool_tensor_read_every_byte") {
  for (const auto& [shape, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"[null]", {257}}, {"[null, null]", {40, 9}}, {"[null, null, null]", {3, 5, 7}}}) {
    auto all = Program::from_json(reduce_graph("All", "bool", shape, "bool", "[]", R"({"axis": null})"));
    auto any = Program::from_json(reduce_graph("Any", "bool", shape, "bool", "[]", R"({"axis": null})"));
    Shape s{static_cast<int>(dims.size()), {}};
    int64_t n = 1;
    for (size_t d = 0; d < dims.size(); ++d) n *= s.dims[d] = dims[d];
    auto with = [&](unsigned char fill, int64_t at, unsigned char v) {
      Array a = Array::of<bool>(s, std::vector<bool>(static_cast<size_t>(n), false));
      auto* b = static_cast<unsigned char*>(a.t.data);
      std::memset(b, fill, static_cast<size_t>(n));
      if (at >= 0) b[at] = v;
      return a;
    };
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
      INFO("shape " << shape << ", at " << at);
      CHECK(all->call({with(1, at, 0).t})[0].data<bool>()[0] == false);
      CHECK(all->call({with(2, at, 255).t})[0].data<bool>()[0] == true);
      CHECK(any->call({with(0, at, 1).t})[0].data<bool>()[0] == true);
      CHECK(any->call({with(0, at, 4).t})[0].data<bool>()[0] == true);
      CHECK(any->call({with(0, at, 0).t})[0].data<bool>()[0] == false);
    }
  }
}
