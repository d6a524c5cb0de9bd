// Regularized incomplete gamma P(a, x) and Q(a, x) as SciPy's gammainc and
// gammaincc: the Cephes power series for P, its continued fraction for Q,
// and the small-x series for Q (Temme form, as SciPy), chosen per lane by
// SciPy's rules; Q at an integer a up to 16 is the finite sum. The prefactor
// x^a e^-x / Gamma(a) is formed around x = a (a log1pmx((x - a)/a) plus
// Stirling's correction) for a >= 10, so large a does not cancel two huge
// logarithms.
// Every loop runs its recurrence on all lanes and freezes only its result
// where a lane has converged: a select on the stop mask inside the
// recurrence put the stop test's divisions on the loop's dependency chain
// (a one-element call ran 5-7 times slower than the scalar loop). The
// continued fractions rescale their convergents behind a branch, taken
// every ten or so terms, for the same reason: a scale factor of 1 is exact.
#include "interp/math/math.hpp"
#include "interp/math/special.hpp"

namespace ember::math::simd {
namespace {
using namespace special;

constexpr double kEps = 1.11022302462515654042e-16;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr int kMaxIter = 5000;

// x^a e^-x / Gamma(a). Each form only when a lane takes it: every lane's
// value is its own form's either way.
D prefactor(D a, D x) {
  const B large = a >= D(10.0);
  D r(0.0);
  if (!xsimd::all(large)) r = exp(a * log(x) - x - lgamma_pos(a));
  if (xsimd::any(large)) {
    D al = select(large, a, D(10.0));
    r = select(large, sqrt(al) * D(kInvSqrt2Pi) * exp(al * log1pmx((x - al) / al, x / al) - stirling_corr(al)), r);
  }
  return r;
}

// lgamma(1 + a) for 0 < a <= 1.5, accurate as a -> 0.
D lgamma1p(D a) {
  const B small = a <= D(0.5);
  D r(0.0);
  if (!xsimd::all(small)) r = lgamma_pos(a + D(1.0));
  if (xsimd::any(small)) {
    D e = select(small, a, D(0.0));
    r = select(small, lgamma2p(e) - log1p(e), r);
  }
  return r;
}

// Power series: P(a, x) = x^a e^-x / Gamma(a + 1) * sum x^n / ((a+1)...(a+n)).
// pf: prefactor(a, x) on the lanes `on`.
D p_series(D a, D x, B on, D pf) {
  D run(1.0), c(1.0), r = a, sum(1.0);
  B act = on;
  for (int i = 0; i < kMaxIter && xsimd::any(act); ++i) {
    r = r + D(1.0);
    c = c * (x / r);
    run = run + c;
    sum = select(act, run, sum);
    act = act && (c > run * D(kEps));
  }
  return sum * pf / a;
}

// Continued fraction for Q(a, x), x > 1.1 and x >= a (Cephes igamc).
D q_fraction(D a, D x, B on, D pf) {
  const D big(4.503599627370496e15), biginv(2.22044604925031308085e-16);
  D y = D(1.0) - a, z = x + y + D(1.0), c(0.0);
  D pkm2(1.0), qkm2 = x, pkm1 = x + D(1.0), qkm1 = z * x;
  D last = pkm1 / qkm1, ans = last;
  B act = on;
  for (int i = 0; i < kMaxIter && xsimd::any(act); ++i) {
    c = c + D(1.0);
    y = y + D(1.0);
    z = z + D(2.0);
    D yc = y * c;
    D pk = pkm1 * z - pkm2 * yc;
    D qk = qkm1 * z - qkm2 * yc;
    B nz = qk != D(0.0);
    D r = pk / qk;
    D t = select(nz, abs((last - r) / r), D(1.0));
    last = select(nz, r, last);
    ans = select(act, last, ans);
    pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
    if (const B scale = abs(pk) > big; xsimd::any(scale)) {
      const D f = select(scale, biginv, D(1.0));
      pkm2 = pkm2 * f, pkm1 = pkm1 * f, qkm2 = qkm2 * f, qkm1 = qkm1 * f;
    }
    act = act && !(t <= D(kEps));
  }
  return ans * pf;
}

// Q(a, x) for x <= 1.1 and small a (SciPy igamc_series, after Temme).
D q_small_x(D a, D x, B on) {
  D fac(1.0), run(0.0), sum(0.0);
  B act = on;
  for (int n = 1; n < kMaxIter && xsimd::any(act); ++n) {
    D dn(static_cast<double>(n));
    fac = fac * (neg(x) / dn);
    D term = fac / (a + dn);
    run = run + term;
    sum = select(act, run, sum);
    act = act && (abs(term) > abs(run) * D(kEps));
  }
  D logx = log(x);
  D head = neg(expm1(a * logx - lgamma1p(a)));
  return head - exp(a * logx - lgamma_pos(a)) * sum;
}

// Q(n, x) for integer n: e^-x * sum_{k<n} x^k / k!, every term positive,
// so within about n + 2 ulps (Q(1, x) = e^-x, a zero-truncated Poisson's
// normalizer). Lanes not `on` compute garbage the caller drops.
constexpr double kSumMaxA = 16, kSumMaxX = 700;  // e^-x stays normal
D q_integer(D a, D x, B on) {
  D term(1.0), sum(1.0);
  for (int k = 1; k < static_cast<int>(kSumMaxA); ++k) {
    const B more = on && D(static_cast<double>(k)) < a;
    if (!xsimd::any(more)) break;
    term = select(more, term * x / D(static_cast<double>(k)), term);
    sum = select(more, sum + term, sum);
  }
  return sum * exp(neg(x));
}

enum class Which { P, Q };

template <Which W>
D incomplete_gamma(D a, D x) {
  B valid = a > D(0.0) && x > D(0.0) && x < inf() && a < inf();
  D av = select(valid, a, D(1.0));
  D xv = select(valid, x, D(0.5));
  // SciPy's choice of method for Q.
  B use_cf = xv > D(1.1) && !(xv < av);
  B mid_p = (xv <= D(0.5) && D(-0.4) / log(xv) < av) || (xv > D(0.5) && xv * D(1.1) < av);
  B q_by_p = (xv > D(1.1) && xv < av) || (xv <= D(1.1) && mid_p);
  B use_t = !use_cf && !q_by_p;
  B p_direct = !(xv > D(1.0) && xv > av);
  // Q at a small integer a: the finite sum, no series.
  const B int_a = W == Which::Q ? valid && av <= D(kSumMaxA) && rint(av) == av && xv <= D(kSumMaxX) : B(false);
  B need_s = valid && !int_a && (W == Which::P ? p_direct : q_by_p);
  B need_q = W == Which::Q ? B(true) : !p_direct;
  B need_c = valid && !int_a && use_cf && need_q;
  B need_t = valid && !int_a && use_t && need_q;
  // The prefactor once for the series' and the fraction's lanes (a batch
  // of both computed it twice): the same value on each lane.
  D pf(0.0);
  if (xsimd::any(need_s || need_c)) pf = prefactor(av, xv);
  D s(0.0);
  if (xsimd::any(need_s)) s = p_series(select(need_s, av, D(1.0)), select(need_s, xv, D(0.5)), need_s, pf);
  D q = select(q_by_p, D(1.0) - s, D(0.0));
  if (xsimd::any(int_a)) q = select(int_a, q_integer(av, xv, int_a), q);
  if (xsimd::any(need_c))
    q = select(need_c, q_fraction(select(need_c, av, D(1.0)), select(need_c, xv, D(2.0)), need_c, pf), q);
  if (xsimd::any(need_t))
    q = select(need_t, q_small_x(select(need_t, av, D(0.5)), select(need_t, xv, D(0.5)), need_t), q);
  D r = W == Which::P ? select(p_direct, s, D(1.0) - q) : q;
  // Edges as SciPy: x = 0 -> P = 0; a = 0 (x > 0) or x = inf -> P = 1; a = inf -> P = 0.
  D p0 = W == Which::P ? D(0.0) : D(1.0);
  D p1 = W == Which::P ? D(1.0) : D(0.0);
  r = select(x == D(0.0) && a > D(0.0), p0, r);
  r = select(a == inf() && x < inf(), p0, r);
  r = select((a == D(0.0) && x > D(0.0)) || (x == inf() && a < inf()), p1, r);
  B bad = a < D(0.0) || x < D(0.0) || (a == D(0.0) && x == D(0.0)) || (a == inf() && x == inf());
  return select(bad || is_nan(a) || is_nan(x), nan(), r);
}

// dP/da and dQ/da as PyTensor's gammainc_grad (pytensor/scalar/math.py): the
// power series of P differentiated term by term, or the convergents of Q's
// continued fraction differentiated through their recurrence; each runs to
// full precision or NaN after kDerMaxIter terms, as PyTensor's loops. Their
// stop tests use machine epsilon (np.finfo.eps), not Cephes' half of it:
// half needs the last convergents to agree to half an ulp, which rounding
// meets late or by chance (59 terms instead of 18, 337 instead of 24).
constexpr int kDerMaxIter = 100000;
constexpr double kDerEps = 2.22044604925031308085e-16;
constexpr double kLogTiny = -708.39641853226410622;  // log(DBL_MIN)

// x^a e^-x / Gamma(a + 1).
D prefactor1p(D a, D x) {
  const B large = a >= D(10.0);
  D r(0.0);
  if (!xsimd::all(large)) r = exp(a * log(x) - x - lgamma1p(a));
  if (xsimd::any(large)) r = select(large, prefactor(select(large, a, D(10.0)), x) / a, r);
  return r;
}

// dP/da from P = x^a e^-x / Gamma(a + 1) * sum t_n, t_n = t_{n-1} x / (a + n).
[[gnu::noinline]] D p_series_da(D a, D x, B on) {
  D rs(1.0), rds(0.0), t(1.0), dt(0.0), an = a, s(1.0), ds(0.0);
  B act = on;
  for (int i = 0; i < kDerMaxIter && xsimd::any(act); ++i) {
    an = an + D(1.0);
    D r = x / an;
    dt = r * (dt - t / an);
    t = t * r;
    rs = rs + t;
    rds = rds + dt;
    s = select(act, rs, s);
    ds = select(act, rds, ds);
    act = act && !(t <= D(kDerEps) * rs && abs(dt) <= D(kDerEps) * abs(rds));
  }
  D g = prefactor1p(a, x) * (s * (log(x) - digamma(a + D(1.0))) + ds);
  return select(act, nan(), g);
}

// dQ/da from the convergents p_n / q_n of Cephes igamc's continued fraction
// (rescaled by eps, exactly, before they overflow, as PyTensor).
[[gnu::noinline]] D q_fraction_da(D a, D x, B on) {
  D lx = log(x);
  D log_pf = a * lx - x - lgamma_pos(a);
  const B under = log_pf < D(kLogTiny) && a > D(0.0);
  D pm2(1.0), pm1 = x + D(1.0), qm2 = x, qm1 = (x + D(2.0) - a) * x;
  D dpm2(0.0), dpm1(0.0), dqm2(0.0), dqm1 = neg(x);
  D fl = pm1 / qm1, dfl = fl * x / qm1, n(0.0), f = fl, df = dfl;
  B act = on && !under;
  for (int i = 0; i < kDerMaxIter && xsimd::any(act); ++i) {
    n = n + D(1.0);
    D z = x + D(2.0) * n + D(2.0) - a;
    D yn = (n + D(1.0) - a) * n;
    D p = pm1 * z - pm2 * yn, q = qm1 * z - qm2 * yn;
    D dp = dpm1 * z - pm1 - dpm2 * yn + pm2 * n;
    D dq = dqm1 * z - qm1 - dqm2 * yn + qm2 * n;
    B nz = q != D(0.0);
    D fn = select(nz, p / q, fl);
    D dfn = select(nz, (dp - fn * dq) / q, dfl);
    B done = nz && abs(fn - fl) <= D(kDerEps) * abs(fn) && abs(dfn - dfl) <= D(kDerEps) * abs(dfn);
    fl = fn;
    dfl = dfn;
    f = select(act, fn, f);
    df = select(act, dfn, df);
    pm2 = pm1, pm1 = p, qm2 = qm1, qm1 = q;
    dpm2 = dpm1, dpm1 = dp, dqm2 = dqm1, dqm1 = dq;
    if (const B big = abs(p) > D(1.0 / kDerEps); xsimd::any(big)) {
      const D sc = select(big, D(kDerEps), D(1.0));
      pm2 = pm2 * sc, pm1 = pm1 * sc, qm2 = qm2 * sc, qm1 = qm1 * sc;
      dpm2 = dpm2 * sc, dpm1 = dpm1 * sc, dqm2 = dqm2 * sc, dqm1 = dqm1 * sc;
    }
    act = act && !done;
  }
  const B large = a >= D(10.0);
  D pf = exp(log_pf);
  if (xsimd::any(large)) pf = select(large, prefactor(select(large, a, D(10.0)), x), pf);
  D g = pf * (f * (lx - digamma(a)) + df);
  // a = 0: x^a e^-x / Gamma(a) -> 0 and -psi(a) -> infinity, their product -> e^-x.
  g = select(a == D(0.0), exp(neg(x)) * f, g);
  return select(under, D(0.0), select(act, nan(), g));
}

}  // namespace

D gammainc(D a, D x) { return incomplete_gamma<Which::P>(a, x); }
D gammaincc(D a, D x) { return incomplete_gamma<Which::Q>(a, x); }

// PyTensor's choice: the series where x <= max(a, 1), else the fraction;
// 0 at x = 0 and x = inf, NaN for a < 0, x < 0 and a = inf.
D gammainc_da(D a, D x) {
  B nan_in = a < D(0.0) || x < D(0.0) || is_nan(a) || is_nan(x);
  B zero = x == D(0.0) || x == inf();
  B on = !nan_in && !zero && a < inf();
  B series = x <= D(1.0) || x <= a;
  B s_on = on && series, c_on = on && !series;
  D r(0.0);
  if (xsimd::any(s_on)) r = select(s_on, p_series_da(select(s_on, a, D(1.0)), select(s_on, x, D(0.5)), s_on), r);
  if (xsimd::any(c_on))
    r = select(c_on, neg(q_fraction_da(select(c_on, a, D(1.0)), select(c_on, x, D(2.0)), c_on)), r);
  return select(nan_in, nan(), select(zero, D(0.0), select(on, r, nan())));
}

}  // namespace ember::math::simd

EMBER_MATH_ARRAY2(gammainc)
EMBER_MATH_ARRAY2(gammaincc)
EMBER_MATH_ARRAY2(gammainc_da)
