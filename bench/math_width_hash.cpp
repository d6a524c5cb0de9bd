// Prints one hash per math function over 200001 mixed inputs, then over the
// same inputs sorted (whole batches inside one branch region: functions that
// skip a region no lane of a batch is in take other paths). Build with
// different EMBER_ARCH values (x86-64-v2: 2 lanes, v3: 4, v4: 8) and diff the
// outputs: the library promises identical bits at every batch width.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "interp/math/math.hpp"

int main() {
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(0, 1);
  const int64_t n = 200001;
  std::vector<double> a(n), b(n), c(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = u(g) < 0.5 ? (u(g) - 0.5) * 40 : std::copysign(std::pow(10.0, (u(g) - 0.5) * 600), u(g) - 0.5);
    b[i] = i % 7 ? (u(g) - 0.5) * 20 : std::floor((u(g) - 0.5) * 20);
    c[i] = u(g);
    if (i % 11 == 0) a[i] = std::fabs(a[i]);
  }
  auto hash = [&] {
    uint64_t s = 1469598103934665603ull;
    for (double v : y) {
      uint64_t x;
      std::memcpy(&x, &v, 8);
      if (v != v) x = 0x7ff8;  // NaN payloads are not part of the promise
      s = (s ^ x) * 1099511628211ull;
    }
    return static_cast<unsigned long long>(s);
  };
  for (const char* order : {"mixed", "sorted"}) {
    if (order[0] == 's') {
      std::sort(a.begin(), a.end());
      std::sort(c.begin(), c.end());
    }
    for (const ember::math::Entry& e : ember::math::kEntries) {
      const double* ab[3] = {a.data(), b.data(), nullptr};
      const double* ccc[3] = {c.data(), c.data(), c.data()};
      e(n, e.f3 ? ccc : ab, y.data());
      std::printf("%-10s %-6s %016llx\n", std::string(e.name).c_str(), order, hash());
    }
  }
  return 0;
}
