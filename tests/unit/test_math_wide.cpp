// The math library's AVX-512 copy (interp/math/wide.hpp) gives the bits of
// the build's own width for every function, operand class and array length.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "interp/math/math.hpp"
#include "interp/math/wide.hpp"
#include "test_util.hpp"

namespace {

namespace m = ember::math;

// Operands from every region the functions branch on: specials, subnormals,
// integers and half-integers (gamma's poles, pow's exact paths), small and
// huge magnitudes of either sign, and plain values around 0..10.
std::vector<double> operands(std::mt19937_64& rng, size_t n) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> special = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, inf, -inf,
                                       std::numeric_limits<double>::quiet_NaN(), 4.9e-324, -2.2e-308,
                                       1e-300, 1e300, -1e300, 709.78, -745.1, 36.0, -37.0, 0.6931471805599453};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) {
    switch (rng() % 6) {
      case 0: x[i] = special[rng() % special.size()]; break;
      case 1: x[i] = std::ldexp(u(rng), static_cast<int>(rng() % 2000) - 1000) * (rng() % 2 ? 1 : -1); break;
      case 2: x[i] = static_cast<double>(static_cast<int64_t>(rng() % 41) - 20) / (rng() % 2 ? 1 : 2); break;
      case 3: x[i] = 20 * u(rng) - 10; break;
      case 4: x[i] = u(rng); break;
      default: x[i] = 200 * u(rng); break;
    }
  }
  return x;
}

// y = f(x...) for the first n elements (arity inputs, each of length n).
std::vector<double> run(const m::Entry& e, const std::vector<std::vector<double>>& x, size_t n) {
  std::vector<double> y(n);
  const double* in[3] = {};
  for (size_t a = 0; a < x.size(); ++a) in[a] = x[a].data();
  e(static_cast<int64_t>(n), in, y.data());
  return y;
}

struct Width {  // the wide copy on or off for this scope, whatever EMBER_MATH_WIDE says
  bool was;
  explicit Width(bool wide) : was(m::use_wide(wide)) {}
  ~Width() { m::use_wide(was); }
};

}  // namespace

TEST_CASE("math_wide_copy_gives_the_narrow_bits_for_every_function") {
  if (!m::wide_available()) SKIP("no AVX-512 copy in this build or no AVX-512 on this CPU");
  std::mt19937_64 rng(20261205);
  const size_t n = 4099;  // a tail after the last full batch of either width
  const Width on(true);
  for (const m::Entry& e : m::kEntries) {
    INFO(e.name);
    std::vector<std::vector<double>> x;
    for (int a = 0; a < e.arity; ++a) x.push_back(operands(rng, n));
    std::vector<double> narrow;
    {
      const Width off(false);
      REQUIRE_FALSE(m::wide());
      narrow = run(e, x, n);
    }
    REQUIRE(m::wide());
    for (size_t len : {n, size_t{5}, size_t{9}, size_t{17}}) {
      const std::vector<double> wide = run(e, x, len);
      size_t differ = 0, first = len;
      for (size_t i = 0; i < len; ++i)
        if (std::memcmp(&wide[i], &narrow[i], sizeof(double)) != 0 && differ++ == 0) first = i;
      INFO("length " << len << ": " << differ << " results differ, first at x = "
                     << (first < len ? x[0][first] : 0.0) << " (wide " << (first < len ? wide[first] : 0.0)
                     << ", narrow " << (first < len ? narrow[first] : 0.0) << ")");
      CHECK(differ == 0);
    }
  }
}
