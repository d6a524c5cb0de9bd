// Matrix times vector in float64 with one summation order for every layout:
// y[i] = sum_j A[i, j] * x[j] as four partial sums p[j % 4], each over
// increasing j from +0.0, then (p0 + p1) + (p2 + p3); each product rounded,
// then added (no FMA). Rows or columns of A contiguous, read in place: the
// bits depend on the shapes only, never on strides, alignment or which of
// the two loops ran (a transposed design matrix gives its gradient's bits).
#pragma once
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ember::linalg {

// One row by the definition, element by element (rows the vector loops leave).
inline double gemv_row(const double* r, int64_t sj, const double* x, int64_t k) {
  double p[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t j = 0; j < k; ++j) p[j % 4] = p[j % 4] + r[j * sj] * x[j];
  return (p[0] + p[1]) + (p[2] + p[3]);
}

#if defined(__AVX2__)
// Four rows of K < 4 packed elements (4K doubles from p) as K vectors:
// c[j] = column j of the four rows, in row order. Blends, then one vpermpd
// per column.
template <int K>
inline void load_cols4(const double* p, __m256d* c) {
  if constexpr (K == 1) {
    c[0] = _mm256_loadu_pd(p);
  } else if constexpr (K == 2) {
    const __m256d v0 = _mm256_loadu_pd(p), v1 = _mm256_loadu_pd(p + 4);  // [a00 a01 a10 a11] [a20 a21 a30 a31]
    c[0] = _mm256_permute4x64_pd(_mm256_unpacklo_pd(v0, v1), _MM_SHUFFLE(3, 1, 2, 0));
    c[1] = _mm256_permute4x64_pd(_mm256_unpackhi_pd(v0, v1), _MM_SHUFFLE(3, 1, 2, 0));
  } else {
    static_assert(K == 3);
    // [a00 a01 a02 a10] [a11 a12 a20 a21] [a22 a30 a31 a32]
    const __m256d v0 = _mm256_loadu_pd(p), v1 = _mm256_loadu_pd(p + 4), v2 = _mm256_loadu_pd(p + 8);
    c[0] = _mm256_permute4x64_pd(_mm256_blend_pd(_mm256_blend_pd(v0, v1, 0b0100), v2, 0b0010), _MM_SHUFFLE(1, 2, 3, 0));
    c[1] = _mm256_permute4x64_pd(_mm256_blend_pd(_mm256_blend_pd(v0, v1, 0b1001), v2, 0b0100), _MM_SHUFFLE(2, 3, 0, 1));
    c[2] = _mm256_permute4x64_pd(_mm256_blend_pd(_mm256_blend_pd(v0, v1, 0b0010), v2, 0b1001), _MM_SHUFFLE(3, 0, 1, 2));
  }
}

// Rows of K < 4 packed elements (s0 == K, s1 == 1), four rows a vector: row
// r's p[j] is lane r of +0.0 + c[j] * x[j], the other partial sums +0.0.
template <int K>
inline int64_t gemv_rows_narrow(const double* A, const double* x, int64_t m, double* y) {
  const __m256d z = _mm256_setzero_pd();
  const __m256d x0 = _mm256_broadcast_sd(x), x1 = K > 1 ? _mm256_broadcast_sd(x + 1) : z,
                x2 = K > 2 ? _mm256_broadcast_sd(x + 2) : z;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    __m256d c[K];
    load_cols4<K>(A + i * K, c);
    // Named partial sums: an array of vectors would live on the stack.
    const __m256d p0 = _mm256_add_pd(z, _mm256_mul_pd(c[0], x0));
    const __m256d p1 = K > 1 ? _mm256_add_pd(z, _mm256_mul_pd(c[K > 1 ? 1 : 0], x1)) : z;
    const __m256d p2 = K > 2 ? _mm256_add_pd(z, _mm256_mul_pd(c[K > 2 ? 2 : 0], x2)) : z;
    _mm256_storeu_pd(y + i, _mm256_add_pd(_mm256_add_pd(p0, p1), _mm256_add_pd(p2, z)));
  }
  return i;
}

// R < 4 contiguous rows s0 apart, each row's vector of partial sums its own
// chain, interleaved; the last k - k4 elements by the masked load (mk, xt).
template <int R>
inline void gemv_rows_tail(const double* A, int64_t s0, const double* x, int64_t k4, bool rem, __m256i mk,
                           __m256d xt, double* y) {
  __m256d a[R];
  for (int r = 0; r < R; ++r) a[r] = _mm256_setzero_pd();
  for (int64_t j = 0; j < k4; j += 4) {
    const __m256d xv = _mm256_loadu_pd(x + j);
    for (int r = 0; r < R; ++r) a[r] = _mm256_add_pd(a[r], _mm256_mul_pd(_mm256_loadu_pd(A + r * s0 + j), xv));
  }
  for (int r = 0; r < R; ++r) {
    if (rem) a[r] = _mm256_add_pd(a[r], _mm256_mul_pd(_mm256_maskload_pd(A + r * s0 + k4, mk), xt));
    alignas(32) double p[4];
    _mm256_store_pd(p, a[r]);
    y[r] = (p[0] + p[1]) + (p[2] + p[3]);
  }
}

#endif

// A's element (i, j) at A[i * s0 + j * s1]; x contiguous; s1 == 1 or s0 == 1.
inline void gemv_f64(const double* A, int64_t s0, int64_t s1, const double* x, int64_t m, int64_t k, double* y) {
  int64_t i = 0;
#if defined(__AVX2__)
  const int64_t k4 = k - k % 4, rem = k % 4;
  if (s1 == 1 && k < 4 && s0 == k) {
    // Narrow packed rows: whole vectors of rows, no horizontal sums.
    i = k == 1 ? gemv_rows_narrow<1>(A, x, m, y) : k == 2 ? gemv_rows_narrow<2>(A, x, m, y) : gemv_rows_narrow<3>(A, x, m, y);
  } else if (s1 == 1) {
    // Rows contiguous: lane l of a row's vector is p[l]. The last k % 4
    // elements come in by a masked load whose other lanes add +0.0, which
    // changes no partial sum (one that starts at +0.0 is never -0.0).
    const __m256i mk = _mm256_cmpgt_epi64(_mm256_set1_epi64x(rem), _mm256_set_epi64x(3, 2, 1, 0));
    const __m256d xt = _mm256_maskload_pd(x + k4, mk);
    for (; i + 4 <= m; i += 4) {  // four rows: four independent chains
      const double *r0 = A + i * s0, *r1 = r0 + s0, *r2 = r1 + s0, *r3 = r2 + s0;
      __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t j = 0; j < k4; j += 4) {
        const __m256d xv = _mm256_loadu_pd(x + j);
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(_mm256_loadu_pd(r0 + j), xv));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(_mm256_loadu_pd(r1 + j), xv));
        a2 = _mm256_add_pd(a2, _mm256_mul_pd(_mm256_loadu_pd(r2 + j), xv));
        a3 = _mm256_add_pd(a3, _mm256_mul_pd(_mm256_loadu_pd(r3 + j), xv));
      }
      if (rem) {
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(_mm256_maskload_pd(r0 + k4, mk), xt));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(_mm256_maskload_pd(r1 + k4, mk), xt));
        a2 = _mm256_add_pd(a2, _mm256_mul_pd(_mm256_maskload_pd(r2 + k4, mk), xt));
        a3 = _mm256_add_pd(a3, _mm256_mul_pd(_mm256_maskload_pd(r3 + k4, mk), xt));
      }
      // hadd: p0 + p1 of two rows in lanes 0-1, p2 + p3 in lanes 2-3.
      const __m256d h01 = _mm256_hadd_pd(a0, a1), h23 = _mm256_hadd_pd(a2, a3);
      _mm256_storeu_pd(y + i, _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20),
                                            _mm256_permute2f128_pd(h01, h23, 0x31)));
    }
    // The last m % 4 rows together: one row's sums are one chain of adds,
    // so rows taken one after another wait on each other's latency (a
    // regression's X^T g: three rows of hundreds of elements).
    switch (m - i) {
      case 3: gemv_rows_tail<3>(A + i * s0, s0, x, k4, rem != 0, mk, xt, y + i); break;
      case 2: gemv_rows_tail<2>(A + i * s0, s0, x, k4, rem != 0, mk, xt, y + i); break;
      case 1: gemv_rows_tail<1>(A + i * s0, s0, x, k4, rem != 0, mk, xt, y + i); break;
      default: break;
    }
    i = m;
  } else {
    // Columns contiguous (s0 == 1): four rows per vector, their partial sum
    // q in P[q]. The last m % 4 rows as one block whose other lanes are
    // masked off.
    auto block = [&](auto col, int64_t i) __attribute__((always_inline)) {
      __m256d P0 = _mm256_setzero_pd(), P1 = P0, P2 = P0, P3 = P0;
      for (int64_t j = 0; j < k4; j += 4) {
        P0 = _mm256_add_pd(P0, _mm256_mul_pd(col(i, j), _mm256_broadcast_sd(x + j)));
        P1 = _mm256_add_pd(P1, _mm256_mul_pd(col(i, j + 1), _mm256_broadcast_sd(x + j + 1)));
        P2 = _mm256_add_pd(P2, _mm256_mul_pd(col(i, j + 2), _mm256_broadcast_sd(x + j + 2)));
        P3 = _mm256_add_pd(P3, _mm256_mul_pd(col(i, j + 3), _mm256_broadcast_sd(x + j + 3)));
      }
      if (rem > 0) P0 = _mm256_add_pd(P0, _mm256_mul_pd(col(i, k4), _mm256_broadcast_sd(x + k4)));
      if (rem > 1) P1 = _mm256_add_pd(P1, _mm256_mul_pd(col(i, k4 + 1), _mm256_broadcast_sd(x + k4 + 1)));
      if (rem > 2) P2 = _mm256_add_pd(P2, _mm256_mul_pd(col(i, k4 + 2), _mm256_broadcast_sd(x + k4 + 2)));
      return _mm256_add_pd(_mm256_add_pd(P0, P1), _mm256_add_pd(P2, P3));
    };
    for (; i + 4 <= m; i += 4)
      _mm256_storeu_pd(y + i, block([&](int64_t r, int64_t j) { return _mm256_loadu_pd(A + r + j * s1); }, i));
    if (i < m) {
      const __m256i rows = _mm256_cmpgt_epi64(_mm256_set1_epi64x(m - i), _mm256_set_epi64x(3, 2, 1, 0));
      _mm256_maskstore_pd(y + i, rows, block([&](int64_t r, int64_t j) { return _mm256_maskload_pd(A + r + j * s1, rows); }, i));
      i = m;
    }
  }
#endif
  for (; i < m; ++i) y[i] = gemv_row(A + i * s0, s1, x, k);
}

}  // namespace ember::linalg
