// (Source files of the math library sort before pending.cpp so that, in the
// static library, their strong symbols are found before its weak stand-ins.)
// sin, cos, tan. Reduction x = n*pi/2 + (y0 + y1): branch-free three-step
// Cody-Waite for |x| < 2^20*pi/2 (fdlibm's pio2 splits), and an exact
// integer Payne-Hanek reduction, lane by lane, above that. Kernels are
// fdlibm's __kernel_sin/cos/tan (< 1 ulp on |y0| <= pi/4).
#include <bit>
#include <cstring>

#include "interp/math/apply.hpp"
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"

namespace ember::math::simd {
namespace {

constexpr double kMediumLimit = 1647099.3291652855;  // 2^20 * pi/2

// Bits of 2/pi after the binary point, preceded by 64 zero bits.
constexpr uint64_t kTwoOverPi[] = {
    0x0000000000000000ull, 0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
    0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull,
    0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull, 0x3991d639835339f4ull, 0x9c845f8bbdf9283bull,
    0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
    0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull};

using u128 = unsigned __int128;

uint64_t window64(int q) {  // 64 bits of kTwoOverPi starting at bit q
  int j = q / 64, sh = q % 64;
  if (sh == 0) return kTwoOverPi[j];
  return (kTwoOverPi[j] << sh) | (kTwoOverPi[j + 1] >> (64 - sh));
}

double pow2(int k) {  // 2^k for k in [-1022, 1023]
  uint64_t b = uint64_t(k + 1023) << 52;
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

// Exact product a*b = p + e (Dekker, no FMA).
void two_prod(double a, double b, double& p, double& e) {
  auto split = [](double v, double& hi, double& lo) {
    double t = v * 134217729.0;
    hi = t - (t - v);
    lo = v - hi;
  };
  double ah, al, bh, bl;
  split(a, ah, al);
  split(b, bh, bl);
  p = a * b;
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// Payne-Hanek for finite |x| >= 2^20: x = n*pi/2 + y0 + y1, returns n mod 4.
int rem_pio2_huge(double x, double& y0, double& y1) {
  uint64_t bx;
  std::memcpy(&bx, &x, 8);
  int e = int(bx >> 52 & 0x7ff) - 1075;          // x = m * 2^e
  uint64_t m = (bx & 0x000fffffffffffffull) | (1ull << 52);
  // Only 2/pi bits of weight > 2^-(e-2) matter modulo 4: take 192 of them.
  int q = e - 2 + 64;
  uint64_t c2 = window64(q), c1 = window64(q + 64), c0 = window64(q + 128);
  u128 p0 = u128(m) * c0;
  u128 p1 = u128(m) * c1 + (p0 >> 64);
  uint64_t l0 = uint64_t(p0);
  uint64_t l1 = uint64_t(p1);
  uint64_t l2 = uint64_t(m * c2 + uint64_t(p1 >> 64));  // mod 2^64
  int n = int(l2 >> 62);
  u128 f = (u128((l2 << 2) | (l1 >> 62)) << 64) | ((l1 << 2) | (l0 >> 62));  // fraction / 2^128
  bool neg = f >> 127;
  if (neg) {
    f = ~f + 1;  // 1 - fraction
    n += 1;
  }
  // f / 2^128 (< 1/2) as rh + rl.
  int lz = f == 0 ? 0 : (uint64_t(f >> 64) ? std::countl_zero(uint64_t(f >> 64))
                                            : 64 + std::countl_zero(uint64_t(f)));
  u128 g = f << lz;
  double top = double(uint64_t(g >> 75));  // 53 bits, exact
  double rest = double(uint64_t(g >> 11));  // next 64 bits, rounded
  double rh = top * pow2(-53 - lz), rl = rest * pow2(-117 - lz);
  if (neg) rh = -rh, rl = -rl;
  // (rh + rl) * pi/2 in double-double.
  constexpr double kPio2Hi = 1.5707963267948966, kPio2Lo = 6.123233995736766e-17;
  double p, err;
  two_prod(rh, kPio2Hi, p, err);
  err = err + (rh * kPio2Lo + rl * kPio2Hi);
  y0 = p + err;
  y1 = err - (y0 - p);
  if (x < 0) {
    y0 = -y0, y1 = -y1;
    n = -n;
  }
  return n & 3;
}

// x = n*pi/2 + y0 + y1 with |y0| <= ~pi/4; returns n mod 4 (as a double in 0..3).
D rem_pio2(D x, D& y0, D& y1) {
  constexpr double kInvPio2 = 6.36619772367581382433e-01;
  constexpr double kPio2_1 = 1.57079632673412561417e+00;  // 33 bits
  constexpr double kPio2_2 = 6.07710050630396597660e-11, kPio2_2t = 2.02226624879595063154e-21;
  constexpr double kPio2_3 = 2.02226624871116645580e-21, kPio2_3t = 8.47842766036889956997e-32;
  D fn = rint(x * D(kInvPio2));
  D r1 = x - fn * D(kPio2_1);  // exact for |fn| < 2^20
  // Second and third steps (fdlibm): the rounding error of each subtraction
  // goes into the tail w.
  D w2 = fn * D(kPio2_2);
  D r2 = r1 - w2;
  D t2 = fn * D(kPio2_2t) - ((r1 - r2) - w2);
  D a2 = r2 - t2;
  D b2 = (r2 - a2) - t2;
  D w3 = fn * D(kPio2_3);
  D r3 = r2 - w3;
  D t3 = fn * D(kPio2_3t) - ((r2 - r3) - w3);
  D a3 = r3 - t3;
  D b3 = (r3 - a3) - t3;
  // The third step only when the second cancelled 49+ bits (then r2 is exact).
  B deep = abs(a2) < abs(x) * D(0x1p-49);
  y0 = select(deep, a3, a2);
  y1 = select(deep, b3, b2);
  D q = fn - D(4.0) * xsimd::floor(fn * D(0.25));
  B huge = abs(x) >= D(kMediumLimit) && abs(x) < inf();
  if (xsimd::any(huge)) {
    alignas(64) double xs[D::size], a0[D::size], a1[D::size], qs[D::size];
    x.store_aligned(xs);
    y0.store_aligned(a0);
    y1.store_aligned(a1);
    q.store_aligned(qs);
    for (std::size_t i = 0; i < D::size; ++i)
      if (double ax = xs[i] < 0 ? -xs[i] : xs[i]; ax >= kMediumLimit && ax < __builtin_inf())
        qs[i] = rem_pio2_huge(xs[i], a0[i], a1[i]);
    y0 = D::load_aligned(a0);
    y1 = D::load_aligned(a1);
    q = D::load_aligned(qs);
  }
  return q;
}

D kernel_sin(D x, D y) {
  D z = x * x;
  D w = z * z;
  D r = horner(z, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
               2.75573137070700676789e-06) +
        z * w * horner(z, -2.50507602534068634195e-08, 1.58969099521155010221e-10);
  D v = z * x;
  return x - ((z * (D(0.5) * y - v * r) - y) - v * D(-1.66666666666666324348e-01));
}

D kernel_cos(D x, D y) {
  D z = x * x;
  D w = z * z;
  D r = z * horner(z, 4.16666666666666019037e-02, -1.38888888888741095749e-03,
                   2.48015872894767294178e-05) +
        w * w * horner(z, -2.75573143513906633035e-07, 2.08757232129817482790e-09,
                       -1.13596475577881948265e-11);
  D hz = D(0.5) * z;
  w = D(1.0) - hz;
  return w + (((D(1.0) - w) - hz) + (z * r - x * y));
}

// tan(x + y) if odd is false, else -1/tan(x + y).
D kernel_tan(D x, D y, B odd) {
  constexpr double T[] = {3.33333333333334091986e-01,  1.33333333333201242699e-01,
                          5.39682539762260521377e-02,  2.18694882948595424599e-02,
                          8.86323982359930005737e-03,  3.59207910759131235356e-03,
                          1.45620945432529025516e-03,  5.88041240820264096874e-04,
                          2.46463134818469906812e-04,  7.81794442939557092300e-05,
                          7.14072491382608190305e-05,  -1.85586374855275456654e-05,
                          2.59073051863633712884e-05};
  constexpr double kPio4 = 7.85398163397448278999e-01, kPio4Lo = 3.06161699786838301793e-17;
  B big = abs(x) >= from_bits(0x3FE5942800000000ull);
  B xneg = x < D(0.0);
  B flip = big && xneg;
  x = select(flip, neg(x), x);
  y = select(flip, neg(y), y);
  x = select(big, (D(kPio4) - x) + (D(kPio4Lo) - y), x);
  y = select(big, D(0.0), y);
  D z = x * x;
  D w = z * z;
  D r = horner(w, T[1], T[3], T[5], T[7], T[9], T[11]);
  D v = z * horner(w, T[2], T[4], T[6], T[8], T[10], T[12]);
  D s = z * x;
  r = y + z * (s * (r + v) + y);
  r = r + D(T[0]) * s;
  w = x + r;
  D iy = select(odd, D(-1.0), D(1.0));
  D ybig = iy - D(2.0) * (x - (w * w / (w + iy) - r));
  ybig = select(xneg, neg(ybig), ybig);
  // -1/(x + r) accurately.
  D zh = trunc32(w);
  D vv = r - (zh - x);
  D a = D(-1.0) / w;
  D th = trunc32(a);
  D sm = D(1.0) + th * zh;
  D yodd = th + a * (sm + th * vv);
  return select(big, ybig, select(odd, yodd, w));
}

}  // namespace

void sincos(D x, D* sx, D* cx) {
  D y0, y1;
  D q = rem_pio2(x, y0, y1);
  D s = kernel_sin(y0, y1), c = kernel_cos(y0, y1);
  if (sx) {
    D r = select(q == D(0.0), s, select(q == D(1.0), c, select(q == D(2.0), neg(s), neg(c))));
    r = select(x == D(0.0), x, r);
    *sx = select(abs(x) == inf(), nan(), r);
  }
  if (cx) {
    D r = select(q == D(0.0), c, select(q == D(1.0), neg(s), select(q == D(2.0), neg(c), s)));
    *cx = select(abs(x) == inf(), nan(), r);
  }
}

D sin(D x) {
  D r;
  sincos(x, &r, nullptr);
  return r;
}

D cos(D x) {
  D r;
  sincos(x, nullptr, &r);
  return r;
}

D tan(D x) {
  D y0, y1;
  D q = rem_pio2(x, y0, y1);
  B odd = q == D(1.0) || q == D(3.0);
  D r = kernel_tan(y0, y1, odd);
  r = select(x == D(0.0), x, r);
  return select(abs(x) == inf(), nan(), r);
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY1(sin)
EMBER_MATH_ARRAY1(cos)
EMBER_MATH_ARRAY1(tan)

// s[i] = sin(x[i]), c[i] = cos(x[i]), each only where its pointer is not
// null; outputs may alias x exactly.
EMBER_MATH_WIDE_DECL(sincos, int64_t, const double*, double*, double*)
EMBER_MATH_FLATTEN
void ember::math::sincos(int64_t n, const double* x, double* s, double* c) {
  EMBER_MATH_TO_WIDE(sincos, n, x, s, c)
  double* const y[2] = {s, c};
  detail::apply_group<2>(n, x, y, [](simd::D v, simd::D* const* r) { simd::sincos(v, r[0], r[1]); });
}
EMBER_MATH_C_ENTRY(ember_math_sincos(int64_t n, const double* x, double* s, double* c), sincos(n, x, s, c))
