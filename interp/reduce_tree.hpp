// The fixed summation tree every reduction uses (the engine's ops and the
// JIT's summed outputs), so results depend only on
// the sizes involved: never on strides, layout, thread count or threshold.
//
// Order for one output over its R reduced elements (C order of the reduced
// axes):
//   * R is cut into chunks of kChunk consecutive elements (the last shorter);
//   * each chunk is reduced by tree(n): n <= 128 is a leaf; above, the first
//     n2 = n/2 rounded down to a multiple of 8 elements and the rest are
//     reduced separately and combined as (left op right) (NumPy's pairwise
//     split);
//   * a leaf with n < 8 folds left to right from its first element; else 8
//     lanes r[k] take elements k, k+8, k+16, ... below n - n%8, are combined
//     as ((r0 r1)(r2 r3))((r4 r5)(r6 r7)), and the tail is folded in order;
//   * the chunk partials are reduced by the same tree (on the calling thread).
// Chunks (and disjoint groups of outputs) may run on different threads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ember::reduce {

inline constexpr int64_t kChunk = int64_t{1} << 16;
inline constexpr int64_t kLeaf = 128;
inline constexpr int64_t kLanes = 8;
// Below this many input elements a reduction stays on the calling thread.
inline constexpr int64_t kParallelMin = int64_t{1} << 16;

// MulNZ: PyTensor's MulWithoutZeros (prod's gradient): zeros are skipped;
// 0 is its identity, so a product of only zeros, or of none, is 0.
enum class Rop { Add, Mul, Max, Min, And, Or, MulNZ };

template <Rop op, class A>
inline A combine(A a, A b) {
  if constexpr (op == Rop::Add || op == Rop::Mul) {
    if constexpr (std::is_integral_v<A>) {  // wrap like NumPy, no UB
      using U = std::make_unsigned_t<A>;
      return op == Rop::Add ? static_cast<A>(static_cast<U>(a) + static_cast<U>(b))
                            : static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return op == Rop::Add ? a + b : a * b;
    }
  } else if constexpr (op == Rop::MulNZ) {
    return a == A(0) ? b : b == A(0) ? a : combine<Rop::Mul>(a, b);
  } else if constexpr (op == Rop::Max) {
    if constexpr (std::is_floating_point_v<A>) return (a > b || a != a) ? a : b;  // NaN wins
    else return a > b ? a : b;
  } else if constexpr (op == Rop::Min) {
    if constexpr (std::is_floating_point_v<A>) return (a < b || a != a) ? a : b;
    else return a < b ? a : b;
  } else if constexpr (op == Rop::And) {
    return static_cast<A>(a & b);
  } else {
    return static_cast<A>(a | b);
  }
}

// The 8 lanes of a floating-point sum or product as xsimd batches. Each lane
// takes the same IEEE operations in the same order as the scalar loop below;
// written out because GCC builds the scalar version's first 8 lanes with
// 16-byte stores that a 32-byte load then cannot forward from (a stall that
// was a third of a 20-element Sum).
template <Rop op, class A>
[[gnu::always_inline]] inline void leaf_lanes(const A* a, int64_t end, A* lanes) {
  using V = xsimd::batch<A>;
  constexpr int W = static_cast<int>(V::size), NB = static_cast<int>(kLanes) / W;
  static_assert(kLanes % W == 0);
  if constexpr (NB == 2) {
    // Two named accumulators: GCC keeps an array of batches on the stack,
    // a store and a reload (store forwarding, ~5 cycles) in every add's chain.
    V r0 = V::load_unaligned(a), r1 = V::load_unaligned(a + W);
    for (int64_t i = kLanes; i < end; i += kLanes) {
      const V x0 = V::load_unaligned(a + i), x1 = V::load_unaligned(a + i + W);
      r0 = op == Rop::Add ? r0 + x0 : r0 * x0;
      r1 = op == Rop::Add ? r1 + x1 : r1 * x1;
    }
    r0.store_unaligned(lanes);
    r1.store_unaligned(lanes + W);
    return;
  }
  V r[NB];
  for (int b = 0; b < NB; ++b) r[b] = V::load_unaligned(a + b * W);
  for (int64_t i = kLanes; i < end; i += kLanes)
    for (int b = 0; b < NB; ++b) {
      const V x = V::load_unaligned(a + i + b * W);
      r[b] = op == Rop::Add ? r[b] + x : r[b] * x;
    }
  for (int b = 0; b < NB; ++b) r[b].store_unaligned(lanes + b * W);
}

// A leaf's 8 lanes combined as ((r0 r1)(r2 r3))((r4 r5)(r6 r7)); lane k
// at r[k * stride] (lanes of several outputs may be interleaved).
template <Rop op, class A>
[[gnu::always_inline]] inline A combine_lanes(const A* r, int64_t stride = 1) {
  return combine<op>(combine<op>(combine<op>(r[0], r[stride]), combine<op>(r[2 * stride], r[3 * stride])),
                     combine<op>(combine<op>(r[4 * stride], r[5 * stride]), combine<op>(r[6 * stride], r[7 * stride])));
}

// Leaf over a contiguous block a[0, n), 1 <= n <= kLeaf. Always inlined:
// called once per 128 elements, a call costs a visible share of the sum.
template <Rop op, class A>
[[gnu::always_inline]] inline A leaf(const A* a, int64_t n) {
  if (n < kLanes) {
    A r = a[0];
    for (int64_t i = 1; i < n; ++i) r = combine<op>(r, a[i]);
    return r;
  }
  if constexpr ((op == Rop::Add || op == Rop::Mul) && std::is_floating_point_v<A>) {
    const int64_t end = n - n % kLanes;
    A r[kLanes];
    leaf_lanes<op, A>(a, end, r);
    A res = combine_lanes<op>(r);
    for (int64_t i = end; i < n; ++i) res = combine<op>(res, a[i]);
    return res;
  }
  A r[kLanes];
  for (int k = 0; k < kLanes; ++k) r[k] = a[k];
  const int64_t end = n - n % kLanes;
  int64_t i = kLanes;
  for (; i < end; i += kLanes)
    for (int k = 0; k < kLanes; ++k) r[k] = combine<op>(r[k], a[i + k]);
  A res = combine_lanes<op>(r);
  for (; i < n; ++i) res = combine<op>(res, a[i]);
  return res;
}

inline int64_t split_point(int64_t n) {
  int64_t n2 = n / 2;
  return n2 - n2 % kLanes;
}

// tree(n) over elements [lo, lo+n); get_leaf(lo, n) returns the leaf value.
// Leaves are visited in increasing order of lo.
template <Rop op, class A, class LeafFn>
inline A tree(int64_t lo, int64_t n, LeafFn& get_leaf) {
  if (n <= kLeaf) return get_leaf(lo, n);
  const int64_t n2 = split_point(n);
  A l = tree<op, A>(lo, n2, get_leaf);
  A r = tree<op, A>(lo + n2, n - n2, get_leaf);
  return combine<op>(l, r);
}

// Appends the lengths of tree(n)'s leaves, in order.
inline void leaf_lengths(int64_t n, int16_t* len, int& count) {
  if (n <= kLeaf) {
    len[count++] = static_cast<int16_t>(n);
    return;
  }
  const int64_t n2 = split_point(n);
  leaf_lengths(n2, len, count);
  leaf_lengths(n - n2, len, count);
}

// tree(n) over a contiguous a[0, n): the same leaves and combinations, but
// the leaves are reduced in one flat loop first (leaf inlined, no recursion
// per leaf: ~2x faster on 10^5 doubles), then combined by the tree.
template <Rop op, class A>
inline A tree_contiguous(const A* a, int64_t n) {
  if (n <= kLeaf) return leaf<op, A>(a, n);
  // A leaf under a split holds >= kLeaf / 2 elements.
  constexpr int kMax = static_cast<int>(kChunk / (kLeaf / 2)) + 1;
  if (n > kChunk || n <= 4 * kLeaf) {  // small: a few leaves, recursion is cheaper than the table
    auto lf = [a](int64_t lo, int64_t m) { return leaf<op, A>(a + lo, m); };
    return tree<op, A>(0, n, lf);
  }
  int16_t len[kMax];
  A val[kMax];
  int count = 0;
  leaf_lengths(n, len, count);
  const A* p = a;
  for (int i = 0; i < count; ++i) {
    val[i] = leaf<op, A>(p, len[i]);
    p += len[i];
  }
  int k = 0;
  auto lf = [&](int64_t, int64_t) { return val[k++]; };
  return tree<op, A>(0, n, lf);
}

// Reduces a contiguous array a[0, n), n >= 1, in the documented order on the
// calling thread: each chunk by the tree, then the chunk partials by the tree.
template <Rop op, class A>
inline A reduce_contiguous(const A* a, int64_t n) {
  if (n <= kChunk) return tree_contiguous<op, A>(a, n);
  const int64_t nc = (n + kChunk - 1) / kChunk;
  A small[64];
  std::unique_ptr<A[]> big;
  A* part = small;
  if (nc > 64) {
    big.reset(new A[static_cast<size_t>(nc)]);
    part = big.get();
  }
  for (int64_t c = 0; c < nc; ++c) part[c] = tree_contiguous<op, A>(a + c * kChunk, std::min(kChunk, n - c * kChunk));
  return tree_contiguous<op, A>(part, nc);
}

// Reduces each of `rows` contiguous rows x[r*n, (r+1)*n) into y[r], n >= 1,
// in the documented order. Rows shorter than a leaf's 8 lanes fold from
// their first element with n known at compile time, so the compiler unrolls
// the fold and may run several rows at once.
template <Rop op, class A, int N>
inline void fold_rows(const A* x, int64_t rows, A* y) {
  for (int64_t r = 0; r < rows; ++r, x += N) {
    A v = x[0];
    for (int k = 1; k < N; ++k) v = combine<op>(v, x[k]);
    y[r] = v;
  }
}
#if defined(__AVX2__)
// Float64 sums of rows of n in [8, kLeaf] elements, four rows at a time: a
// row's lanes 0-3 and 4-7 in two vectors, combined across the four rows by
// hadd (lanes k and k + 1 of one row) as combine_lanes does, then each row's
// tail folded in order. The same operations as leaf(), one row per lane.
// Returns the rows done (a multiple of 4).
inline int64_t leaf_rows4_add(const double* x, int64_t rows, int64_t n, double* y) {
  const int64_t end = n - n % kLanes;
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const double* p[4] = {x + r * n, x + (r + 1) * n, x + (r + 2) * n, x + (r + 3) * n};
    __m256d lo[4], hi[4];
    for (int q = 0; q < 4; ++q) {
      lo[q] = _mm256_loadu_pd(p[q]);
      hi[q] = _mm256_loadu_pd(p[q] + 4);
    }
    for (int64_t i = kLanes; i < end; i += kLanes)
      for (int q = 0; q < 4; ++q) {
        lo[q] = _mm256_add_pd(lo[q], _mm256_loadu_pd(p[q] + i));
        hi[q] = _mm256_add_pd(hi[q], _mm256_loadu_pd(p[q] + i + 4));
      }
    // hadd(a, b) = [a0 + a1, b0 + b1, a2 + a3, b2 + b3]: then lane q of the
    // sum of the halves is row q's (r0 r1)(r2 r3), or (r4 r5)(r6 r7).
    auto half = [](__m256d a, __m256d b, __m256d c, __m256d d) {
      const __m256d h01 = _mm256_hadd_pd(a, b), h23 = _mm256_hadd_pd(c, d);
      return _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20), _mm256_permute2f128_pd(h01, h23, 0x31));
    };
    __m256d v = _mm256_add_pd(half(lo[0], lo[1], lo[2], lo[3]), half(hi[0], hi[1], hi[2], hi[3]));
    for (int64_t i = end; i < n; ++i) v = _mm256_add_pd(v, _mm256_set_pd(p[3][i], p[2][i], p[1][i], p[0][i]));
    _mm256_storeu_pd(y + r, v);
  }
  return r;
}
#endif

template <Rop op, class A>
inline void reduce_rows(const A* x, int64_t rows, int64_t n, A* y) {
  switch (n) {
    case 1: return fold_rows<op, A, 1>(x, rows, y);
    case 2: return fold_rows<op, A, 2>(x, rows, y);
    case 3: return fold_rows<op, A, 3>(x, rows, y);
    case 4: return fold_rows<op, A, 4>(x, rows, y);
    case 5: return fold_rows<op, A, 5>(x, rows, y);
    case 6: return fold_rows<op, A, 6>(x, rows, y);
    case 7: return fold_rows<op, A, 7>(x, rows, y);
    default: break;
  }
  int64_t r = 0;
#if defined(__AVX2__)
  if constexpr (op == Rop::Add && std::is_same_v<A, double>)
    if (n <= kLeaf) r = leaf_rows4_add(x, rows, n, y);
#endif
  for (x += r * n; r < rows; ++r, x += n) y[r] = n <= kLeaf ? leaf<op, A>(x, n) : reduce_contiguous<op, A>(x, n);
}

}  // namespace ember::reduce
