// Every boundary a caller crosses: the C++ API, the C ABI (include/ember/ember.h) and
// the `ember run` command. Bad calls get a clear error and a documented
// status, never a crash; non-finite values pass through as IEEE 754 says.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "ember/ember.h"
#include "ember/ember.hpp"
#include "test_util.hpp"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// x: float64 (3,), y: float64 (?,) -> x + y, log(x), 1 / y
const char* kThreeOps = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "x", "dtype": "float64", "shape": [3]},
                {"name": "y", "dtype": "float64", "shape": [null]},
                {"name": "sum", "dtype": "float64", "shape": [3]},
                {"name": "logx", "dtype": "float64", "shape": [3]},
                {"name": "inv", "dtype": "float64", "shape": [null]}],
  "inputs": [{"var": 0}, {"var": 1}], "outputs": [2, 3, 4],
  "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "Add"}}},
            {"op": "Elemwise", "inputs": [0], "outputs": [3], "attrs": {"scalar_op": {"op": "Log"}}},
            {"op": "Elemwise", "inputs": [1], "outputs": [4], "attrs": {"scalar_op": {"op": "Reciprocal"}}}]})";

// nutpie-style logp graph of dim 1: logp = exp(x), grad = 1 / x. A logp
// output of one element (shape (1,)) is accepted by the C ABI like a 0-d one.
const char* kLogp = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "x", "dtype": "float64", "shape": [1]},
                {"name": "logp", "dtype": "float64", "shape": [1]},
                {"name": "grad", "dtype": "float64", "shape": [1]}],
  "inputs": [{"var": 0}], "outputs": [1, 2],
  "nodes": [{"op": "Elemwise", "inputs": [0], "outputs": [1], "attrs": {"scalar_op": {"op": "Exp"}}},
            {"op": "Elemwise", "inputs": [0], "outputs": [2], "attrs": {"scalar_op": {"op": "Reciprocal"}}}]})";

// As kLogp, with CheckAndRaise(x, x >= 0) in front.
const char* kCheckedLogp = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "x", "dtype": "float64", "shape": [1]},
                {"dtype": "float64", "shape": [1]},
                {"dtype": "bool", "shape": [1]},
                {"dtype": "float64", "shape": [1]},
                {"name": "logp", "dtype": "float64", "shape": [1]},
                {"name": "grad", "dtype": "float64", "shape": [1]}],
  "inputs": [{"var": 0}], "outputs": [4, 5],
  "constants": [{"var": 1, "data": [0]}],
  "nodes": [{"op": "Elemwise", "inputs": [0, 1], "outputs": [2], "attrs": {"scalar_op": {"op": "GE"}}},
            {"op": "CheckAndRaise", "inputs": [0, 2], "outputs": [3], "attrs": {"msg": "x must be non-negative"}},
            {"op": "Elemwise", "inputs": [3], "outputs": [4], "attrs": {"scalar_op": {"op": "Exp"}}},
            {"op": "Elemwise", "inputs": [3], "outputs": [5], "attrs": {"scalar_op": {"op": "Reciprocal"}}}]})";

struct TempDir {
  std::filesystem::path p;
  TempDir() {
    p = std::filesystem::temp_directory_path() /
        ("ember_call_boundary_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(p);
  }
  ~TempDir() { std::filesystem::remove_all(p); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string path = (p / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

Tensor vec(std::vector<double>& v) {
  Shape s;
  s.ndim = 1;
  s.dims[0] = static_cast<int64_t>(v.size());
  return Tensor::contiguous(DType::Float64, s, v.data());
}

std::string call_error(const Program& p, std::span<const Tensor> args) {
  try {
    p.call(args);
  } catch (const CallError& e) {
    return e.what();
  }
  return "";
}

// Runs a command; returns (exit code, or -signal; combined output).
std::pair<int, std::string> run_cmd(const std::string& cmd) {
  std::string out;
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = ::pclose(f);
  if (WIFSIGNALED(st)) return {-WTERMSIG(st), out};
  return {WEXITSTATUS(st), out};
}

std::string npy_header(const std::string& descr, const std::string& shape) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string r = "\x93NUMPY\x01";
  r += '\0';
  r += static_cast<char>(h.size() & 0xff);
  r += static_cast<char>(h.size() >> 8);
  return r + h;
}

}  // namespace

// ---- C++ API -------------------------------------------------------------

TEST_CASE("cpp_call_rejects_wrong_count_dtype_rank_static_shape_and_null_data", "[call_boundary]") {
  auto p = Program::from_json(kThreeOps);
  std::vector<double> x = {1, 2, 3}, y = {1, 2, 3}, four = {1, 2, 3, 4};
  const Tensor good[] = {vec(x), vec(y)};
  CHECK(call_error(*p, good) == "");

  CHECK_THAT(call_error(*p, std::span<const Tensor>(good, 1)), Contains("expected 2 arguments, got 1"));
  Tensor f32 = vec(x);
  f32.dtype = DType::Float32;
  const Tensor wrong_dtype[] = {f32, vec(y)};
  CHECK_THAT(call_error(*p, wrong_dtype), Contains("argument 0 ('x')") && Contains("dtype float32"));
  Tensor as2d = vec(x);
  as2d.shape.ndim = 2;
  as2d.shape.dims[1] = 1;
  as2d.strides[1] = 1;
  const Tensor wrong_rank[] = {as2d, vec(y)};
  CHECK_THAT(call_error(*p, wrong_rank), Contains("2 dims, expected 1"));
  const Tensor wrong_static[] = {vec(four), vec(y)};
  CHECK_THAT(call_error(*p, wrong_static), Contains("static shape") && Contains("expected 3"));
  Tensor null_data = vec(y);
  null_data.data = nullptr;
  const Tensor nulls[] = {vec(x), null_data};
  CHECK_THAT(call_error(*p, nulls), Contains("argument 1 ('y')") && Contains("null data"));
  Tensor negative = vec(y);
  negative.shape.dims[0] = -2;
  const Tensor negs[] = {vec(x), negative};
  CHECK_THAT(call_error(*p, negs), Contains("negative dim"));
}

TEST_CASE("cpp_call_rejects_run_time_shapes_that_do_not_broadcast", "[call_boundary]") {
  auto p = Program::from_json(kThreeOps);
  std::vector<double> x = {1, 2, 3}, y4 = {1, 2, 3, 4};
  const Tensor args[] = {vec(x), vec(y4)};
  // The three Elemwise nodes share operands: one fused node, named after its last member.
  CHECK_THAT(call_error(*p, args), Contains("node 2 (Elemwise)") && Contains("do not broadcast at dim 0: 3 vs 4"));
}

TEST_CASE("cpp_run_rejects_a_workspace_of_another_program_and_unknown_shared_name", "[call_boundary]") {
  auto p = Program::from_json(kThreeOps), q = Program::from_json(kThreeOps);
  auto ws = q->make_workspace();
  std::vector<double> x = {1, 2, 3}, y = {1, 2, 3};
  const Tensor args[] = {vec(x), vec(y)};
  CHECK_THROWS_WITH(p->run(*ws, args), Contains("workspace belongs to another program"));
  CHECK_THROWS_WITH(p->set_shared("nope", vec(x)), Contains("no shared input named 'nope'"));
}

TEST_CASE("non_finite_values_propagate_as_ieee_754_says", "[call_boundary]") {
  auto p = Program::from_json(kThreeOps);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x = {kInf, nan, -0.0}, y = {-kInf, 1.0, -0.0};
  const auto out = p->call({vec(x), vec(y)});
  const double* sum = out[0].data<double>();
  CHECK(std::isnan(sum[0]));                       // inf + -inf
  CHECK(std::isnan(sum[1]));                       // NaN + 1
  CHECK((sum[2] == 0 && std::signbit(sum[2])));    // -0 + -0 = -0
  const double* logx = out[1].data<double>();
  CHECK(logx[0] == kInf);                          // log(inf)
  CHECK(std::isnan(logx[1]));                      // log(NaN)
  CHECK(logx[2] == -kInf);                         // log(-0) = -inf (pole)
  const double* inv = out[2].data<double>();
  CHECK((inv[0] == 0 && std::signbit(inv[0])));    // 1 / -inf = -0
  CHECK(inv[1] == 1.0);
  CHECK(inv[2] == -kInf);                          // 1 / -0 = -inf
}

// ---- C ABI -----------------------------------------------------------------

TEST_CASE("c_abi_logp_status_codes_for_ok_wrong_dim_non_finite_logp_and_gradient", "[call_boundary]") {
  TempDir d;
  char err[256] = "";
  ember_program* p = ember_program_load(d.write("logp.json", kLogp).c_str(), err, sizeof err);
  INFO(err);
  REQUIRE(p);
  CHECK(ember_program_input_size(p) == 1);
  double x = 0, grad = 0, logp = 0;
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 3);  // exp(0) = 1 finite, 1/0 = inf
  CHECK(logp == 1.0);
  CHECK(grad == kInf);
  x = 1;
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 0);
  CHECK(test::close(logp, 2.718281828459045, 4e-16));
  CHECK(grad == 1.0);
  x = 1000;  // exp overflows
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 4);
  CHECK(logp == kInf);
  x = std::numeric_limits<double>::quiet_NaN();
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 4);
  double two[2] = {1, 2};
  CHECK(ember_logp(2, two, &grad, &logp, p) == -1);
  CHECK_THAT(std::string(ember_last_error()), Contains("dim 2") && Contains("takes 1"));
  CHECK(ember_logp(1, two, &grad, &logp, nullptr) == -2);
  ember_program_free(p);
}

// logp = exp(x[0]), grad = 1 / x over 37 elements: whole vector groups and a tail.
const char* kLogp37 = R"({"format": "ember-graph", "version": 1,
  "variables": [{"name": "x", "dtype": "float64", "shape": [37]},
                {"dtype": "float64", "shape": [1]},
                {"name": "logp", "dtype": "float64", "shape": [1]},
                {"name": "grad", "dtype": "float64", "shape": [37]}],
  "inputs": [{"var": 0}], "outputs": [2, 3],
  "nodes": [{"op": "Subtensor", "inputs": [0], "outputs": [1],
             "attrs": {"idx_list": [{"type": "slice", "start": 0, "stop": 1, "step": null}]}},
            {"op": "Elemwise", "inputs": [1], "outputs": [2], "attrs": {"scalar_op": {"op": "Exp"}}},
            {"op": "Elemwise", "inputs": [0], "outputs": [3], "attrs": {"scalar_op": {"op": "Reciprocal"}}}]})";

TEST_CASE("c_abi_logp_reports_a_non_finite_gradient_element_wherever_it_is", "[call_boundary]") {
  TempDir d;
  char err[256] = "";
  ember_program* p = ember_program_load(d.write("logp37.json", kLogp37).c_str(), err, sizeof err);
  INFO(err);
  REQUIRE(p);
  std::vector<double> x(37), grad(37);
  double logp = 0;
  // Finite extremes: 1 / +-1e-308 is +-1e308, 1 / +-DBL_MAX a subnormal.
  for (int k = 0; k < 37; ++k)
    x[k] = (k % 2 ? -1.0 : 1.0) * (k % 3 == 0 ? 1e-308 : k % 3 == 1 ? std::numeric_limits<double>::max() : 0.5 + k);
  CHECK(ember_logp(37, x.data(), grad.data(), &logp, p) == 0);
  const double specials[3] = {0.0, -0.0, std::numeric_limits<double>::quiet_NaN()};  // grad: inf, -inf, NaN
  for (int k = 1; k < 37; ++k)
    for (double v : specials) {
      std::vector<double> y = x;
      y[k] = v;
      INFO("element " << k << " = " << v);
      CHECK(ember_logp(37, y.data(), grad.data(), &logp, p) == 3);
      CHECK(!std::isfinite(grad[k]));
    }
  ember_program_free(p);
}

TEST_CASE("c_abi_logp_from_threads_matches_the_expected_values_and_counts_every_call", "[call_boundary]") {
  // Eight threads on one program, more threads than cores: workspaces are
  // shared between calls, never between two calls at once.
  auto pts = test::read_json(test::data_path("hierarchical_expected.json"));
  char err[512] = "";
  ember_program* p = ember_program_load(test::data_path("hierarchical_logp.json").c_str(), err, sizeof err);
  INFO(err);
  REQUIRE(p);
  const uint64_t dim = ember_program_input_size(p);
  std::vector<std::vector<double>> xs;
  for (const auto& pt : pts) xs.push_back(pt["x"].get<std::vector<double>>());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<double> grad(dim);
      double logp = 0;
      for (int r = 0; r < 50; ++r) {
        const size_t k = (r + t) % xs.size();
        if (ember_logp(dim, xs[k].data(), grad.data(), &logp, p) != 0 ||
            !test::close(logp, pts[k]["logp"].get<double>(), 1e-12)) {
          ++bad;
          continue;
        }
        for (uint64_t i = 0; i < dim; ++i)
          if (!test::close(grad[i], pts[k]["grad"][i].get<double>(), 1e-12)) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  CHECK(ember_program_logp_calls(p) == 8 * 50);
  ember_program_free(p);
}

TEST_CASE("c_abi_expand_checks_output_size", "[call_boundary]") {
  TempDir d;
  char err[256] = "";
  ember_program* p = ember_program_load(d.write("logp.json", kLogp).c_str(), err, sizeof err);
  REQUIRE(p);
  CHECK(ember_program_output_size(p) == 2);
  double x = 1, out[3] = {};
  CHECK(ember_expand(1, 3, &x, out, p) == -1);
  CHECK_THAT(std::string(ember_last_error()), Contains("expand produces 2 values"));
  CHECK(ember_expand(1, 2, &x, out, p) == 0);
  CHECK(test::close(out[0], 2.718281828459045, 4e-16));
  CHECK(out[1] == 1.0);
  CHECK(ember_expand(3, 2, &x, out, p) == -1);
  ember_program_free(p);
}

TEST_CASE("c_abi_failed_check_and_raise_returns_1_with_its_message", "[call_boundary]") {
  TempDir d;
  char err[512] = "";
  ember_program* p = ember_program_load(d.write("checked.json", kCheckedLogp).c_str(), err, sizeof err);
  INFO(err);
  REQUIRE(p);
  double x = 2, grad = 0, logp = 0;
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 0);
  x = -1;
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 1);
  CHECK_THAT(std::string(ember_last_error()), Contains("x must be non-negative"));
  x = 3;  // the program stays usable after a recoverable error
  CHECK(ember_logp(1, &x, &grad, &logp, p) == 0);
  CHECK(grad == 1.0 / 3);
  ember_program_free(p);
}

TEST_CASE("c_abi_load_reports_missing_file_bad_json_and_wrong_signature", "[call_boundary]") {
  TempDir d;
  char err[512] = "";
  CHECK(ember_program_load((d.p / "missing.json").string().c_str(), err, sizeof err) == nullptr);
  CHECK_THAT(std::string(err), Contains("missing.json"));
  CHECK(ember_program_load(d.write("bad.json", "{\"format\": ").c_str(), err, sizeof err) == nullptr);
  CHECK_THAT(std::string(err), Contains("bad.json"));
  CHECK(ember_program_load(d.write("three.json", kThreeOps).c_str(), err, sizeof err) == nullptr);
  CHECK_THAT(std::string(err), Contains("one float64 vector input"));
  char tiny[4];  // a short buffer is truncated, still terminated
  CHECK(ember_program_load(d.write("three2.json", kThreeOps).c_str(), tiny, sizeof tiny) == nullptr);
  CHECK(std::string(tiny).size() == 3);
  CHECK(ember_program_load(nullptr, err, sizeof err) == nullptr);
}

// ---- the ember command -------------------------------------------------------

TEST_CASE("ember_run_reports_bad_inputs_with_a_clear_error_and_non_zero_exit", "[call_boundary]") {
  TempDir d;
  const std::string ember = test::ember_binary();
  const std::string graph = d.write("g.json", kThreeOps);
  std::string y = npy_header("<f8", "(2,)");
  const double yv[2] = {1, 2};
  y.append(reinterpret_cast<const char*>(yv), sizeof yv);
  const std::string ynpy = d.write("y.npy", y);
  std::string x = npy_header("<f8", "(3,)");
  const double xv[3] = {1, 2, 3};
  x.append(reinterpret_cast<const char*>(xv), sizeof xv);
  const std::string xnpy = d.write("x.npy", x);

  SECTION("good call runs") {
    auto [rc, out] = run_cmd(ember + " run " + graph + " --input x=" + xnpy + " --input y=" + xnpy);
    INFO(out);
    CHECK(rc == 0);
  }
  SECTION("missing graph file") {
    auto [rc, out] = run_cmd(ember + " run " + (d.p / "nope.json").string());
    INFO(out);
    CHECK(rc > 0);
    CHECK_THAT(out, Contains("nope.json"));
  }
  SECTION("malformed graph file") {
    auto [rc, out] = run_cmd(ember + " run " + d.write("bad.json", "{\"format\": \"ember-graph\", \"version\": 1"));
    INFO(out);
    CHECK(rc == 2);
    CHECK_THAT(out, Contains("load error") && Contains("bad.json"));
  }
  SECTION("wrong --input name") {
    auto [rc, out] = run_cmd(ember + " run " + graph + " --input x=" + xnpy + " --input y=" + ynpy +
                             " --input zz=" + xnpy);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out, Contains("'zz'") && Contains("not an input"));
  }
  SECTION("--input without =") {
    auto [rc, out] = run_cmd(ember + " run " + graph + " --input " + xnpy);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out, Contains("NAME=FILE.npy"));
  }
  SECTION("malformed .npy files") {
    const std::string bad[] = {d.write("empty.npy", ""), d.write("text.npy", "hello, world"),
                               d.write("trunc_header.npy", npy_header("<f8", "(3,)").substr(0, 20)),
                               d.write("trunc_data.npy", npy_header("<f8", "(3,)") + std::string(8, '\0')),
                               d.write("dtype.npy", npy_header("<c16", "(3,)") + std::string(48, '\0')),
                               d.write("huge.npy", npy_header("<f8", "(99999999999, 99999999999)"))};
    for (const std::string& f : bad) {
      auto [rc, out] = run_cmd(ember + " run " + graph + " --input x=" + f + " --input y=" + ynpy);
      INFO(f << ": " << out);
      CHECK(rc == 3);
      CHECK_THAT(out, Contains(f));
    }
  }
  SECTION("wrong dtype and static shape from .npy") {
    std::string i4 = npy_header("<i4", "(3,)") + std::string(12, '\0');
    auto [rc, out] = run_cmd(ember + " run " + graph + " --input x=" + d.write("i4.npy", i4) + " --input y=" + ynpy);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out, Contains("dtype int32"));
    auto [rc2, out2] = run_cmd(ember + " run " + graph + " --input x=" + ynpy + " --input y=" + ynpy);
    INFO(out2);
    CHECK(rc2 == 3);
    CHECK_THAT(out2, Contains("static shape"));
  }
  SECTION("missing input value") {
    auto [rc, out] = run_cmd(ember + " run " + graph + " --input x=" + xnpy);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out, Contains("no value for input 'y'"));
  }
}
