// ns/element of each elementary function of the math library (array entry
// point) against a plain loop over glibc's scalar function.
// Usage: math_bench [n=4096] [reps=9]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "interp/math/math.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  double lo, hi;  // input range (second input uses the same range)
  void (*ours1)(int64_t, const double*, double*);
  void (*ours2)(int64_t, const double*, const double*, double*);
  double (*ref1)(double);
  double (*ref2)(double, double);
};

double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_softplus(double x) {
  return x < -37 ? std::exp(x) : x < 18 ? std::log1p(std::exp(x)) : x < 33.3 ? x + std::exp(-x) : x;
}
double ref_log1mexp(double x) {
  return x < -0.6931471805599453 ? std::log1p(-std::exp(x)) : std::log(-std::expm1(x));
}
double ref_xlogx(double x) { return x == 0 ? 0 : x * std::log(x); }
double ref_xlogy0(double x, double y) { return x == 0 ? 0 : x * std::log(y); }

#define U(f, lo, hi, ref) Case{#f, lo, hi, ember::math::f, nullptr, ref, nullptr}
#define B(f, lo, hi, ref) Case{#f, lo, hi, nullptr, ember::math::f, nullptr, ref}
const Case kCases[] = {
    U(exp, -50, 50, [](double x) { return std::exp(x); }),
    U(exp2, -50, 50, [](double x) { return std::exp2(x); }),
    U(expm1, -5, 5, [](double x) { return std::expm1(x); }),
    U(log, 1e-3, 1e3, [](double x) { return std::log(x); }),
    U(log2, 1e-3, 1e3, [](double x) { return std::log2(x); }),
    U(log10, 1e-3, 1e3, [](double x) { return std::log10(x); }),
    U(log1p, -0.9, 10, [](double x) { return std::log1p(x); }),
    U(sin, -10, 10, [](double x) { return std::sin(x); }),
    U(cos, -10, 10, [](double x) { return std::cos(x); }),
    U(tan, -10, 10, [](double x) { return std::tan(x); }),
    U(asin, -1, 1, [](double x) { return std::asin(x); }),
    U(acos, -1, 1, [](double x) { return std::acos(x); }),
    U(atan, -10, 10, [](double x) { return std::atan(x); }),
    B(atan2, -10, 10, [](double y, double x) { return std::atan2(y, x); }),
    U(sinh, -10, 10, [](double x) { return std::sinh(x); }),
    U(cosh, -10, 10, [](double x) { return std::cosh(x); }),
    U(tanh, -10, 10, [](double x) { return std::tanh(x); }),
    U(asinh, -10, 10, [](double x) { return std::asinh(x); }),
    U(acosh, 1, 10, [](double x) { return std::acosh(x); }),
    U(atanh, -1, 1, [](double x) { return std::atanh(x); }),
    U(sigmoid, -20, 20, ref_sigmoid),
    U(softplus, -40, 40, ref_softplus),
    U(log1mexp, -5, -1e-3, ref_log1mexp),
    B(pow, 0.1, 10, [](double x, double y) { return std::pow(x, y); }),
    U(xlogx, 0, 10, ref_xlogx),
    B(xlogy0, 0.1, 10, ref_xlogy0),
};
#undef U
#undef B

struct Timing {
  double median, min;
};

// ns/element: median and minimum over reps samples (the minimum is the
// better estimate on a loaded machine).
Timing time_ns(int reps, int64_t n, const std::function<void()>& body) {
  std::vector<double> t;
  body();  // warm up
  for (int r = 0; r < reps; ++r) {
    int inner = 0;
    auto t0 = Clock::now(), t1 = t0;
    do {  // at least ~2 ms per sample
      body();
      ++inner;
      t1 = Clock::now();
    } while (t1 - t0 < std::chrono::milliseconds(2));
    t.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / (double(inner) * double(n)));
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  std::mt19937_64 rng(7);
  std::vector<double> a(n), b(n), y(n);
  volatile double sink = 0;
  std::printf("%-9s %17s %17s %8s   (n=%lld, ns/element: median [min] of %d)\n", "function",
              "ember", "glibc scalar", "speedup", static_cast<long long>(n), reps);
  for (const Case& c : kCases) {
    std::uniform_real_distribution<double> u(c.lo, c.hi);
    for (int64_t i = 0; i < n; ++i) a[i] = u(rng), b[i] = u(rng);
    Timing ours = time_ns(reps, n, [&] {
      if (c.ours1) c.ours1(n, a.data(), y.data());
      else c.ours2(n, a.data(), b.data(), y.data());
      sink = sink + y[n / 2];
    });
    Timing ref = time_ns(reps, n, [&] {
      if (c.ref1) for (int64_t i = 0; i < n; ++i) y[i] = c.ref1(a[i]);
      else for (int64_t i = 0; i < n; ++i) y[i] = c.ref2(a[i], b[i]);
      sink = sink + y[n / 2];
    });
    std::printf("%-9s %8.2f [%6.2f] %8.2f [%6.2f] %7.2fx\n", c.name, ours.median, ours.min,
                ref.median, ref.min, ref.min / ours.min);
  }
  return 0;
}
