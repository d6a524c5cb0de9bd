// Helpers for the JIT tests: special-value inputs and a bitwise comparison
// of kernel outputs (NaN compared as a class).
#pragma once
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "interp/composite.hpp"
#include "interp/kernel.hpp"

namespace ember::test {

inline std::vector<double> special_doubles() {
  const double inf = std::numeric_limits<double>::infinity();
  return {NAN, -NAN, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.0, 7.25,
          1e308, -1e308, 1e-308, 5e-324, -5e-324, 2.2250738585072014e-308, 1e10, -3e15,
          9223372036854775808.0, -9223372036854775808.0, 127.0, 128.0, 255.0, 256.0, -129.0, 65536.5,
          3.4e38, 1e39, 1.0000001, 0.1, -0.1, 2.0, 100.0, 0.7};
}
inline std::vector<int64_t> special_ints() {
  return {0, 1, -1, 2, -2, 3, -3, 7, -7, 127, 128, -128, -129, 255, 256, 32767, -32768, 65535,
          2147483647, -2147483648LL, 4294967296LL, std::numeric_limits<int64_t>::max(),
          std::numeric_limits<int64_t>::min(), 1000003, -99, 63, 64, 5};
}

// A typed, strided buffer of n logical elements.
struct Buf {
  DType dt;
  int64_t n, stride;
  std::vector<char> bytes;
  Buf(DType d, int64_t n_, int64_t s) : dt(d), n(n_), stride(s) {
    bytes.assign(static_cast<size_t>(std::max<int64_t>(1, (n - 1) * s + 1)) * dtype_size(d), 0);
  }
  interp::StridedPtr ptr() { return {bytes.data(), stride}; }
  void fill(std::mt19937_64& rng) {
    const auto fs = special_doubles();
    const auto is = special_ints();
    const size_t es = dtype_size(dt);
    for (size_t k = 0; k < bytes.size() / es; ++k) {
      char* p = bytes.data() + k * es;
      const bool pick_special = rng() % 2 == 0;
      switch (dt) {
        case DType::Float64: {
          double v = pick_special ? fs[rng() % fs.size()] : std::ldexp(double(int64_t(rng() % 2000001) - 1000000), int(rng() % 40) - 30);
          std::memcpy(p, &v, 8);
          break;
        }
        case DType::Float32: {
          float v = static_cast<float>(pick_special ? fs[rng() % fs.size()] : std::ldexp(double(int64_t(rng() % 2001) - 1000), int(rng() % 20) - 10));
          std::memcpy(p, &v, 4);
          break;
        }
        case DType::Bool: *p = static_cast<char>(rng() % 2); break;
        default: {
          int64_t v = pick_special ? is[rng() % is.size()] : int64_t(rng() % 21) - 10;
          std::memcpy(p, &v, es);  // little-endian truncation
        }
      }
    }
  }
};

// "" if equal, else the first differing element.
inline std::string compare(const Buf& a, const Buf& b) {
  const size_t es = dtype_size(a.dt);
  for (int64_t i = 0; i < a.n; ++i) {
    const char* x = a.bytes.data() + i * a.stride * es;
    const char* y = b.bytes.data() + i * b.stride * es;
    if (a.dt == DType::Float64) {
      double u, v;
      std::memcpy(&u, x, 8);
      std::memcpy(&v, y, 8);
      if (std::isnan(u) && std::isnan(v)) continue;
      if (std::memcmp(x, y, 8) != 0) return "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    } else if (a.dt == DType::Float32) {
      float u, v;
      std::memcpy(&u, x, 4);
      std::memcpy(&v, y, 4);
      if (std::isnan(u) && std::isnan(v)) continue;
      if (std::memcmp(x, y, 4) != 0) return "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    } else if (std::memcmp(x, y, es) != 0) {
      int64_t u = 0, v = 0;
      std::memcpy(&u, x, es);
      std::memcpy(&v, y, es);
      return "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    }
  }
  return "";
}

// Every dtype a Composite can carry.
inline constexpr DType kAllDTypes[] = {DType::Float64, DType::Float32, DType::Int64, DType::Int32,
                                       DType::Int16,   DType::Int8,    DType::UInt8, DType::Bool,
                                       DType::UInt16,  DType::UInt32};

// Runs kernels a and b of Composite c on the same n inputs (filled from rng
// in order, input k with strides[k]; 0 broadcasts) into outputs of stride
// out_stride: "" if every output has the same bits, else "output k: ...".
inline std::string run_both(const interp::Composite& c, const interp::ElemKernel& a, const interp::ElemKernel& b,
                            int64_t n, const std::vector<int64_t>& strides, int64_t out_stride, std::mt19937_64& rng) {
  std::vector<Buf> ins;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    ins.emplace_back(c.inputs[k], n, strides[k]);
    ins.back().fill(rng);
  }
  std::vector<Buf> o1, o2;
  for (int32_t o : c.outputs) {
    o1.emplace_back(c.value_dtype(o), n, out_stride);
    o2.emplace_back(c.value_dtype(o), n, out_stride);
  }
  std::vector<interp::StridedPtr> pi, p1, p2;
  for (auto& x : ins) pi.push_back(x.ptr());
  for (auto& x : o1) p1.push_back(x.ptr());
  for (auto& x : o2) p2.push_back(x.ptr());
  a.run(n, pi.data(), p1.data());
  b.run(n, pi.data(), p2.data());
  for (size_t k = 0; k < o1.size(); ++k)
    if (std::string e = compare(o1[k], o2[k]); !e.empty()) return "output " + std::to_string(k) + ": " + e;
  return "";
}

}  // namespace ember::test
