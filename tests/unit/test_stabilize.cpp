// The stabilization pass (engine/program/passes/stabilize.cpp): which forms
// it rewrites, that the rewritten graph is finite and accurate where the
// original overflows, underflows or cancels, that it stays within a few ulp
// of the original where that one is well conditioned, and that it leaves
// rewrites that would change the output's broadcast pattern alone.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember/ember.hpp"
#include "engine/program/passes/editor.hpp"
#include "engine/program/passes/passes.hpp"
#include "engine/program/program_impl.hpp"
#include "graph_builder.hpp"
#include "pass_harness.hpp"

using namespace ember;
using nlohmann::json;

namespace {

using Builder = test::GraphBuilder;

using Stabilized = test::Rewritten;

// The graph as built and after stabilize + dce, both run without the other passes.
Stabilized stabilized(const Builder& b) { return test::rewritten(b, passes::stabilize); }

using test::count;
using test::run;


// Distance in units in the last place (finite values of one sign, or equal).
int64_t ulps(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return 0;
  if (std::isnan(a) || std::isnan(b) || std::signbit(a) != std::signbit(b)) return INT64_MAX;
  int64_t i, j;
  std::memcpy(&i, &a, 8);
  std::memcpy(&j, &b, 8);
  return i > j ? i - j : j - i;
}

// One input x (shape [n]) through `build`, the single output.
Builder unary(const std::function<int(Builder&, int)>& build) {
  Builder b;
  const int x = b.input("float64", {nullptr}, "x");
  b.outputs = {build(b, x)};
  return b;
}

int one(Builder& b, json shape = {1}) { return b.constant("float64", shape, {1.0}); }

// Checks `after` against exact values `want` at the tail points `xs` to
// `rel` (the original gives inf, nan or a cancelled value there), and
// within `max_ulps` of `before` at the middle points `mid`.
void check_values(const Stabilized& s, const std::vector<double>& xs, const std::vector<double>& want,
                  const std::vector<double>& mid, int64_t max_ulps, double rel = 1e-15) {
  const std::vector<double> got = run(s.after, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("x = " << xs[i] << ": got " << got[i] << ", want " << want[i]);
    REQUIRE(std::isfinite(got[i]) == std::isfinite(want[i]));
    if (std::isfinite(want[i])) CHECK(std::abs(got[i] - want[i]) <= rel * std::abs(want[i]) + 1e-300);
    else CHECK(got[i] == want[i]);
  }
  const std::vector<double> a = run(s.before, mid), b = run(s.after, mid);
  for (size_t i = 0; i < mid.size(); ++i) {
    INFO("x = " << mid[i] << ": before " << a[i] << ", after " << b[i]);
    CHECK(ulps(a[i], b[i]) <= max_ulps);
  }
}

}  // namespace

TEST_CASE("stabilize_log_of_one_plus_or_minus_x_becomes_log1p", "[stabilize]") {
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Builder b = unary([&](Builder& b, int x) {
      const int c = one(b);
      const int u = form == 0   ? b.ew("Add", {c, x}, "float64", {nullptr})
                    : form == 1 ? b.ew("Add", {x, c}, "float64", {nullptr})
                                : b.ew("Sub", {c, x}, "float64", {nullptr});
      return b.ew("Log", {u}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, "Log1p") == 1);
    CHECK(count(s.after, "Log") == 0);
    const double sign = form == 2 ? -1 : 1;
    // log(1 + 1e-20) is 0 in float64; log1p keeps the 1e-20.
    check_values(s, {1e-20, -1e-20}, {sign * 1e-20, -sign * 1e-20}, {0.5, 0.25, -0.75, 3, 1e5}, 1);
  }
}

TEST_CASE("stabilize_exp_minus_one_becomes_expm1", "[stabilize]") {
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Builder b = unary([&](Builder& b, int x) {
      const int ex = b.ew("Exp", {x}, "float64", {nullptr});
      if (form == 0) return b.ew("Sub", {ex, one(b)}, "float64", {nullptr});
      const int m1 = b.constant("float64", {1}, {-1.0});
      return form == 1 ? b.ew("Add", {m1, ex}, "float64", {nullptr}) : b.ew("Add", {ex, m1}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, "Expm1") == 1);
    CHECK(count(s.after, "Exp") == 0);
    check_values(s, {1e-20, -1e-30}, {1e-20, -1e-30}, {0.5, -0.75, 3, 40, -40, 700}, 1);
  }
}

TEST_CASE("stabilize_log_sigmoid_becomes_negated_softplus", "[stabilize]") {
  // log(sigmoid(x)) = -softplus(-x), computed here as min(x, 0) - log1p(exp(-|x|)).
  auto log_sigmoid = [](double x) { return std::min(x, 0.0) - std::log1p(std::exp(-std::abs(x))); };
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Builder b = unary([&](Builder& b, int x) {
      const int sg = b.ew("Sigmoid", {x}, "float64", {nullptr});
      if (form == 0) return b.ew("Log", {sg}, "float64", {nullptr});
      if (form == 1) return b.ew("Log", {b.ew("Sub", {one(b), sg}, "float64", {nullptr})}, "float64", {nullptr});
      return b.ew("Log1p", {b.ew("Neg", {sg}, "float64", {nullptr})}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites >= 1);
    CHECK(count(s.after, "Softplus") == 1);
    CHECK(count(s.after, "Sigmoid") == 0);
    CHECK(count(s.after, "Log") + count(s.after, "Log1p") == 0);
    // Forms 1 and 2 are log(1 - sigmoid(x)) = log(sigmoid(-x)).
    const double sign = form == 0 ? 1 : -1;
    std::vector<double> xs = {-800, -40, -3, 3, 40, 800}, want;
    for (double x : xs) want.push_back(log_sigmoid(sign * x));
    // The original is -inf (or 0 where the true value is -4e-18) in the tails,
    // and is well conditioned only where the log's argument is well below 1.
    check_values(s, xs, want, {-3 * sign, -0.5 * sign, 0}, 4);
  }
}

TEST_CASE("stabilize_log_one_minus_exp_becomes_log1mexp", "[stabilize]") {
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Builder b = unary([&](Builder& b, int x) {
      if (form == 2) {  // log(-expm1(x))
        const int em1 = b.ew("Expm1", {x}, "float64", {nullptr});
        return b.ew("Log", {b.ew("Neg", {em1}, "float64", {nullptr})}, "float64", {nullptr});
      }
      const int ex = b.ew("Exp", {x}, "float64", {nullptr});
      if (form == 0) return b.ew("Log", {b.ew("Sub", {one(b), ex}, "float64", {nullptr})}, "float64", {nullptr});
      return b.ew("Log1p", {b.ew("Neg", {ex}, "float64", {nullptr})}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, "Log1mexp") == 1);
    CHECK(count(s.after, "Log") + count(s.after, "Log1p") + count(s.after, "Exp") == 0);
    // log(1 - exp(-1e-20)) = log(1e-20); log(1 - exp(-40)) = -exp(-40).
    check_values(s, {-1e-20, -40, -800}, {std::log(1e-20), -std::exp(-40.0), -0.0}, {-0.5, -0.75, -3}, 4);
  }
}

TEST_CASE("stabilize_log1p_of_exp_becomes_softplus", "[stabilize]") {
  for (int form = 0; form < 2; ++form) {
    Builder b = unary([&](Builder& b, int x) {
      const int ex = b.ew("Exp", {x}, "float64", {nullptr});
      if (form == 0) return b.ew("Log1p", {ex}, "float64", {nullptr});
      return b.ew("Log", {b.ew("Add", {one(b), ex}, "float64", {nullptr})}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(count(s.after, "Softplus") == 1);
    CHECK(count(s.after, "Exp") == 0);
    // log(1 + exp(x)) rounds 1 + exp(x): compared with it only where the result is not small.
    check_values(s, {800, -800, -3}, {800, 0, std::log1p(std::exp(-3.0))}, {0, 0.5, 3, 30}, 4);
  }
}

TEST_CASE("stabilize_log_erfc_is_finite_and_accurate_in_both_tails", "[stabilize]") {
  Builder b = unary([](Builder& b, int x) {
    return b.ew("Log", {b.ew("Erfc", {x}, "float64", {nullptr})}, "float64", {nullptr});
  });
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 1);
  CHECK(count(s.after, "Erfcx") == 1);
  // log(erfc(x)) to 20 digits (mpmath).
  const std::vector<double> xs = {-800, -40, -1, 0, 0.5, 1, 5, 26, 27, 40, 800};
  const std::vector<double> want = {0.69314718055994530942,  0.69314718055994530942, 0.61123231767807049464,
                                    0.0,                     -0.73501112983708440303, -1.8496055099332482486,
                                    -27.200889545537434422,  -679.83119976319423026,  -732.86888650789741098,
                                    -1604.2615566532735557,  -640007.2569774518411};
  // erfc(27) and erfc(40) underflow: the original is -inf there.
  CHECK(std::isinf(run(s.before, {40})[0]));
  // Near 0 both forms are a log of nearly 1; the middle is compared where not.
  check_values(s, xs, want, {-3, -0.5, -1e-3, 0.25, 2, 6, 20}, 8, 4e-15);
  CHECK(std::isnan(run(s.after, {NAN})[0]));
  CHECK(run(s.after, {INFINITY})[0] == -INFINITY);
  CHECK(run(s.after, {-INFINITY})[0] == std::log(2.0));
}

TEST_CASE("stabilize_log_of_a_sum_of_two_exps_is_finite_in_both_tails", "[stabilize]") {
  Builder b;
  const int x = b.input("float64", {nullptr}, "x"), y = b.input("float64", {nullptr}, "y");
  const int ex = b.ew("Exp", {x}, "float64", {nullptr}), ey = b.ew("Exp", {y}, "float64", {nullptr});
  b.outputs = {b.ew("Log", {b.ew("Add", {ex, ey}, "float64", {nullptr})}, "float64", {nullptr})};
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 1);
  CHECK(count(s.after, "Exp") == 2);  // of x - m and y - m
  const std::vector<double> got =
      run(s.after, {-800, 800, 0, 3, -INFINITY, INFINITY, -INFINITY}, {-801, 799, 0, -2, -INFINITY, INFINITY, 5});
  const std::vector<double> want = {-799.68673831248177717, 800.31326168751822283, 0.69314718055994530942,
                                    3.0067153484891180686, -INFINITY, INFINITY, 5};
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(i << ": " << got[i] << " vs " << want[i]);
    if (std::isinf(want[i])) CHECK(got[i] == want[i]);
    else CHECK(std::abs(got[i] - want[i]) <= 4e-16 * std::abs(want[i]) + 1e-300);
  }
  const std::vector<double> mx = {-1, 0.5, 2, 10}, my = {0.25, -3, 2.5, 9};
  const std::vector<double> a = run(s.before, mx, my), c = run(s.after, mx, my);
  for (size_t i = 0; i < a.size(); ++i) CHECK(ulps(a[i], c[i]) <= 4);
}

TEST_CASE("stabilize_log_of_a_difference_of_two_exps_becomes_log1mexp", "[stabilize]") {
  Builder b;
  const int x = b.input("float64", {nullptr}, "x"), y = b.input("float64", {nullptr}, "y");
  const int ex = b.ew("Exp", {x}, "float64", {nullptr}), ey = b.ew("Exp", {y}, "float64", {nullptr});
  b.outputs = {b.ew("Log", {b.ew("Sub", {ex, ey}, "float64", {nullptr})}, "float64", {nullptr})};
  const Stabilized s = stabilized(b);
  CHECK(count(s.after, "Log1mexp") == 1);
  const std::vector<double> got = run(s.after, {-800, 800, 3, -INFINITY, 2, 1}, {-801, 799, -2, -INFINITY, -INFINITY, 1});
  const std::vector<double> want = {-800.45867514538708189, 799.54132485461291811, 2.9932392505505114422,
                                    -INFINITY, 2, -INFINITY};
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(i << ": " << got[i] << " vs " << want[i]);
    if (std::isinf(want[i])) CHECK(got[i] == want[i]);
    else CHECK(std::abs(got[i] - want[i]) <= 4e-16 * std::abs(want[i]));
  }
  CHECK(std::isnan(run(s.after, {0}, {1})[0]));  // log of a negative number
}

TEST_CASE("stabilize_one_minus_erf_and_sigmoid_use_the_complementary_op", "[stabilize]") {
  struct Case {
    const char *inner, *op;  // op(inner(x)) with op "Sub1" (1 - .), "Add1" (1 + .), "Subm1" (. - 1)
    const char* becomes;
    double x, want;
  };
  const std::vector<Case> cases = {
      {"Erf", "Sub1", "Erfc", 10, 2.0884875837625447570e-45},
      {"Erf", "Add1", "Erfc", -10, 2.0884875837625447570e-45},
      {"Erf", "Subm1", "Erfc", 10, -2.0884875837625447570e-45},
      {"Erfc", "Sub1", "Erf", 1e-20, 1.1283791670955125739e-20},
      {"Erfc", "Subm1", "Erf", 1e-20, -1.1283791670955125739e-20},
      {"Sigmoid", "Sub1", "Sigmoid", 40, 4.2483542552915889948e-18},
  };
  for (const Case& c : cases) {
    INFO(c.op << " " << c.inner);
    Builder b = unary([&](Builder& b, int x) {
      const int f = b.ew(c.inner, {x}, "float64", {nullptr});
      if (!std::strcmp(c.op, "Sub1")) return b.ew("Sub", {one(b), f}, "float64", {nullptr});
      if (!std::strcmp(c.op, "Add1")) return b.ew("Add", {f, one(b)}, "float64", {nullptr});
      return b.ew("Sub", {f, one(b)}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, c.becomes) == 1);
    CHECK(count(s.after, "Sub") + count(s.after, "Add") == 0);
    // (Away from 0 the original 1 - erf(x) is itself off by many ulp.)
    check_values(s, {c.x}, {c.want}, {0.5, -0.25}, 4, 1e-14);
  }
}

TEST_CASE("stabilize_keeps_sigmoids_derivative_form_with_its_one_sigmoid", "[stabilize]") {
  // z * (1 - z), z = sigmoid(x): PyTensor's derivative form stays; a second
  // sigmoid would cost an exp. The same 1 - z times something else goes.
  for (const bool times_z : {true, false}) {
    INFO("times z: " << times_z);
    Builder b = unary([&](Builder& b, int x) {
      const int z = b.ew("Sigmoid", {x}, "float64", {nullptr});
      const int c = b.ew("Sub", {one(b), z}, "float64", {nullptr});
      return b.ew("Mul", {times_z ? z : x, c}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == (times_z ? 0 : 1));
    CHECK(count(s.after, "Sigmoid") == 1);
  }
}

TEST_CASE("stabilize_log_sum_exp_subtracts_the_max", "[stabilize]") {
  // A naive logsumexp over one axis of a (2, 3) matrix whose first row is
  // below exp's range: log(0) = -inf before, finite after.
  Builder b;
  const int x = b.input("float64", {2, 3}, "x");
  const int ex = b.ew("Exp", {x}, "float64", {2, 3});
  const int sum = b.node("Sum", {ex}, "float64", {2}, {{"axis", {1}}});
  b.outputs = {b.ew("Log", {sum}, "float64", {2})};
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 1);
  CHECK(count(s.after, "Max") == 1);
  Array in = Array::of<double>(Shape{2, {2, 3}}, {-800.0, -801.0, -802.0, 0.5, -1.0, 2.0});
  std::vector<Tensor> t{in.t};
  const auto before = s.before->call(std::span<const Tensor>(t.data(), 1));
  const auto after = s.after->call(std::span<const Tensor>(t.data(), 1));
  CHECK(before[0].t.at<double>(0) == -INFINITY);
  CHECK(after[0].t.at<double>(0) == Approx(-800.0 + std::log(1 + std::exp(-1.0) + std::exp(-2.0))).epsilon(1e-15));
  CHECK(ulps(after[0].t.at<double>(1), before[0].t.at<double>(1)) <= 4);
}

TEST_CASE("stabilize_one_over_one_plus_exp_becomes_sigmoid", "[stabilize]") {
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Builder b = unary([&](Builder& b, int x) {
      const int ex = b.ew("Exp", {x}, "float64", {nullptr});
      const int den = b.ew("Add", {one(b), ex}, "float64", {nullptr});
      if (form == 0) return b.ew("Reciprocal", {den}, "float64", {nullptr});
      if (form == 1) return b.ew("TrueDiv", {one(b), den}, "float64", {nullptr});
      return b.ew("TrueDiv", {b.ew("Exp", {x}, "float64", {nullptr}), den}, "float64", {nullptr});
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, "Sigmoid") == 1);
    CHECK(count(s.after, "Exp") == 0);
    const double sign = form == 2 ? 1 : -1;  // 1 / (1 + exp(x)) = sigmoid(-x)
    // exp(800) is inf: the original gives 0 (forms 0, 1) or nan (form 2).
    check_values(s, {800 * sign, -800 * sign}, {1, 0}, {-3, 0, 0.5, 3}, 4);
  }
}

TEST_CASE("stabilize_log_softmax_becomes_log_softmax_op", "[stabilize]") {
  Builder b = unary([](Builder& b, int x) {
    const int sm = b.node("Softmax", {x}, "float64", {nullptr}, {{"axis", 0}});
    return b.ew("Log", {sm}, "float64", {nullptr});
  });
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 1);
  CHECK(count(s.after, "LogSoftmax") == 1);
  CHECK(count(s.after, "Softmax") == 0);
  const std::vector<double> got = run(s.after, {0, 800, -800});
  CHECK(got[0] == -800);
  CHECK(got[1] == 0);
  CHECK(got[2] == -1600);
  CHECK(std::isinf(run(s.before, {0, 800, -800})[0]));
}

// exp(x) / sum(exp(x)): the simplex transform's backward, whose entries
// underflow to 0 where their logs (a Dirichlet's, a Categorical's) are finite.
int normalized_exp(Builder& b, int x) {
  const int ex = b.ew("Exp", {x}, "float64", {nullptr});
  const int sum = b.node("Sum", {ex}, "float64", json::array(), {{"axis", nullptr}});
  const int den = b.node("DimShuffle", {sum}, "float64", {1}, {{"new_order", {"x"}}});
  return b.ew("TrueDiv", {ex, den}, "float64", {nullptr});
}

TEST_CASE("stabilize_log_of_exp_over_y_becomes_x_minus_log_y", "[stabilize]") {
  Builder b = unary([](Builder& b, int x) { return b.ew("Log", {normalized_exp(b, x)}, "float64", {nullptr}); });
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 1);
  CHECK(count(s.after, "TrueDiv") == 0);
  CHECK(count(s.after, "Sub") == 1);
  // exp(-800) is 0: the original's log is -inf.
  const std::vector<double> x{0, -800, -1};
  CHECK(std::isinf(run(s.before, x)[1]));
  const double lse = std::log1p(std::exp(-1.0));
  const std::vector<double> got = run(s.after, x);
  CHECK(got[0] == -lse);
  CHECK(got[1] == -800 - lse);
  CHECK(got[2] == -1 - lse);
  const std::vector<double> mid{0.5, -1.5, 2, 0.25}, a = run(s.before, mid), c = run(s.after, mid);
  for (size_t i = 0; i < mid.size(); ++i) CHECK(ulps(a[i], c[i]) <= 4);
}

TEST_CASE("stabilize_lifts_indexing_between_a_log_and_a_normalized_exponential", "[stabilize]") {
  // log(expand_dims(q[idx])) -> expand_dims(log(q)[idx]), as PyTensor lifts
  // them between log and a softmax; a log of other indexed values stays.
  for (int form = 0; form < 2; ++form) {
    INFO("form " << form);
    Builder b = unary([&](Builder& b, int x) {
      const int q = form == 0 ? normalized_exp(b, x) : b.ew("Exp", {x}, "float64", {nullptr});
      const int idx = b.constant("int64", {2}, {1, 0});
      const int sel = b.node("AdvancedSubtensor1", {q, idx}, "float64", {2});
      const int row = b.node("DimShuffle", {sel}, "float64", {1, 2}, {{"new_order", {"x", 0}}});
      return b.ew("Log", {row}, "float64", {1, 2});
    });
    const Stabilized s = stabilized(b);
    if (form == 1) {  // log(exp(x)) is stable only unindexed: not lifted (its cost would grow)
      CHECK(s.rewrites == 0);
      continue;
    }
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, "TrueDiv") == 0);
    CHECK(count(s.after, "AdvancedSubtensor1") == 1);
    CHECK(count(s.after, "DimShuffle") == 2);
    const std::vector<double> x{0, -800, -1};
    CHECK(std::isinf(run(s.before, x)[0]));
    const double lse = std::log1p(std::exp(-1.0));
    const std::vector<double> got = run(s.after, x);
    REQUIRE(got.size() == 2);
    CHECK(got[0] == -800 - lse);
    CHECK(got[1] == -lse);
  }
}

TEST_CASE("stabilize_leaves_rewrites_that_would_change_the_output_shape", "[stabilize]") {
  // The 1 is what gives log(1 + x) its length 3: log1p(x) would have length 1.
  Builder b;
  const int x = b.input("float64", {1}, "x");
  const int c = b.constant("float64", {3}, {1.0, 1.0, 1.0});
  const int ex = b.ew("Exp", {x}, "float64", {1});
  b.outputs = {b.ew("Log", {b.ew("Add", {c, x}, "float64", {3})}, "float64", {3}),
               b.ew("Sub", {ex, c}, "float64", {3}), b.ew("Log", {b.ew("Sub", {c, ex}, "float64", {3})}, "float64", {3})};
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 0);
  CHECK(count(s.after, "Log1p") + count(s.after, "Expm1") + count(s.after, "Log1mexp") == 0);

  // A broadcast 1 (static shape [1, 1]) against x of shape [2, n] is rewritten.
  Builder b2;
  const int x2 = b2.input("float64", {2, nullptr}, "x");
  const int c2 = b2.constant("float64", {1, 1}, {1.0});
  b2.outputs = {b2.ew("Log", {b2.ew("Add", {x2, c2}, "float64", {2, nullptr})}, "float64", {2, nullptr})};
  const Stabilized s2 = stabilized(b2);
  CHECK(s2.rewrites == 1);
  CHECK(count(s2.after, "Log1p") == 1);
  CHECK(s2.after->graph().vars[s2.after->graph().outputs[0]].static_shape.dims[0] == 2);
}

TEST_CASE("stabilize_leaves_other_constants_and_forms_alone", "[stabilize]") {
  Builder b = unary([](Builder& b, int x) {
    const int two = b.constant("float64", {1}, {2.0});
    const int l = b.ew("Log", {b.ew("Add", {two, x}, "float64", {nullptr})}, "float64", {nullptr});  // log(2 + x)
    const int ex = b.ew("Exp", {x}, "float64", {nullptr});
    const int d = b.ew("Sub", {one(b), ex}, "float64", {nullptr});  // 1 - exp(x), not under a log
    const int q = b.ew("Log", {b.ew("Sub", {x, one(b)}, "float64", {nullptr})}, "float64", {nullptr});  // log(x - 1)
    return b.ew("Add", {b.ew("Add", {l, d}, "float64", {nullptr}), q}, "float64", {nullptr});
  });
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 0);
}

TEST_CASE("stabilize_keeps_a_graph_output_s_variable", "[stabilize]") {
  Builder b;
  const int x = b.input("float64", {nullptr}, "x");
  const int u = b.ew("Add", {one(b), x}, "float64", {nullptr});
  const int l = b.ew("Log", {u}, "float64", {nullptr});
  b.vars[l]["name"] = "logp";
  b.outputs = {l, u};
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 1);
  CHECK(s.after->graph().outputs[0] == l);
  CHECK(s.after->graph().vars[l].name == "logp");
  CHECK(count(s.after, "Add") == 1);  // 1 + x is still an output
  CHECK(run(s.after, {1e-20})[0] == 1e-20);
}

TEST_CASE("stabilize_sinks_a_product_into_the_nonzero_branch_of_a_switch", "[stabilize]") {
  for (int branch = 0; branch < 2; ++branch) {
    INFO("zero in branch " << branch);
    Builder b = unary([&](Builder& b, int x) {
      const int zero = b.constant("float64", {1}, {0.0});
      const int pos = b.ew("GT", {x, zero}, "bool", {nullptr});
      const int sw = branch == 0 ? b.ew("Switch", {pos, zero, x}, "float64", {nullptr})
                                 : b.ew("Switch", {pos, x, zero}, "float64", {nullptr});
      const int a = b.ew("Exp", {b.ew("Mul", {x, x}, "float64", {nullptr})}, "float64", {nullptr});
      return b.ew("Mul", {a, sw}, "float64", {nullptr});  // exp(x^2) overflows where the switch gives 0
    });
    const Stabilized s = stabilized(b);
    CHECK(s.rewrites == 1);
    CHECK(count(s.after, "Switch") == 1);
    CHECK(count(s.after, "Mul") == 2);
    const double tail = branch == 0 ? 800 : -800;
    CHECK(std::isnan(run(s.before, {tail})[0]));
    check_values(s, {tail}, {0}, {-1.5, -0.5, 0, 0.5, 1.5}, 0);
  }
}

TEST_CASE("stabilize_sinks_a_negation_and_what_follows_it_into_the_nonzero_branch_of_a_switch", "[stabilize]") {
  // A gradient's -switch(c, g, 0) / u * v: the switch moves out through all three.
  Builder b = unary([&](Builder& b, int x) {
    const int zero = b.constant("float64", {1}, {0.0});
    const int pos = b.ew("GT", {x, zero}, "bool", {nullptr});
    const int sw = b.ew("Switch", {pos, x, zero}, "float64", {nullptr});
    const int ng = b.ew("Neg", {sw}, "float64", {nullptr});
    const int u = b.ew("Exp", {b.ew("Neg", {b.ew("Mul", {x, x}, "float64", {nullptr})}, "float64", {nullptr})},
                       "float64", {nullptr});  // exp(-x^2) underflows to 0 in the tails
    const int q = b.ew("TrueDiv", {ng, u}, "float64", {nullptr});
    return b.ew("Mul", {q, b.ew("Exp", {x}, "float64", {nullptr})}, "float64", {nullptr});
  });
  const Stabilized s = stabilized(b);
  CHECK(s.rewrites == 3);
  CHECK(count(s.after, "Switch") == 1);
  // Where the switch gives 0: 0 / 0 was nan, and -0 became +0.
  CHECK(std::isnan(run(s.before, {-800})[0]));
  CHECK(run(s.after, {-800})[0] == 0.0);
  CHECK(!std::signbit(run(s.after, {-800})[0]));
  check_values(s, {-800}, {0}, {-1.5, -0.5, 0.5, 1.5}, 0);
}
