// erf, erfc, erfcx and their inverses. Rational approximations use the
// published Cephes coefficients (ndtr.c, ndtri.c); exp(-x^2) is computed from
// an exact split of x^2 so its rounding is not magnified by |x|^2; the
// inverses start from Cephes ndtri and take one Newton step on erf/erfc.
#include "interp/math/math.hpp"
#include "interp/math/special.hpp"

namespace ember::math::simd {
namespace {
using namespace special;

constexpr double kP[] = {2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
                         4.86371970985681366614E1,   1.96520832956077098242E2,  5.26445194995477358631E2,
                         9.34528527171957607540E2,   1.02755188689515710272E3,  5.57535335369399327526E2};
constexpr double kQ[] = {1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
                         9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
                         1.65666309194161350182E3, 5.57535340817727675546E2};
constexpr double kR[] = {5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
                         6.16021097993053585195E0,  7.40974269950448939160E0, 2.97886665372100240670E0};
constexpr double kS[] = {2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
                         1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0};
constexpr double kT[] = {9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
                         7.00332514112805075473E3, 5.55923013010394962768E4};
constexpr double kU[] = {3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
                         2.26290000613890934246E4, 4.92673942608635921086E4};
constexpr double kInvSqrtPi = 0.56418958354775628695;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrtPiOver2 = 0.88622692545275801365;
constexpr double kLn2 = 0.69314718055994530942;

// exp(s * x^2), s = +-1, with x^2 split exactly into hi^2 + rest.
D exp_sq(D x, double s) {
  D hi = trunc32(x);
  D lo = x - hi;
  return exp(D(s) * (hi * hi)) * exp(D(s) * ((x + hi) * lo));
}

// erfcx(0.75 + h), |h| <= 0.25: Taylor coefficients k = 19..0 (mpmath). Used for
// erfc and erfcx on [0.5, 1), where 1 - erf(x) would lose up to 3 bits.
constexpr double kErfcx075[] = {
    -1.0639550902512525e-08, 3.750604434348139e-08, -1.2920526683148003e-07, 4.3445834921494253e-07,
    -1.424088529978787e-06, 4.543733191203631e-06, -1.4088463868243626e-05, 4.237248023960813e-05,
    -0.00012335437532328967, 0.0003467506629301161, -0.0009385120614756802, 0.0024376373607573405,
    -0.006051532297208567, 0.014289198665935787, -0.03189726203968182, 0.06679054252756873,
    -0.1298360619948811, 0.2309581315512983, -0.3679726916557954, 0.5069376502931449};
D erfcx_mid(D x) { return polevl(x - D(0.75), kErfcx075); }

// erf for |x| < 1 (odd rational in x).
D erf_small(D x) {
  D z = x * x;
  return x * polevl(z, kT) / p1evl(z, kU);
}

// erfc(x) * exp(x^2) for x >= 1. A piece no lane of the batch needs is not
// computed (the selects would drop it): the bits are the same either way.
D erfcx_large(D x) {
  const B near = x < D(8.0);
  if (xsimd::all(near)) return polevl(x, kP) / p1evl(x, kQ);
  // Asymptotic series beyond the range of R/S: (1/(x sqrt(pi))) sum (-1)^k (2k-1)!!/(2x^2)^k.
  D r(0.0);
  if (xsimd::any(!(x < D(26.0)))) {
    D w = D(1.0) / (D(2.0) * x * x);
    D series = horner(w, 1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0);
    r = D(kInvSqrtPi) / x * series;
  }
  if (xsimd::any(x < D(26.0) && !near)) r = select(x < D(26.0), polevl(x, kR) / p1evl(x, kS), r);
  if (xsimd::any(near)) r = select(near, polevl(x, kP) / p1evl(x, kQ), r);
  return r;
}

// erfc for x >= 1 (0 once exp(-x^2) underflows), given e = exp_sq(x, -1).
D erfc_large(D x, D e) {
  D r = e * erfcx_large(select(x < D(27.5), x, D(27.5)));
  return select(x < D(27.5), r, D(0.0));
}

}  // namespace

// Each function below computes a region's formula only when some lane of the
// batch is in it; the selects then give every lane the bits they gave when
// every formula was computed for all lanes.
D erf(D x) {
  D a = abs(x);
  const B small = a < D(1.0);
  D r(0.0);
  if (!xsimd::all(small)) {
    D t = select(small, D(1.0), a);
    r = copysign(D(1.0) - erfc_large(t, exp_sq(t, -1.0)), x);
  }
  if (xsimd::any(small)) r = select(small, erf_small(x), r);
  return select(is_nan(x), x, r);
}

D erfc(D x) {
  D a = abs(x);
  const B small = a < D(1.0);
  const B mid = x >= D(0.5) && x < D(1.0);
  // One exp(-t^2) serves both the large lanes (t = |x|) and the mid ones
  // (t = x); other lanes take t = 1, whose result no select keeps.
  const bool any_mid = xsimd::any(mid), all_small = xsimd::all(small);
  D t = select(small, D(1.0), a);
  if (any_mid) t = select(mid, x, t);
  D e(0.0);
  if (any_mid || !all_small) e = exp_sq(t, -1.0);
  D r(0.0);
  if (!all_small) {
    D large = erfc_large(select(small, D(1.0), a), e);
    r = select(x < D(0.0), D(2.0) - large, large);
  }
  if (xsimd::any(small)) r = select(small, D(1.0) - erf_small(select(small, x, D(0.0))), r);
  if (any_mid) r = select(mid, e * erfcx_mid(select(mid, x, D(0.75))), r);
  return select(is_nan(x), x, r);
}

D erfcx(D x) {
  D a = abs(x);
  const B small = a < D(1.0);
  const B neg_side = x <= D(-1.0);
  const bool all_small = xsimd::all(small);
  D large(0.0);
  if (!all_small) {
    large = erfcx_large(select(small, D(1.0), select(a < D(1e300), a, D(1e300))));
    // Beyond 1e300 only the leading term matters and squaring would overflow.
    large = select(a < D(1e300), large, D(kInvSqrtPi) / a);
  }
  D ex2(0.0);
  if (xsimd::any(small || neg_side)) ex2 = exp_sq(select(a < D(26.7), x, D(0.0)), 1.0);
  D r = large;
  if (xsimd::any(small)) r = select(small, ex2 * (D(1.0) - erf_small(select(small, x, D(0.0)))), r);
  const B mid = x >= D(0.5) && x < D(1.0);
  if (xsimd::any(mid)) r = select(mid, erfcx_mid(select(small, x, D(0.75))), r);
  // Negative x: erfcx(x) = 2 exp(x^2) - erfcx(-x), infinite once exp(x^2) overflows.
  if (xsimd::any(neg_side)) r = select(neg_side, select(a < D(26.7), D(2.0) * ex2 - large, inf()), r);
  return select(is_nan(x), x, r);
}

namespace {

// Cephes ndtri pieces: central for p - 0.5 = w (|w| < 0.5 - exp(-2)), tail for small p.
constexpr double kP0[] = {-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
                          1.39312609387279679503E1, -1.23916583867381258016E0};
constexpr double kQ0[] = {1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
                          -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
                          1.59056225126211695515E1, -1.18331621121330003142E0};
constexpr double kP1[] = {4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
                          4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
                          -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4};
constexpr double kQ1[] = {1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
                          1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
                          -3.80806407691578277194E-2, -9.33259480895457427372E-4};
constexpr double kP2[] = {3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
                          1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
                          3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9};
constexpr double kQ2[] = {6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
                          2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
                          2.89247864745380683936E-6, 6.79019408009981274425E-9};
constexpr double kSqrt2Pi = 2.50662827463100050242E0;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kCentral = 0.72932943352677461622;  // 1 - 2 exp(-2)

// erfinv(y) for |y| < kCentral: ndtri(0.5 + y/2) / sqrt(2).
D inv_central(D y) {
  D w = D(0.5) * y;
  D w2 = w * w;
  D r = w + w * (w2 * polevl(w2, kP0) / p1evl(w2, kQ0));
  return r * D(kSqrt2Pi * kSqrtHalf);
}

// erfcinv(q) for 0 < q <= 1 - kCentral: -ndtri(q/2) / sqrt(2).
D inv_tail(D q) {
  // q/2 would round (to 0 for q = 5e-324) below the normal range: subtract log 2 instead.
  D log_half_q = select(q < D(4.4501477170144028e-308), log(q) - D(kLn2), log(D(0.5) * q));
  D t = sqrt(D(-2.0) * log_half_q);
  D x0 = t - log(t) / t;
  D z = D(1.0) / t;
  D x1 = z * select(t < D(8.0), polevl(z, kP1) / p1evl(z, kQ1), polevl(z, kP2) / p1evl(z, kQ2));
  return (x0 - x1) * D(kSqrtHalf);
}

// Solves erfc(x) = q for x >= 0 given q in (0, 1], refining the start x by one Newton step.
D newton_erfc(D x, D q) {
  D slope = D(kTwoOverSqrtPi) * exp_sq(x, -1.0);
  return x + (erfc(x) - q) / slope;
}
// Same in log space, for q below ~1e-280 where erfc(x) and the slope lose
// bits to underflow: log erfc(x) = -x^2 + log erfcx(x), d/dx = -2/(sqrt(pi) erfcx(x)).
D newton_erfc_log(D x, D q) {
  D hi = trunc32(x);
  D lo = x - hi;
  D cx = erfcx(x);
  D d = ((neg(hi * hi) - log(q)) - (x + hi) * lo) + log(cx);
  return x + d * cx * D(kSqrtPiOver2);
}
D newton_erf(D x, D y) {
  D slope = D(kTwoOverSqrtPi) * exp_sq(x, -1.0);
  return x - (erf(x) - y) / slope;
}

}  // namespace

D erfinv(D y) {
  D a = abs(y);
  B central = a < D(kCentral);
  D q = D(1.0) - a;  // exact for a >= 0.5
  // Each path only when a lane takes it (lanes are independent: the same bits).
  D xc(0.0), xt(0.0);
  if (xsimd::any(central)) xc = newton_erf(inv_central(select(central, y, D(0.0))), select(central, y, D(0.0)));
  if (!xsimd::all(central)) {
    D qt = select(central || !(q > D(0.0)), D(0.25), q);
    xt = copysign(newton_erfc(inv_tail(qt), qt), y);
  }
  // Below ~1e-9 the first Taylor term is exact to rounding; avoids underflow in the step.
  D r = select(a < D(1e-9), y * D(0.88622692545275801365), select(central, xc, xt));
  r = select(a == D(1.0), copysign(inf(), y), r);
  return select(a > D(1.0) || is_nan(y), nan(), r);
}

D erfcinv(D q) {
  // erfcinv(q) = erfinv(1 - q); the tails use q or 2 - q directly (exact).
  B lo = q < D(1.0 - kCentral);
  B hi = q > D(1.0 + kCentral);
  B mid = !(lo || hi);
  D y = D(1.0) - q;
  D ym = select(mid, y, D(0.0));
  D xm(0.0), xt(0.0);
  if (xsimd::any(mid)) xm = newton_erf(inv_central(ym), ym);
  if (!xsimd::all(mid)) {
    D qt = select(lo && q > D(0.0), q, select(hi && q < D(2.0), D(2.0) - q, D(0.25)));
    D x0 = inv_tail(qt);
    xt = newton_erfc(x0, qt);
    if (xsimd::any(qt < D(1e-280))) xt = select(qt < D(1e-280), newton_erfc_log(x0, qt), xt);
  }
  D r = select(mid, xm, select(lo, xt, neg(xt)));
  r = select(q == D(0.0), inf(), select(q == D(2.0), -inf(), r));
  return select(q < D(0.0) || q > D(2.0) || is_nan(q), nan(), r);
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY1(erf)
EMBER_MATH_ARRAY1(erfc)
EMBER_MATH_ARRAY1(erfcx)
EMBER_MATH_ARRAY1(erfinv)
EMBER_MATH_ARRAY1(erfcinv)
