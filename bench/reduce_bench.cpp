// Sum throughput: ns per element of a float64 Sum (all axes, axis 0 and
// axis 1 of a matrix) at 1 and 2 threads, next to a plain sequential loop.
// Medians of runs; prints whether the bits agree across thread counts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <tbb/global_control.h>

#include "ember/ember.hpp"

using namespace ember;
using clock_type = std::chrono::steady_clock;

namespace {

std::string sum_graph(const std::string& in_shape, const std::string& out_shape, const std::string& axis) {
  return R"({"format": "ember-graph", "version": 1, "variables": [{"dtype": "float64", "shape": )" + in_shape +
         R"(}, {"dtype": "float64", "shape": )" + out_shape + R"(}], "inputs": [0], "outputs": [1],
         "nodes": [{"op": "Sum", "inputs": [0], "outputs": [1], "attrs": {"axis": )" + axis + "}}]}";
}

template <class F>
double median_ns(F&& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto a = clock_type::now();
    f();
    t.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  const int64_t n = 10'000'000, rows = 10'000, cols = 1'000;
  Array x = Array::empty(DType::Float64, Shape{1, {n}});
  for (int64_t i = 0; i < n; ++i) x.data<double>()[i] = static_cast<double>(i % 1013) * 1e-3 - 0.5;
  Tensor m = x.t;
  m.shape = Shape{2, {rows, cols}};
  m.strides[0] = cols;
  m.strides[1] = 1;
  struct Case {
    const char* name;
    std::shared_ptr<const Program> p;
    Tensor arg;
  };
  Case cases[] = {{"sum all 1e7", Program::from_json(sum_graph("[null]", "[]", "null")), x.t},
                  {"sum axis 0 of 1e4x1e3", Program::from_json(sum_graph("[null, null]", "[null]", "[0]")), m},
                  {"sum axis 1 of 1e4x1e3", Program::from_json(sum_graph("[null, null]", "[null]", "[1]")), m}};
  volatile double sink = 0;
  const double loop = median_ns(
      [&] {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += x.data<double>()[i];
        sink = s;
      },
      7);
  std::printf("plain sequential loop          %.3f ns/element\n", loop / n);
  for (Case& c : cases) {
    auto ws = c.p->make_workspace();
    double ns[2];
    uint64_t first_bits[2];
    for (int th = 1; th <= 2; ++th) {
      tbb::global_control gc(tbb::global_control::max_allowed_parallelism, th);
      c.p->run(*ws, {&c.arg, 1});
      ns[th - 1] = median_ns([&] { c.p->run(*ws, {&c.arg, 1}); }, 9);
      const Tensor& out = c.p->run(*ws, {&c.arg, 1})[0];
      std::memcpy(&first_bits[th - 1], out.data, 8);
    }
    std::printf("%-30s 1 thread %.3f ns/element, 2 threads %.3f ns/element, bits %s\n", c.name, ns[0] / n,
                ns[1] / n, first_bits[0] == first_bits[1] ? "equal" : "DIFFER");
  }
  (void)sink;
}
