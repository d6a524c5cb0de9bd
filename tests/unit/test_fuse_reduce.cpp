// A Sum fused into the Elemwise that feeds it (engine/program/fuse_reduce.cpp):
// where it fuses, where it must not, and that the fused program gives the
// unfused program's bits on every loop shape the Elemwise takes.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "engine/program/program_impl.hpp"
#include "interp/config.hpp"
#include "interp/reduce_tree.hpp"
#include "graph_builder.hpp"
#include "test_util.hpp"

using namespace ember;
using nlohmann::json;

namespace {

struct ReduceEnv {
  explicit ReduceEnv(bool on) {
    setenv("EMBER_FUSE_REDUCE", on ? "1" : "0", 1);
    config_reload_for_tests();
  }
  ~ReduceEnv() {
    unsetenv("EMBER_FUSE_REDUCE");
    config_reload_for_tests();
  }
};

std::shared_ptr<const Program> load(const std::string& doc, bool fuse, Options o = test::unpassed()) {
  ReduceEnv env(fuse);
  return Program::from_json(doc, o);
}

size_t num_steps(const Program& p) { return p.impl().steps.size(); }

// Fused and unfused outputs, which must agree bit for bit; the step counts.
std::vector<Array> run_both(const std::string& doc, std::initializer_list<Tensor> args, size_t* fused_steps,
                            size_t* plain_steps, Options o = test::unpassed()) {
  auto f = load(doc, true, o), u = load(doc, false, o);
  *fused_steps = num_steps(*f);
  *plain_steps = num_steps(*u);
  auto a = f->call(args), b = u->call(args);
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("output " << k);
    REQUIRE(a[k].t.size() == b[k].t.size());
    CHECK(std::memcmp(a[k].t.data, b[k].t.data, a[k].t.size() * dtype_size(a[k].t.dtype)) == 0);
  }
  return a;
}

// A two-output Composite of (x, y): out0 = x * y + x, out1 = exp(x) - y.
json two_output_composite() {
  return {{"op", "Composite"},
          {"inputs", {"float64", "float64"}},
          {"constants", json::array()},
          {"nodes",
           {{{"op", "Mul"}, {"dtype", "float64"}, {"inputs", {0, 1}}},
            {{"op", "Add"}, {"dtype", "float64"}, {"inputs", {2, 0}}},
            {{"op", "Exp"}, {"dtype", "float64"}, {"inputs", {0}}},
            {{"op", "Sub"}, {"dtype", "float64"}, {"inputs", {4, 1}}}}},
          {"outputs", {3, 5}}};
}

}  // namespace

TEST_CASE("fuse_reduce_sums_inside_the_elemwise_with_the_sum_steps_bits_at_every_size") {
  test::GraphBuilder b;
  const json unknown = json::array({nullptr});
  const int x = b.input("float64", unknown);
  const int y = b.input("float64", unknown);
  const int w = b.ew("Mul", {x, y}, "float64", unknown);
  b.outputs = {b.node("Sum", {w}, "float64", json::array(), {{"axis", nullptr}})};
  std::mt19937_64 gen(3);
  std::normal_distribution<double> nd(0.1, 10.0);
  std::vector<int64_t> sizes;
  for (int64_t n = 0; n <= 300; ++n) sizes.push_back(n);
  // one block of the VM and past it; one chunk of the sum and past it; the parallel Elemwise
  for (int64_t n : {511, 512, 513, 4099, 65535, 65536, 65537, 200003}) sizes.push_back(n);
  for (int64_t n : sizes) {
    INFO("n = " << n);
    std::vector<double> xv(static_cast<size_t>(n)), yv(static_cast<size_t>(n));
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = nd(gen), yv[i] = nd(gen);
    Array xa = Array::of<double>({1, {n}}, xv), ya = Array::of<double>({1, {n}}, yv);
    size_t fs = 0, ps = 0;
    auto out = run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
    CHECK(ps == 2);
    CHECK(fs == 1);
    if (n == 0) CHECK(out[0].data<double>()[0] == 0.0);
  }
}

TEST_CASE("fuse_reduce_takes_broadcast_and_strided_elemwise_loops") {
  // (3, 1) * (1, 700): the broadcast loop nest; a transposed input: strided runs.
  test::GraphBuilder b;
  const int c = b.input("float64", {3, 1});
  const int r = b.input("float64", {1, 700});
  const int m = b.input("float64", {700, 3});
  const int w = b.ew("Mul", {c, r}, "float64", {3, 700});
  const int mt = b.node("DimShuffle", {m}, "float64", {3, 700}, {{"new_order", {1, 0}}});
  const int z = b.ew("Add", {w, mt}, "float64", {3, 700});
  b.outputs = {b.node("Sum", {z}, "float64", json::array(), {{"axis", {0, 1}}})};
  std::vector<double> cv{0.5, -1.25, 3.0}, rv(700), mv(2100);
  for (size_t i = 0; i < rv.size(); ++i) rv[i] = std::sin(0.37 * static_cast<double>(i)) * 1e3;
  for (size_t i = 0; i < mv.size(); ++i) mv[i] = std::cos(0.11 * static_cast<double>(i)) * 1e-3;
  Array ca = Array::of<double>({2, {3, 1}}, cv), ra = Array::of<double>({2, {1, 700}}, rv),
        ma = Array::of<double>({2, {700, 3}}, mv);
  size_t fs = 0, ps = 0;
  run_both(b.str(), {ca.t, ra.t, ma.t}, &fs, &ps);
  CHECK(ps == fs + 1);
}

TEST_CASE("fuse_reduce_sums_two_outputs_of_one_composite_and_keeps_the_third_reader") {
  // out0 and out1 are each summed; out1 is also read by Neg, so only out0's Sum fuses.
  test::GraphBuilder b;
  const int x = b.input("float64", {50});
  const int y = b.input("float64", {50});
  const int o0 = b.var("float64", {50}), o1 = b.var("float64", {50});
  b.nodes.push_back({{"op", "Elemwise"}, {"inputs", {x, y}}, {"outputs", {o0, o1}},
                     {"attrs", {{"scalar_op", two_output_composite()}}}});
  const int s0 = b.node("Sum", {o0}, "float64", json::array(), {{"axis", nullptr}});
  const int s1 = b.node("Sum", {o1}, "float64", json::array(), {{"axis", nullptr}});
  const int n1 = b.ew("Neg", {o1}, "float64", {50});
  b.outputs = {s0, s1, n1};
  std::vector<double> xv(50), yv(50);
  for (int i = 0; i < 50; ++i) xv[i] = 0.05 * i - 1.0, yv[i] = 1.0 / (i + 1.0);
  Array xa = Array::of<double>({1, {50}}, xv), ya = Array::of<double>({1, {50}}, yv);
  size_t fs = 0, ps = 0;
  run_both(b.str(), {xa.t, ya.t}, &fs, &ps);
  CHECK(ps == 4);
  CHECK(fs == 3);
}

TEST_CASE("fuse_reduce_sums_trailing_axes_row_by_row") {
  std::vector<double> xv(900);  // rows of 300: the pairwise tree above its 8-lane leaves
  for (int i = 0; i < 900; ++i) xv[i] = 0.37 * i - 2.0;
  Array xa = Array::of<double>({2, {3, 300}}, xv);
  size_t fs = 0, ps = 0;
  test::GraphBuilder b;  // each of the 3 rows summed, as the Sum step sums it
  const int x = b.input("float64", {3, 300});
  const int w = b.ew("Sin", {x}, "float64", {3, 300});
  b.outputs = {b.node("Sum", {w}, "float64", {3}, {{"axis", {1}}})};
  run_both(b.str(), {xa.t}, &fs, &ps);
  CHECK(fs == ps - 1);
}

TEST_CASE("fuse_reduce_leaves_sums_that_are_not_float64_over_trailing_axes_or_of_a_graph_output") {
  std::vector<double> xv(24);
  for (int i = 0; i < 24; ++i) xv[i] = 0.5 * i;
  Array xa = Array::of<double>({2, {4, 6}}, xv);
  size_t fs = 0, ps = 0;
  {
    test::GraphBuilder b;  // over the leading axis
    const int x = b.input("float64", {4, 6});
    const int w = b.ew("Exp", {x}, "float64", {4, 6});
    b.outputs = {b.node("Sum", {w}, "float64", {6}, {{"axis", {0}}})};
    run_both(b.str(), {xa.t}, &fs, &ps);
    CHECK(fs == ps);
  }
  {
    test::GraphBuilder b;  // the Elemwise's output is a graph output too
    const int x = b.input("float64", {4, 6});
    const int w = b.ew("Exp", {x}, "float64", {4, 6});
    b.outputs = {b.node("Sum", {w}, "float64", json::array(), {{"axis", nullptr}}), w};
    run_both(b.str(), {xa.t}, &fs, &ps);
    CHECK(fs == ps);
  }
  {
    test::GraphBuilder b;  // float32 terms
    const int x = b.input("float32", {4, 6});
    const int w = b.ew("Exp", {x}, "float32", {4, 6});
    b.outputs = {b.node("Sum", {w}, "float32", json::array(), {{"axis", nullptr}, {"acc_dtype", "float32"}})};
    std::vector<float> xf(24, 0.25f);
    Array xfa = Array::of<float>({2, {4, 6}}, xf);
    run_both(b.str(), {xfa.t}, &fs, &ps);
    CHECK(fs == ps);
  }
}

TEST_CASE("fuse_reduce_is_off_with_load_time_fusion") {
  test::GraphBuilder b;
  const int x = b.input("float64", {10});
  const int w = b.ew("Exp", {x}, "float64", {10});
  b.outputs = {b.node("Sum", {w}, "float64", json::array(), {{"axis", nullptr}})};
  Options o = test::unpassed();
  o.fuse_elemwise = false;
  CHECK(num_steps(*load(b.str(), true, o)) == 2);
  CHECK(num_steps(*load(b.str(), true)) == 1);
}

namespace {
// A kernel that makes its own sums, as a tier-2 JIT kernel does
// (ElemKernel::fn_sums): its elements come from the node's own kernel, and
// it records which entry each call took.
struct SummingKernel : interp::ElemKernel {
  const interp::ElemKernel* inner = nullptr;
  int outputs = 0;
  std::vector<uint8_t> all;
  static inline int element_calls = 0, sum_calls = 0;
  SummingKernel(const interp::ElemKernel* k, int nout) : inner(k), outputs(nout), all(nout, 1) {
    summed = all.data();
    fn = [](const ElemKernel* self, int64_t n, const interp::StridedPtr* in, const interp::StridedPtr* out) {
      ++element_calls;
      static_cast<const SummingKernel*>(self)->inner->run(n, in, out);
    };
    fn_sums = [](const ElemKernel* self, int64_t n, const interp::StridedPtr* in, const interp::StridedPtr* out,
                 double* sums) {
      ++sum_calls;
      const auto* k = static_cast<const SummingKernel*>(self);
      std::vector<std::vector<double>> tmp(k->outputs);
      std::vector<interp::StridedPtr> o(out, out + k->outputs);
      for (int j = 0; j < k->outputs; ++j)
        if (!o[j].data) tmp[j].resize(n), o[j] = {tmp[j].data(), 1};
      k->inner->run(n, in, o.data());
      for (int j = 0; j < k->outputs; ++j)
        if (!tmp[j].empty()) sums[j] = reduce::reduce_contiguous<reduce::Rop::Add, double>(tmp[j].data(), n);
    };
  }
};
}  // namespace

// A fused node of many operands (a latent per observation has 20 inputs
// and 8 outputs) hands its whole sums to a kernel that makes them: a JIT
// kernel's elements of a summed output are the interpreter's.
TEST_CASE("fuse_reduce_hands_the_sums_of_a_node_of_many_operands_to_a_kernel_that_makes_them") {
  const int64_t n = 301;
  const int k = 30;
  test::GraphBuilder b;
  std::vector<int> x;
  for (int i = 0; i < k; ++i) x.push_back(b.input("float64", {n}));
  int t = b.ew("Mul", {x[0], x[1]}, "float64", {n});
  for (int i = 2; i < k; ++i) {
    t = b.ew(i % 3 == 0 ? "TrueDiv" : i % 3 == 1 ? "Add" : "Mul", {t, x[i]}, "float64", {n});
    if (i % 10 == 5) b.outputs.push_back(b.node("Sum", {t}, "float64", json::array(), {{"axis", nullptr}}));
  }
  b.outputs.push_back(b.node("Sum", {t}, "float64", json::array(), {{"axis", nullptr}}));
  std::mt19937_64 rng(k);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<Array> xs;
  std::vector<Tensor> args;
  for (int i = 0; i < k; ++i) {
    std::vector<double> v(n);
    for (double& e : v) e = u(rng);
    xs.push_back(Array::of<double>({1, {n}}, v));
  }
  for (const Array& a : xs) args.push_back(a.t);
  auto p = load(b.str(), true, Options{});
  const auto ref = p->call(args);
  const Step* big = nullptr;  // the node of the most operands
  for (const Step& st : p->impl().steps)
    if (st.op == TensorOp::Elemwise && (!big || st.in.size() + st.out.size() > big->in.size() + big->out.size()))
      big = &st;
  REQUIRE(big);
  REQUIRE(big->in.size() + big->out.size() > 24);
  const auto* kern = dynamic_cast<const ElemwiseKernel*>(big->kernel);
  REQUIRE(kern);
  const interp::ElemKernel* own = kern->active();
  SummingKernel summing(own, static_cast<int>(big->out.size()));
  kern->set_active(&summing);
  SummingKernel::element_calls = SummingKernel::sum_calls = 0;
  const auto got = p->call(args);
  kern->set_active(own);
  CHECK(SummingKernel::sum_calls == 1);
  CHECK(SummingKernel::element_calls == 0);
  REQUIRE(got.size() == ref.size());
  for (size_t o = 0; o < got.size(); ++o) {
    INFO("output " << o);
    CHECK(std::memcmp(got[o].t.data, ref[o].t.data, sizeof(double)) == 0);
  }
}
