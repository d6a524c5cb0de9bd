// Bool elements as int64 register lanes (0 or 1): the VM's and the JIT
// driver's gathers of masks, contiguous ones four at a time.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ember::interp {

inline void widen_bool(const uint8_t* u, int64_t stride, int64_t m, int64_t* r) {
  if (stride != 1) {
    for (int64_t i = 0; i < m; ++i) r[i] = u[i * stride] != 0;
    return;
  }
  int64_t i = 0;
#if defined(__AVX2__)
  // Any nonzero byte is true: 1 + (byte == 0 ? -1 : 0).
  const __m256i one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256();
  for (; i + 4 <= m; i += 4) {
    int32_t w;
    std::memcpy(&w, u + i, 4);
    const __m256i v = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(r + i), _mm256_add_epi64(one, _mm256_cmpeq_epi64(v, zero)));
  }
#endif
  for (; i < m; ++i) r[i] = u[i] != 0;
}

}  // namespace ember::interp
