// Strided walks for the engine's reductions, over the summation tree of
// interp/reduce_tree.hpp.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/tensor.hpp"
#include "interp/reduce_tree.hpp"

namespace ember::reduce {

// Walks a multi-dim strided index space in C order, tracking the offset.
struct Walker {
  int nd = 0;
  int64_t dims[kMaxRank] = {}, strides[kMaxRank] = {}, idx[kMaxRank] = {};
  int64_t off = 0;

  void seek(int64_t flat) {
    off = 0;
    for (int i = nd - 1; i >= 0; --i) {
      idx[i] = flat % dims[i];
      flat /= dims[i];
      off += idx[i] * strides[i];
    }
  }
  void next() {
    for (int i = nd - 1; i >= 0; --i) {
      if (++idx[i] < dims[i]) {
        off += strides[i];
        return;
      }
      off -= (dims[i] - 1) * strides[i];
      idx[i] = 0;
    }
  }
  // Copies the next n elements of base (converted) into out; advances.
  template <class In, class A>
  void gather(const In* base, int64_t n, A* out) {
    if (nd == 0) {
      for (int64_t i = 0; i < n; ++i) out[i] = convert<A>(base[off]);
      return;
    }
    const int in = nd - 1;
    const int64_t st = strides[in];
    while (n > 0) {
      const int64_t run = std::min(n, dims[in] - idx[in]);
      const In* p = base + off;
      for (int64_t i = 0; i < run; ++i) out[i] = convert<A>(p[i * st]);
      out += run;
      n -= run;
      // advance by run elements: innermost then carry once
      idx[in] += run;
      off += run * st;
      if (idx[in] == dims[in]) {
        off -= dims[in] * st;
        idx[in] = 0;
        carry(in - 1);
      }
    }
  }

  template <class To, class From>
  static To convert(From v) {
    if constexpr (std::is_same_v<To, From>) {
      return v;
    } else if constexpr (std::is_same_v<To, bool>) {
      return v != From(0);
    } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
      // Out-of-range and NaN give the minimum, as x86 NumPy does.
      constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
      constexpr double hi = static_cast<double>(std::numeric_limits<To>::max()) + 1.0;
      const double t = std::trunc(static_cast<double>(v));
      if (!(t >= lo && t < hi)) return std::numeric_limits<To>::min();
      return static_cast<To>(v);
    } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From> &&
                         !std::is_same_v<From, bool>) {
      return static_cast<To>(static_cast<std::make_unsigned_t<To>>(v));  // modular
    } else {
      return static_cast<To>(v);
    }
  }

 private:
  void carry(int i) {
    for (; i >= 0; --i) {
      if (++idx[i] < dims[i]) {
        off += strides[i];
        return;
      }
      off -= (dims[i] - 1) * strides[i];
      idx[i] = 0;
    }
  }
};

template <class To, class From>
inline To convert(From v) {
  return Walker::convert<To, From>(v);
}

}  // namespace ember::reduce

