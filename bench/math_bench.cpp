// ns/element of the math library's functions: the array entry point (vector
// path), one element at a time through the batch function on a broadcast
// value (the VM's scalar path, MathFn::one in interp/vm.cpp), and a plain loop
// over glibc's scalar function where glibc has one.
// Usage: math_bench [n=4096] [reps=9] [case-name-prefix ...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "interp/math/math.hpp"
#include "interp/math/simd.hpp"
#include "interp/math/special.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using ember::math::simd::D;
namespace ms = ember::math::simd;

// Input distribution: uniform on [lo, hi], log-uniform if log, rounded to a
// multiple of `step` if step > 0.
struct Dist {
  double lo, hi;
  bool log = false;
  double step = 0;
};

struct Case {
  const char* name;
  int arity;
  Dist d[3];
  void (*a1)(int64_t, const double*, double*);
  void (*a2)(int64_t, const double*, const double*, double*);
  void (*a3)(int64_t, const double*, const double*, const double*, double*);
  double (*one)(const double*);  // scalar path
  double (*ref)(const double*);  // glibc, or null
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

#define ONE1(f) [](const double* x) { return ms::f(D(x[0])).get(0); }
#define ONE2(f) [](const double* x) { return ms::f(D(x[0]), D(x[1])).get(0); }
#define ONE3(f) [](const double* x) { return ms::f(D(x[0]), D(x[1]), D(x[2])).get(0); }
#define R1(expr) [](const double* p) { double x = p[0]; return expr; }
#define R2(expr) [](const double* p) { double x = p[0], y = p[1]; return expr; }
#define U(name, f, dist, ref) Case{name, 1, {dist}, ember::math::f, nullptr, nullptr, ONE1(f), ref}
#define B(name, f, d0, d1, ref) Case{name, 2, {d0, d1}, nullptr, ember::math::f, nullptr, ONE2(f), ref}
#define T3(name, f, d0, d1, d2) Case{name, 3, {d0, d1, d2}, nullptr, nullptr, ember::math::f, ONE3(f), nullptr}
#define NOREF nullptr
const Case kCases[] = {
    U("exp", exp, (Dist{-50, 50}), R1(std::exp(x))),
    U("exp2", exp2, (Dist{-50, 50}), R1(std::exp2(x))),
    U("expm1", expm1, (Dist{-5, 5}), R1(std::expm1(x))),
    U("log", log, (Dist{1e-3, 1e3}), R1(std::log(x))),
    U("log:near1", log, (Dist{0.9, 1.1}), R1(std::log(x))),
    U("log2", log2, (Dist{1e-3, 1e3}), R1(std::log2(x))),
    U("log10", log10, (Dist{1e-3, 1e3}), R1(std::log10(x))),
    U("log1p", log1p, (Dist{-0.9, 10}), R1(std::log1p(x))),
    U("log1p:small", log1p, (Dist{-0.2, 0.2}), R1(std::log1p(x))),
    U("sin", sin, (Dist{-10, 10}), R1(std::sin(x))),
    U("cos", cos, (Dist{-10, 10}), R1(std::cos(x))),
    U("tan", tan, (Dist{-10, 10}), R1(std::tan(x))),
    U("asin", asin, (Dist{-1, 1}), R1(std::asin(x))),
    U("acos", acos, (Dist{-1, 1}), R1(std::acos(x))),
    U("atan", atan, (Dist{-10, 10}), R1(std::atan(x))),
    B("atan2", atan2, (Dist{-10, 10}), (Dist{-10, 10}), R2(std::atan2(x, y))),
    U("sinh", sinh, (Dist{-10, 10}), R1(std::sinh(x))),
    U("cosh", cosh, (Dist{-10, 10}), R1(std::cosh(x))),
    U("tanh", tanh, (Dist{-10, 10}), R1(std::tanh(x))),
    U("asinh", asinh, (Dist{-10, 10}), R1(std::asinh(x))),
    U("acosh", acosh, (Dist{1, 10}), R1(std::acosh(x))),
    U("atanh", atanh, (Dist{-1, 1}), R1(std::atanh(x))),
    U("sigmoid", sigmoid, (Dist{-20, 20}), R1(ref_sigmoid(x))),
    U("softplus", softplus, (Dist{-40, 40}), R1(ref_softplus(x))),
    U("softplus:mid", softplus, (Dist{-5, 5}), R1(ref_softplus(x))),
    U("log1mexp", log1mexp, (Dist{-5, -1e-3}), R1(ref_log1mexp(x))),
    B("pow", pow, (Dist{0.1, 10}), (Dist{0.1, 10}), R2(std::pow(x, y))),
    B("pow:int", pow, (Dist{0.1, 10}), (Dist{-6, 6, false, 1}), R2(std::pow(x, y))),
    B("pow:half", pow, (Dist{0.1, 10}), (Dist{-6, 6, false, 0.5}), R2(std::pow(x, y))),
    B("pow:y=2", pow, (Dist{0.1, 10}), (Dist{2, 2}), R2(std::pow(x, y))),
    B("pow:y=3", pow, (Dist{0.1, 10}), (Dist{3, 3}), R2(std::pow(x, y))),
    U("xlogx", xlogx, (Dist{0, 10}), R1(ref_xlogx(x))),
    B("xlogy0", xlogy0, (Dist{0.1, 10}), (Dist{0.1, 10}), R2(ref_xlogy0(x, y))),
    U("erf", erf, (Dist{-3, 3}), R1(std::erf(x))),
    U("erfc", erfc, (Dist{-3, 10}), R1(std::erfc(x))),
    U("erfcx", erfcx, (Dist{-3, 10}), NOREF),
    U("erfinv", erfinv, (Dist{-1, 1}), NOREF),
    U("tgamma", tgamma, (Dist{0.1, 20}), R1(std::tgamma(x))),
    U("lgamma", lgamma, (Dist{0.1, 20}), R1(std::lgamma(x))),
    U("lgamma:big", lgamma, (Dist{10, 1e4, true}), R1(std::lgamma(x))),
    U("lgamma:neg", lgamma, (Dist{-20, 0}), R1(std::lgamma(x))),
    U("digamma", digamma, (Dist{0.1, 20}), NOREF),
    U("digamma:big", digamma, (Dist{10, 1e4, true}), NOREF),
    U("digamma:neg", digamma, (Dist{-20, 0}), NOREF),
    U("trigamma", trigamma, (Dist{0.1, 20}), NOREF),
    B("gammainc", gammainc, (Dist{0.1, 20}), (Dist{0.1, 20}), NOREF),
    B("gammaincc", gammaincc, (Dist{0.1, 20}), (Dist{0.1, 20}), NOREF),
    T3("betainc", betainc, (Dist{0.5, 20}), (Dist{0.5, 20}), (Dist{0, 1})),
    U("i0", i0, (Dist{-20, 20}), NOREF),
    U("j0", j0, (Dist{-20, 20}), R1(::j0(x))),
};
#undef U
#undef B
#undef T3

struct Timing {
  double median, min;
};

// ns/element: median and minimum over reps samples.
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

bool selected(const char* name, int argc, char** argv) {
  if (argc <= 3) return true;
  for (int i = 3; i < argc; ++i)
    if (std::strncmp(name, argv[i], std::strlen(argv[i])) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  std::mt19937_64 rng(7);
  std::vector<double> in[3] = {std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  std::vector<double> y(n);
  volatile double sink = 0;
  std::printf("%-13s %17s %17s %17s   (n=%lld, ns/element: median [min] of %d)\n", "function",
              "ember vector", "ember scalar", "glibc scalar", static_cast<long long>(n), reps);
  for (const Case& c : kCases) {
    if (!selected(c.name, argc, argv)) continue;
    for (int k = 0; k < c.arity; ++k) {
      const Dist& d = c.d[k];
      std::uniform_real_distribution<double> u(d.log ? std::log(d.lo) : d.lo, d.log ? std::log(d.hi) : d.hi);
      for (int64_t i = 0; i < n; ++i) {
        double v = d.log ? std::exp(u(rng)) : u(rng);
        in[k][i] = d.step > 0 ? std::round(v / d.step) * d.step : v;
      }
    }
    const double *a = in[0].data(), *b = in[1].data(), *cc = in[2].data();
    Timing vec = time_ns(reps, n, [&] {
      if (c.a1) c.a1(n, a, y.data());
      else if (c.a2) c.a2(n, a, b, y.data());
      else c.a3(n, a, b, cc, y.data());
      sink = sink + y[n / 2];
    });
    Timing one = time_ns(reps, n, [&] {
      double args[3];
      for (int64_t i = 0; i < n; ++i) {
        args[0] = a[i], args[1] = b[i], args[2] = cc[i];
        y[i] = c.one(args);
      }
      sink = sink + y[n / 2];
    });
    std::printf("%-13s %8.2f [%6.2f] %8.2f [%6.2f]", c.name, vec.median, vec.min, one.median, one.min);
    if (c.ref) {
      Timing ref = time_ns(reps, n, [&] {
        double args[3];
        for (int64_t i = 0; i < n; ++i) {
          args[0] = a[i], args[1] = b[i];
          y[i] = c.ref(args);
        }
        sink = sink + y[n / 2];
      });
      std::printf(" %8.2f [%6.2f]", ref.median, ref.min);
    }
    std::printf("\n");
  }
  return 0;
}
