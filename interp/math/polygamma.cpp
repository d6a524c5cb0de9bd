// polygamma(n, x) as scipy.special: digamma for n = 0, else
// (-1)^(n+1) n! zeta(n + 1, x) with the Hurwitz zeta function.
// zeta(s, q) is Cephes' Euler-Maclaurin sum (terms to q + 9, then 12
// Bernoulli corrections), every term scaled by c^-s, c = 2^-e a power of two
// with q*c (or, for q < 0, the distance to the nearest integer) in [1, 2):
// zeta itself underflows for large s and q where n! zeta does not, so the
// power of two is applied after the product with n!.
// For q < 0 the m terms with q + k < 0 are summed as Cephes does when m is
// small, else folded into zeta at 1 - f and 1 - q (f = q - floor q), so the
// cost does not grow with |q| (SciPy sums them one by one).
#include <array>

#include "interp/math/math.hpp"
#include "interp/math/special.hpp"

namespace ember::math::simd {
namespace {
using namespace special;

// (2k)! / B_2k, k = 1..12 (Cephes zeta.c).
constexpr double kZetaA[] = {12.0,
                             -720.0,
                             30240.0,
                             -1209600.0,
                             47900160.0,
                             -1.8924375803183791606e9,
                             7.47242496e10,
                             -2.950130727918164224e12,
                             1.1646782814350067249e14,
                             -4.5979787224074726105e15,
                             1.8152105401943546773e17,
                             -7.1661652561756670113e18};
constexpr double kMachEp = 1.11022302462515654042e-16;
// Negative terms summed directly up to this many; past it the fold's
// zeta(s, 1 - q) is below 1/16 of zeta(s, 1 - f), so it cancels little.
constexpr int kDirectTerms = 16;

// n! for n = 0..170, correctly rounded: double-double products at compile time.
constexpr std::array<double, 171> make_factorials() {
  std::array<double, 171> t{};
  double hi = 1.0, lo = 0.0;
  t[0] = 1.0;
  for (int k = 1; k <= 170; ++k) {
    // hi * k = p + e exactly (Dekker; k < 2^26 needs no split; hi split
    // at 2^-60 scale so the splitting product cannot overflow).
    double p = hi * k;
    double hs = hi * 0x1p-60, ca = 134217729.0 * hs;
    double ah = (ca - (ca - hs)) * 0x1p60, al = hi - ah;
    double e = ((ah * k - p) + al * k) + lo * k;
    hi = p + e;
    lo = e - (hi - p);
    t[k] = hi;
  }
  return t;
}
constexpr std::array<double, 171> kFactorial = make_factorials();

// n! lane by lane for integer n in [0, 170]; inf above.
D factorial(D n) {
  alignas(64) double v[D::size];
  n.store_aligned(v);
  for (double& x : v) x = x <= 170.0 ? kFactorial[static_cast<int>(x)] : __builtin_inf();
  return D::load_aligned(v);
}

// x * 2^k for integer-valued k of any size (steps of at most 2^1000: x is
// within 2^-200 .. 2^1020 here, so three of them reach 0 or inf).
D scale2(D x, D k) {
  for (int i = 0; i < 3; ++i) {
    D step = xsimd::min(xsimd::max(k, D(-1000.0)), D(1000.0));
    x = x * pow2i(step);
    k = k - step;
  }
  return x;
}

// c^-s zeta(s, q) for s > 1 an integer when q < 0, q finite and not a pole,
// c a power of two (other lanes give garbage).
D zeta_scaled(D s, D q, D c) {
  D sum = pow(q * c, neg(s));
  D a = q, b(0.0);
  B done = sum == inf();  // the sum can only grow: inf already
  // Terms up to a > 9 (at least nine of them) unless one is below eps of the
  // sum. For q >= 2^20 none: the tail series at w = q converges at once, and
  // past 2^53 q + 1 would round back to q.
  B big = q >= D(0x1p20);
  for (int i = 0;; ++i) {
    B m = !done && !big && (D(double(i)) < D(9.0) || a <= D(9.0));
    if (!xsimd::any(m)) break;
    a = select(m, a + D(1.0), a);
    D t = pow(a * c, neg(s));
    b = select(m, t, b);
    sum = select(m, sum + t, sum);
    done = done || (m && abs(t / sum) < D(kMachEp));
  }
  // Euler-Maclaurin tail at w = a: w^(1-s)/(s-1) = w b/(s-1), - b/2, Bernoulli terms.
  D w = a;
  b = select(big, sum, b);
  sum = select(done, sum, sum + w * b / (s - D(1.0)) - D(0.5) * b);
  D f(1.0), k(0.0);
  for (double cz : kZetaA) {
    if (xsimd::all(done)) break;
    f = f * (s + k);
    b = b / w;
    D t = f * b / D(cz);
    sum = select(done, sum, sum + t);
    done = done || abs(t / sum) < D(kMachEp);
    k = k + D(1.0);
    f = f * (s + k);
    b = b / w;
    k = k + D(1.0);
  }
  return sum;
}

// The exponent e of positive finite x, at least -1000 so that 2^-e is a
// normal double (below, x^-s overflows whatever the scale).
D scale_exponent(D x) { return xsimd::max(exponent(x), D(-1000.0)); }

// c^-s zeta(s, q) for q < 0 not an integer, c the unit scale of the distance
// to the nearest integer (lanes outside `lanes` give garbage).
D zeta_scaled_neg(D s, D q, D c, B lanes) {
  D fl = xsimd::floor(q);
  D f = q - fl;  // exact unless |q| < 2^-53 (then q^-s dwarfs the rest)
  // Few negative terms: Cephes' sum from q upwards, as SciPy (at half
  // integers the pairs of terms then cancel exactly, as there).
  B direct = lanes && fl >= D(-double(kDirectTerms));
  B fold = lanes && !direct;
  D r = zeta_scaled(s, select(direct, q, select(fold, f, D(1.0))), c);
  if (xsimd::any(fold)) {
    // sum_{k: q+k<0} (q+k)^-s = (-1)^s (zeta(s, 1 - f) - zeta(s, 1 - q)),
    // 1 - f = ceil(q) - q exactly; the first two zetas combined first.
    D g = select(fold, xsimd::ceil(q) - q, D(1.0));
    D h = select(fold, D(1.0) - q, D(2.0));
    D zg = zeta_scaled(s, g, c), zh = zeta_scaled(s, h, c);
    D half = s * D(0.5);
    B odd = xsimd::floor(half) != half;
    r = select(fold, select(odd, (r - zg) + zh, (r + zg) - zh), r);
  }
  return r;
}

}  // namespace

D polygamma(D n, D x) {
  B pos = n > D(0.0) && n < inf() && is_int(n);
  D nn = select(pos, n, D(1.0));
  D s = nn + D(1.0);
  // (-1)^(n+1): negative for even n.
  D half = nn * D(0.5);
  D sign = select(xsimd::floor(half) == half, D(-1.0), D(1.0));
  D g = factorial(xsimd::min(nn, D(171.0)));

  B neg_x = x < D(0.0);
  B pole = x == D(0.0) || (neg_x && is_int(x));  // also -inf
  B fin_pos = x > D(0.0) && x < inf();
  B fin_neg = neg_x && !pole;
  // Scale from x (x > 0) or from the distance to the nearest integer (x < 0).
  D d = select(fin_neg, xsimd::min(x - xsimd::floor(x), xsimd::ceil(x) - x), x);
  D e = scale_exponent(select(fin_pos || fin_neg, d, D(1.0)));
  D c = pow2i(neg(e));
  D sz = zeta_scaled(s, select(fin_pos, x, D(1.0)), c);
  if (xsimd::any(fin_neg)) sz = select(fin_neg, zeta_scaled_neg(s, x, c, fin_neg), sz);
  // zeta = sz * c^s. For x >= 1 one factor c goes in before n! (c <= 1 and
  // sz*c is at most ~2 there); else sz is at most ~2 already.
  B pre = fin_pos && x >= D(1.0);
  D r = scale2(sign * g * select(pre, sz * c, sz), neg(e) * select(pre, s - D(1.0), s));
  // n > 170: n! is inf, and so is the product unless zeta underflows (NaN, as SciPy).
  r = select(g == inf(), sign * g * scale2(sz, neg(e) * s), r);
  r = select(pole, sign * inf(), r);
  r = select(x == inf(), sign * g * D(0.0), r);
  r = select(is_nan(x), x, r);
  B n0 = n == D(0.0);
  if (xsimd::any(n0)) r = select(n0, digamma(x), r);
  // Negative, fractional or non-finite n: NaN (SciPy's (-1)^(n+1) or zeta(n+1, x)).
  return select(pos || n0, r, nan());
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY2(polygamma)
