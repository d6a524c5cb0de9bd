// asin, acos, atan, atan2: fdlibm's rational approximations and argument
// splits (< 1 ulp), with each lane's branch chosen by select.
#include "interp/math/apply.hpp"
#include "interp/math/kernels.hpp"
#include "interp/math/math.hpp"

namespace ember::math::simd {
namespace {

constexpr double kPio2Hi = 1.57079632679489655800e+00;
constexpr double kPio2Lo = 6.12323399573676603587e-17;
constexpr double kPio4Hi = 7.85398163397448278999e-01;
constexpr double kPi = 3.14159265358979311600e+00;
constexpr double kPiLo = 1.2246467991473531772E-16;

// (asin(sqrt(z)) - sqrt(z)) / sqrt(z)^3 style rational term p(z)/q(z).
D asin_rational(D z) {
  D p = z * horner(z, 1.66666666666666657415e-01, -3.25565818622400915405e-01,
                   2.01212532134862925881e-01, -4.00555345006794114027e-02,
                   7.91534994289814532176e-04, 3.47933107596021167570e-05);
  D q = horner(z, 1.0, -2.40339491173441421878e+00, 2.02094576023350569471e+00,
               -6.88283971605453293030e-01, 7.70381505559019352791e-02);
  return p / q;
}

}  // namespace

D asin(D x) {
  D a = abs(x);
  B small = a < D(0.5);
  D t = select(small, x * x, (D(1.0) - a) * D(0.5));
  D w = asin_rational(t);
  D ysmall = x + x * w;
  D s = xsimd::sqrt(t);
  D yvery = D(kPio2Hi) - (D(2.0) * (s + s * w) - D(kPio2Lo));  // |x| > 0.975
  D w0 = trunc32(s);
  D c = (t - w0 * w0) / (s + w0);
  D p = D(2.0) * s * w - (D(kPio2Lo) - D(2.0) * c);
  D q = D(kPio4Hi) - D(2.0) * w0;
  D ymid = D(kPio4Hi) - (p - q);
  D ybig = select(a >= from_bits(0x3FEF333300000000ull), yvery, ymid);
  D y = select(small, ysmall, copysign(ybig, x));
  y = select(x == D(0.0), x, y);
  y = select(a > D(1.0), nan(), y);
  return select(is_nan(x), x, y);
}

D acos(D x) {
  D a = abs(x);
  B small = a < D(0.5);
  D z = select(small, x * x, (D(1.0) - a) * D(0.5));
  D r = asin_rational(z);
  D ysmall = D(kPio2Hi) - (x - (D(kPio2Lo) - x * r));
  D s = xsimd::sqrt(z);
  D yneg = D(kPi) - D(2.0) * (s + (r * s - D(kPio2Lo)));
  D df = trunc32(s);
  D c = (z - df * df) / (s + df);
  D ypos = D(2.0) * (df + (r * s + c));
  D y = select(small, ysmall, select(x < D(0.0), yneg, ypos));
  y = select(x == D(1.0), D(0.0), y);
  y = select(a > D(1.0), nan(), y);
  return select(is_nan(x), x, y);
}

namespace {

// atan(x) for x >= 0 (or any sign when |x| < 0.4375), fdlibm s_atan.c.
D atan_core(D x) {
  D a = abs(x);
  B r0 = a < D(0.4375), r1 = a < D(0.6875), r2 = a < D(1.1875), r3 = a < D(2.4375);
  // Reduced argument t = num/den and atan(breakpoint) = hi + lo.
  D num = select(r0, x, select(r1, D(2.0) * a - D(1.0),
                                select(r2, a - D(1.0), select(r3, a - D(1.5), D(-1.0)))));
  D den = select(r0, D(1.0), select(r1, D(2.0) + a,
                                    select(r2, a + D(1.0), select(r3, D(1.0) + D(1.5) * a, a))));
  D hi = select(r1, D(4.63647609000806093515e-01),
                select(r2, D(7.85398163397448278999e-01),
                       select(r3, D(9.82793723247329054082e-01), D(1.57079632679489655800e+00))));
  D lo = select(r1, D(2.26987774529616870924e-17),
                select(r2, D(3.06161699786838301793e-17),
                       select(r3, D(1.39033110312309984516e-17), D(6.12323399573676603587e-17))));
  D t = num / den;
  D z = t * t;
  D w = z * z;
  D s1 = z * horner(w, 3.33333333333329318027e-01, 1.42857142725034663711e-01,
                    9.09088713343650656196e-02, 6.66107313738753120669e-02,
                    4.97687799461593236017e-02, 1.62858201153657823623e-02);
  D s2 = w * horner(w, -1.99999999998764832476e-01, -1.11111104054623557880e-01,
                    -7.69187620504482999495e-02, -5.83357013379057348645e-02,
                    -3.65315727442169155270e-02);
  D ysmall = t - t * (s1 + s2);
  D ybig = hi - ((t * (s1 + s2) - lo) - t);
  return select(r0, ysmall, copysign(ybig, x));
}

}  // namespace

D atan(D x) {
  D y = atan_core(x);
  y = select(x == D(0.0), x, y);
  return select(is_nan(x), x, y);
}

D atan2(D y, D x) {
  B ny = signbit(y), nx = signbit(x);
  D ratio = abs(y) / abs(x);
  D z = atan_core(ratio);
  B steep = ratio > D(0x1p60);
  z = select(steep, D(kPio2Hi + 0.5 * kPiLo), z);
  z = select(nx && ratio < D(0x1p-60), D(0.0), z);
  nx = nx && !steep;
  D r = select(nx, select(ny, (z - D(kPiLo)) - D(kPi), D(kPi) - (z - D(kPiLo))),
               select(ny, neg(z), z));
  // Both zero: +-0 or +-pi by the signs; both infinite: odd multiples of pi/4.
  D zero_case = select(nx, copysign(D(kPi), y), y);
  r = select(y == D(0.0) && x == D(0.0), zero_case, r);
  D inf_case = copysign(select(nx, D(3.0 * kPio4Hi), D(kPio4Hi)), y);
  r = select(abs(x) == inf() && abs(y) == inf(), inf_case, r);
  return select(is_nan(x) || is_nan(y), x + y, r);
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY1(asin)
EMBER_MATH_ARRAY1(acos)
EMBER_MATH_ARRAY1(atan)
EMBER_MATH_ARRAY2(atan2)
