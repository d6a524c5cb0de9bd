// pow: fdlibm's e_pow.c algorithm (log2|x| to ~64 bits as t1 + t2, y split
// into 21 + 32 bits, then 2^(p_h + p_l)), branch-free, plus C99/NumPy
// special cases chosen by select.
#include "interp/math/apply.hpp"
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"

namespace ember::math::simd {
namespace {

// log2(ax) as t1 + t2, t1 with its low 32 bits clear. ax finite, > 0.
void log2_ext(D ax, D& t1, D& t2) {
  B sub = ax < D(2.2250738585072014e-308);
  D n = exponent(ax);
  if (xsimd::any(sub)) {
    ax = select(sub, ax * D(9007199254740992.0), ax);  // * 2^53
    n = exponent(ax) - select(sub, D(53.0), D(0.0));
  }
  D m = mantissa(ax);
  B k0 = m < from_bits(0x3ff3988f00000000ull);  // below ~sqrt(3/2)
  B k1 = !k0 && m < from_bits(0x3ffbb67a00000000ull);  // below ~sqrt(3)
  B halve = !k0 && !k1;
  m = select(halve, m * D(0.5), m);
  n = n + select(halve, D(1.0), D(0.0));
  D bp = select(k1, D(1.5), D(1.0));
  D dp_h = select(k1, D(5.84962487220764160156e-01), D(0.0));
  D dp_l = select(k1, D(1.35003920212974897128e-08), D(0.0));
  // ss = s_h + s_l = (m - bp)/(m + bp), with t_h + t_l = m + bp exactly.
  D u = m - bp;
  D v = D(1.0) / (m + bp);
  D ss = u * v;
  D s_h = trunc32(ss);
  D t_h = trunc32(m + bp);
  D t_l = m - (t_h - bp);
  D s_l = v * ((u - s_h * t_h) - s_h * t_l);
  D s2 = ss * ss;
  D r = s2 * s2 * horner(s2, 5.99999999999994648725e-01, 4.28571428578550184252e-01,
                         3.33333329818377432918e-01, 2.72728123808534006489e-01,
                         2.30660745775561754067e-01, 2.06975017800338417784e-01);
  r = r + s_l * (s_h + ss);
  s2 = s_h * s_h;
  t_h = trunc32(D(3.0) + s2 + r);
  t_l = r - ((t_h - D(3.0)) - s2);
  u = s_h * t_h;
  v = s_l * t_h + t_l * ss;
  D p_h = trunc32(u + v);
  D p_l = v - (p_h - u);
  constexpr double kCp = 9.61796693925975554329e-01;  // 2/(3 ln2)
  constexpr double kCpH = 9.61796700954437255859e-01, kCpL = -7.02846165095275826516e-09;
  D z_h = D(kCpH) * p_h;
  D z_l = D(kCpL) * p_h + p_l * D(kCp) + dp_l;
  t1 = trunc32(((z_h + z_l) + dp_h) + n);
  t2 = z_l - (((t1 - n) - dp_h) - z_h);
}

// 2^(p_h + p_l) for |p_h + p_l| <= 1075.
D exp2_ext(D p_h, D p_l) {
  D nn = rint(p_h + p_l);
  p_h = p_h - nn;  // exact
  constexpr double kLg2 = 6.93147180559945286227e-01;
  constexpr double kLg2H = 6.93147182464599609375e-01, kLg2L = -1.90465429995776804525e-09;
  D t = trunc32(p_l + p_h);
  D u = t * D(kLg2H);
  D v = (p_l - (t - p_h)) * D(kLg2) + t * D(kLg2L);
  D z = u + v;
  D w = v - (z - u);
  D zz = z * z;
  D t1 = z - zz * horner(zz, 1.66666666666666019037e-01, -2.77777777770155933842e-03,
                         6.61375632143793436117e-05, -1.65339022054652515390e-06,
                         4.13813679705723846039e-08);
  D r = (z * t1) / (t1 - D(2.0)) - (w + z * w);
  return ldexp(D(1.0) - (r - z), nn);
}

// (ah + al)(bh + bl) as h + l, |l| <= ulp(h)/2 (relative error ~2^-104).
void mul_dd(D ah, D al, D bh, D bl, D& h, D& l) {
  D p, e;
  two_prod(ah, bh, p, e);
  e = e + (ah * bl + al * bh);
  h = p + e;
  l = e - (h - p);
}

// Lanes where x^y is |x|^n (times sqrt x) by multiplication: y an integer or
// half-integer with |y| <= 16, x normal (positive for half-integers) and the
// result between 2^-960 and 2^960, so every product below stays normal.
B small_pow_ok(D x, D y) {
  D ay = abs(y);
  B ok = ay <= D(16.0) && rint(ay + ay) == ay + ay;
  if (!xsimd::any(ok)) return ok;
  D ax = abs(x);
  ok = ok && ax >= D(2.2250738585072014e-308) && ax < inf();
  ok = ok && (xsimd::floor(ay) == ay || x > D(0.0));
  D e = select(ok, exponent(ax), D(0.0));
  return ok && (abs(e) + D(1.0)) * ay <= D(960.0);
}

// x^y on small_pow_ok lanes: binary powering in double-double, times
// sqrt(x) as a double-double for half-integers, 1/(.) for y < 0: one final
// rounding of a ~2^-100-accurate value, so within 0.5 ulp + tiny.
D pow_small(D x, D y, B ok) {
  D ay = select(ok, abs(y), D(0.0));
  D m = xsimd::floor(ay);
  B half = m != ay;
  D ah(1.0), al(0.0), bh = x, bl(0.0);
  for (;;) {
    D hm = xsimd::floor(m * D(0.5));
    B bit = m != hm + hm;
    D h, l;
    mul_dd(ah, al, bh, bl, h, l);
    ah = select(bit, h, ah);
    al = select(bit, l, al);
    m = hm;
    if (!xsimd::any(m > D(0.0))) break;
    mul_dd(bh, bl, bh, bl, bh, bl);
  }
  if (xsimd::any(half)) {
    D s = sqrt(select(half, x, D(1.0)));
    D p, e;
    two_prod(s, s, p, e);
    D sl = ((select(half, x, D(1.0)) - p) - e) / (s + s);
    D h, l;
    mul_dd(ah, al, s, sl, h, l);
    ah = select(half, h, ah);
    al = select(half, l, al);
  }
  B inv = y < D(0.0);
  if (xsimd::any(inv)) ah = select(inv, div_dd(D(1.0), ah, al), ah);
  return ah;
}

// x^y; log2|x| as t1 + t2 from lx(ax, t1, t2), called only where needed.
template <class Log2>
D pow_with(D x, D y, Log2&& lx) {
  // Squares are common (PyTensor keeps x**2 inside ScalarLoop bodies): x*x
  // is what the exact case below selects for y == 2, zeros, infinities and
  // NaN included.
  if (xsimd::all(y == D(2.0))) return x * x;
  B fast = small_pow_ok(x, y);
  D rf(0.0);
  if (xsimd::any(fast)) rf = pow_small(x, y, fast);
  if (xsimd::all(fast)) {
    // Only the exact cases C99 and NumPy agree on can apply here.
    rf = select(y == D(1.0), x, rf);
    rf = select(y == D(-1.0), D(1.0) / x, rf);
    rf = select(y == D(2.0), x * x, rf);
    rf = select(y == D(0.5), xsimd::sqrt(x), rf);
    return select(y == D(0.0) || x == D(1.0), D(1.0), rf);
  }
  D ax = abs(x);
  D t1, t2;
  lx(ax, t1, t2);
  D y1 = trunc32(y);
  D p_l = (y - y1) * t1 + y * t2;
  D p_h = y1 * t1;
  D z = p_l + p_h;
  constexpr double kOvt = 8.0085662595372944372e-17;  // -(1024 - log2(ovfl + .5ulp))
  B over = z > D(1024.0) || (z == D(1024.0) && p_l + D(kOvt) > z - p_h);
  B under = z < D(-1075.0) || (z == D(-1075.0) && p_l <= z - p_h);
  D r = exp2_ext(select(over || under, D(0.0), p_h), select(over || under, D(0.0), p_l));
  r = select(over, inf(), select(under, D(0.0), r));
  // Nothing below changes a lane with x > 0 finite, y finite and not one of
  // the exact cases: skip it when every lane is such.
  B plain = x > D(0.0) && ax < inf() && abs(y) < inf() && y != D(1.0) && y != D(-1.0) &&
            y != D(2.0) && y != D(0.5) && y != D(0.0) && x != D(1.0);
  if (!xsimd::any(fast) && xsimd::all(plain)) return r;

  D fy = xsimd::floor(y);
  B yint = fy == y;
  B yodd = yint && xsimd::floor(y * D(0.5)) != y * D(0.5);
  B xneg = x < D(0.0);
  r = select(xneg && yodd, neg(r), r);
  r = select(xneg && !yint, nan(), r);
  r = select(fast, rf, r);
  // Exact cases C99 and NumPy agree on.
  r = select(y == D(1.0), x, r);
  r = select(y == D(-1.0), D(1.0) / x, r);
  r = select(y == D(2.0), x * x, r);
  r = select(y == D(0.5) && x > D(0.0), xsimd::sqrt(x), r);
  // x = +-0 or +-inf: |x|^y or its reciprocal, odd powers keep the sign of x.
  B xspecial = x == D(0.0) || ax == inf();
  D zs = select(y < D(0.0), D(1.0) / ax, ax);
  zs = select(xneg && yodd, neg(zs), select(yodd, copysign(zs, x), zs));
  r = select(xspecial, zs, r);
  // y = +-inf.
  D yinf = select(ax == D(1.0), D(1.0),
                  select((ax > D(1.0)) == (y > D(0.0)), inf(), D(0.0)));
  r = select(abs(y) == inf(), yinf, r);
  // NaN in: x + y, with x first whichever order a copy compiles it in.
  r = select(is_nan(x), x + x, select(is_nan(y), y + y, r));
  r = select(y == D(0.0) || x == D(1.0), D(1.0), r);
  return r;
}

}  // namespace

D pow(D x, D y) { return pow_with(x, y, [](D ax, D& t1, D& t2) { log2_ext(ax, t1, t2); }); }

}  // namespace ember::math::simd

EMBER_MATH_ARRAY2(pow)

// r[i] = pow(x[0], y[i]): the base's log2 once for the call, as every lane
// of every batch would compute it (lanes are independent: the same bits).
EMBER_MATH_WIDE_DECL(pow_base, int64_t, const double*, const double*, double*)
EMBER_MATH_FLATTEN
void ember::math::pow_base(int64_t n, const double* x, const double* y, double* r) {
  EMBER_MATH_TO_WIDE(pow_base, n, x, y, r)
  using simd::D;
  const D xb(x[0]);
  bool have = false;
  D l1, l2;
  auto lx = [&](D ax, D& t1, D& t2) {
    if (!have) simd::log2_ext(ax, l1, l2);
    have = true;
    t1 = l1;
    t2 = l2;
  };
  detail::apply1(n, y, r, [&](D v) { return simd::pow_with(xb, v, lx); });
}
EMBER_MATH_C_ENTRY(ember_math_pow_base(int64_t n, const double* x, const double* y, double* r), pow_base(n, x, y, r))
