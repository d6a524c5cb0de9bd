"""The suite's PyMC model families: name -> builder(seed) returning a pm.Model.

Sizes are small to medium, as users sample them; data are simulated from each
model's own structure with a fixed seed, so every run builds the same graph.
Families already in ember.testing.models are reused at suite sizes.
"""

import os
import sys
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pymc.exceptions import ImputationWarning  # noqa: E402
from ember.testing import models as tm  # noqa: E402


def radon(rng):
    return tm.radon(counties=85, n=900)


def eight_schools(rng):
    return tm.eight_schools_noncentered()


def seed_gamma(rng):
    return tm.seed_gamma(groups=12, shared=16)


def seed_lognormal(rng):
    return tm.seed_lognormal(groups=18, shared=24)


def logistic_glm(rng):
    return tm.logistic_glm(groups=20, n=2000, k=3)


def poisson_glm(rng):
    return tm.poisson_glm(n=1000, k=2)


def mvnormal_lkj(rng):
    return tm.mvnormal_lkj(n=200, d=3)


def negative_binomial(rng, n=800, k=4):
    X = rng.normal(size=(n, k))
    mu = np.exp(1.0 + X @ rng.normal(0, 0.4, size=k))
    y = rng.negative_binomial(5.0, 5.0 / (5.0 + mu))
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 1.0, shape=k)
        alpha = pm.Exponential("alpha", 0.2)
        pm.NegativeBinomial("y", mu=pt.exp(a + pt.dot(X, b)), alpha=alpha, observed=y)
    return model


def ordinal_regression(rng, n=600, k=3, levels=5):
    X = rng.normal(size=(n, k))
    eta = X @ np.array([1.0, -0.5, 0.3])[:k]
    cuts_true = np.linspace(-2, 2, levels - 1)
    y = np.sum(eta[:, None] + rng.logistic(size=(n, 1)) > cuts_true, axis=1)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=k)
        cuts = pm.Normal("cuts", 0.0, 3.0, shape=levels - 1, transform=pm.distributions.transforms.ordered,
                         initval=np.linspace(-1, 1, levels - 1))
        pm.OrderedLogistic("y", eta=pt.dot(X, beta), cutpoints=cuts, observed=y)
    return model


def dirichlet_multinomial(rng, n=200, k=6, total=30):
    p = rng.dirichlet(np.full(k, 2.0), size=n)
    y = np.array([rng.multinomial(total, pi) for pi in p])
    with pm.Model() as model:
        frac = pm.Dirichlet("frac", a=np.ones(k))
        conc = pm.Lognormal("conc", 1.0, 1.0)
        pm.DirichletMultinomial("y", n=total, a=frac * conc * k, observed=y)
    return model


def hierarchical_large(rng, n=20000, groups=800):
    g = rng.integers(0, groups, size=n)
    x = rng.normal(size=n)
    a_true, b_true = rng.normal(1.0, 0.5, size=groups), rng.normal(0.5, 0.2, size=groups)
    y = a_true[g] + b_true[g] * x + rng.normal(0, 0.8, size=n)
    with pm.Model() as model:
        mu_a, mu_b = pm.Normal("mu_a", 0, 5), pm.Normal("mu_b", 0, 5)
        s_a, s_b = pm.HalfNormal("s_a", 1), pm.HalfNormal("s_b", 1)
        za = pm.Normal("za", 0, 1, shape=groups)
        zb = pm.Normal("zb", 0, 1, shape=groups)
        a, b = mu_a + s_a * za, mu_b + s_b * zb
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", a[g] + b[g] * x, sigma, observed=y)
    return model


def censored_normal(rng, n=500, lower=-1.0, upper=2.5):
    y = np.clip(rng.normal(0.5, 1.5, size=n), lower, upper)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        sigma = pm.HalfNormal("sigma", 3)
        pm.Censored("y", pm.Normal.dist(mu, sigma), lower=lower, upper=upper, observed=y)
    return model


def gp_marginal(rng, n=60):
    x = np.sort(rng.uniform(0, 10, size=n))[:, None]
    y = np.sin(x[:, 0]) + rng.normal(0, 0.3, size=n)
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2, 1)
        eta = pm.HalfNormal("eta", 2)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ls))
        gp.marginal_likelihood("y", X=x, y=y, sigma=pm.HalfNormal("sigma", 1))
    return model


def gp_latent(rng, n=40):
    x = np.sort(rng.uniform(0, 10, size=n))[:, None]
    y = rng.poisson(np.exp(np.sin(x[:, 0])))
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.Latent(cov_func=eta**2 * pm.gp.cov.Matern52(1, ls))
        f = gp.prior("f", X=x)
        pm.Poisson("y", mu=pt.exp(f), observed=y)
    return model


def ar2(rng, t=300):
    y = np.zeros(t)
    for i in range(2, t):
        y[i] = 0.6 * y[i - 1] - 0.2 * y[i - 2] + rng.normal(0, 0.5)
    with pm.Model() as model:
        rho = pm.Normal("rho", 0, 0.5, shape=2)
        sigma = pm.HalfNormal("sigma", 1)
        pm.AR("y", rho=rho, sigma=sigma, init_dist=pm.Normal.dist(0, 1), steps=t - 2, observed=y)
    return model


def random_walk(rng, t=400):
    latent = np.cumsum(rng.normal(0, 0.2, size=t))
    y = latent + rng.normal(0, 0.5, size=t)
    with pm.Model() as model:
        s = pm.HalfNormal("s", 0.5)
        walk = pm.GaussianRandomWalk("walk", sigma=s, init_dist=pm.Normal.dist(0, 1), steps=t - 1)
        pm.Normal("y", walk, pm.HalfNormal("sigma", 1), observed=y)
    return model


def stochastic_volatility(rng, t=400):
    vol = np.cumsum(rng.normal(0, 0.1, size=t)) - 2
    r = rng.standard_t(6, size=t) * np.exp(vol)
    with pm.Model() as model:
        step = pm.Exponential("step", 10)
        h = pm.GaussianRandomWalk("h", sigma=step, init_dist=pm.Normal.dist(-2, 1), shape=t)
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("r", nu=nu, lam=pt.exp(-2 * h), observed=r)
    return model


def zero_sum_hierarchy(rng, n=2000, a=30, b=12):
    ia, ib = rng.integers(0, a, size=n), rng.integers(0, b, size=n)
    y = rng.normal(0, 0.5, size=a)[ia] + rng.normal(0, 0.3, size=b)[ib] + rng.normal(0, 1, size=n)
    with pm.Model(coords={"a": range(a), "b": range(b)}) as model:
        mu = pm.Normal("mu", 0, 3)
        ea = pm.ZeroSumNormal("ea", sigma=pm.HalfNormal("sa", 1), dims="a")
        eb = pm.ZeroSumNormal("eb", sigma=pm.HalfNormal("sb", 1), dims="b")
        pm.Normal("y", mu + ea[ia] + eb[ib], pm.HalfNormal("sigma", 2), observed=y)
    return model


def beta_regression(rng, n=500, k=3):
    X = rng.normal(size=(n, k))
    m = 1 / (1 + np.exp(-(X @ rng.normal(0, 0.5, size=k))))
    y = np.clip(rng.beta(m * 20, (1 - m) * 20), 1e-6, 1 - 1e-6)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=k)
        a = pm.Normal("a", 0, 1)
        phi = pm.Gamma("phi", 2, 0.1)
        mu = pm.math.invlogit(a + pt.dot(X, b))
        pm.Beta("y", alpha=mu * phi, beta=(1 - mu) * phi, observed=y)
    return model


def horseshoe(rng, n=200, k=50):
    X = rng.normal(size=(n, k))
    w = np.zeros(k)
    w[:5] = rng.normal(0, 2, size=5)
    y = X @ w + rng.normal(0, 1, size=n)
    with pm.Model() as model:
        tau = pm.HalfCauchy("tau", 0.1)
        lam = pm.HalfCauchy("lam", 1, shape=k)
        z = pm.Normal("z", 0, 1, shape=k)
        pm.Normal("y", pt.dot(X, z * tau * lam), pm.HalfNormal("sigma", 2), observed=y)
    return model


def normal_mixture(rng, n=600, k=3):
    comp = rng.integers(0, k, size=n)
    y = np.array([-3.0, 0.0, 4.0])[comp] + rng.normal(0, 1, size=n)
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(k))
        mu = pm.Normal("mu", 0, 5, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-2, 2, k))
        sigma = pm.HalfNormal("sigma", 2, shape=k)
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y)
    return model


def weibull_survival(rng, n=400, k=2):
    """Right-censored Weibull regression: events by their density, censored rows by their log
    survival -(c / scale)**alpha. pm.Censored would take the survival as log1mexp(logcdf), which
    is -inf once exp(-(c / scale)**alpha) underflows, as it does at nutpie's jittered start."""
    X = rng.normal(size=(n, k))
    scale = np.exp(2.0 + X @ np.array([0.5, -0.3])[:k])
    t = scale * rng.weibull(1.5, size=n)
    cens = rng.uniform(0, 15, size=n)
    event = t <= cens
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=k)
        a = pm.Normal("a", 0, 3)
        alpha = pm.Gamma("alpha", 2, 1)
        scale_event = pt.exp(a + pt.dot(X[event], b))
        scale_cens = pt.exp(a + pt.dot(X[~event], b))
        pm.Weibull("t", alpha=alpha, beta=scale_event, observed=t[event])
        pm.Potential("t_censored", -pt.sum((cens[~event] / scale_cens) ** alpha))
    return model


def simplex_categorical(rng, n=1000, k=8, groups=10):
    g = rng.integers(0, groups, size=n)
    p = rng.dirichlet(np.full(k, 3.0), size=groups)
    y = np.array([rng.choice(k, p=p[i]) for i in g])
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        conc = pm.Gamma("conc", 2, 0.2)
        theta = pm.Dirichlet("theta", base * conc * k, shape=(groups, k))
        pm.Categorical("y", p=theta[g], observed=y)
    return model


def studentt_robust(rng, n=500, k=4):
    X = rng.normal(size=(n, k))
    y = X @ rng.normal(size=k) + rng.standard_t(3, size=n)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 2, shape=k)
        a = pm.Normal("a", 0, 2)
        pm.StudentT("y", nu=pm.Gamma("nu", 2, 0.1), mu=a + pt.dot(X, b), sigma=pm.HalfNormal("sigma", 2),
                    observed=y)
    return model


def zero_inflated_poisson(rng, n=800, k=2):
    X = rng.normal(size=(n, k))
    lam = np.exp(1.0 + X @ np.array([0.4, -0.2])[:k])
    y = np.where(rng.uniform(size=n) < 0.3, 0, rng.poisson(lam))
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        b = pm.Normal("b", 0, 1, shape=k)
        a = pm.Normal("a", 0, 2)
        pm.ZeroInflatedPoisson("y", psi=psi, mu=pt.exp(a + pt.dot(X, b)), observed=y)
    return model


def garch11_scan(rng, t=300):
    """A GARCH(1,1) whose variance recursion is a pytensor Scan."""
    import pytensor

    r = rng.standard_t(8, size=t) * 0.1
    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 0.1)
        alpha = pm.Beta("alpha", 2, 8)
        beta = pm.Beta("beta", 8, 2)
        r_data = pt.as_tensor_variable(r)

        def step(r_prev, var_prev, w, a, b):
            return w + a * r_prev**2 + b * var_prev

        var, _ = pytensor.scan(step, sequences=[r_data[:-1]], outputs_info=[pt.as_tensor_variable(np.var(r))],
                               non_sequences=[omega, alpha, beta])
        pm.Normal("r", 0.0, pt.sqrt(pt.concatenate([[np.var(r)], var])), observed=r)
    return model


def hmm_scan(rng, t=200, k=3):
    """A Gaussian hidden Markov model, marginalised by the forward algorithm in a pytensor Scan."""
    import pytensor

    trans = np.full((k, k), 0.1) + np.eye(k) * (1 - 0.1 * k)
    states = [0]
    for _ in range(t - 1):
        states.append(rng.choice(k, p=trans[states[-1]]))
    y = np.array([-2.0, 0.0, 2.5])[states] + rng.normal(0, 0.7, size=t)
    with pm.Model() as model:
        p_trans = pm.Dirichlet("p_trans", np.ones(k) * 2, shape=(k, k))
        mu = pm.Normal("mu", 0, 3, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1, 1, k))
        sigma = pm.HalfNormal("sigma", 1.0)
        emit = pm.logp(pm.Normal.dist(mu, sigma), pt.as_tensor_variable(y)[:, None])  # (t, k)
        log_trans = pt.log(p_trans)

        def step(e_t, alpha, lt):
            return e_t + pt.logsumexp(alpha[:, None] + lt, axis=0)

        alpha, _ = pytensor.scan(step, sequences=[emit[1:]], outputs_info=[emit[0] - np.log(k)],
                                 non_sequences=[log_trans])
        pm.Potential("forward", pt.logsumexp(alpha[-1]))
    return model


def structural_ts(rng, t=60):
    """pymc-extras' structural time series (local linear trend, 60 daily observations); a Kalman filter Scan."""
    return tm.structural_time_series(seed=int(rng.integers(2**31)), t=t)


def skew_normal(rng, n=400):
    y = rng.normal(size=n) + rng.exponential(0.7, size=n)
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0, 2)
        mu = pm.Normal("mu", 0, 2)
        sigma = pm.HalfNormal("sigma", 1)
        pm.SkewNormal("y", mu=mu, sigma=sigma, alpha=alpha, observed=y)
    return model


def truncated_normal(rng, n=400):
    """A normal truncated below at 0: its logp subtracts a log normal CDF (erfc)."""
    y = np.abs(rng.normal(0.5, 1.0, size=n))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        sigma = pm.HalfNormal("sigma", 1)
        pm.TruncatedNormal("y", mu=mu, sigma=sigma, lower=0.0, observed=y)
    return model


def beta_binomial(rng, n=300):
    trials = rng.integers(5, 30, size=n)
    y = rng.binomial(trials, rng.beta(2, 5, size=n))
    with pm.Model() as model:
        a = pm.HalfNormal("a", 5)
        b = pm.HalfNormal("b", 5)
        pm.BetaBinomial("y", alpha=a, beta=b, n=trials, observed=y)
    return model


def multinomial_logit(rng, n=400, k=3, classes=4):
    """Softmax regression: a (n, classes) softmax over a Dot, read by a Categorical."""
    x = rng.normal(size=(n, k))
    y = rng.integers(0, classes, size=n)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=(k, classes))
        pm.Categorical("y", p=pm.math.softmax(pt.dot(x, b), axis=1), observed=y)
    return model


def poisson_mixture(rng, n=400):
    """Two Poisson components, ordered rates: a logsumexp over components."""
    y = np.concatenate([rng.poisson(2, n // 2), rng.poisson(9, n - n // 2)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        lam = pm.Gamma("lam", 2, 0.5, shape=2, transform=pm.distributions.transforms.ordered, initval=[1.0, 5.0])
        pm.Mixture("y", w=w, comp_dists=pm.Poisson.dist(lam), observed=y)
    return model


def hurdle_gamma(rng, n=400):
    y = rng.gamma(2, 2, size=n) * rng.binomial(1, 0.6, size=n)
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        a = pm.Exponential("a", 1)
        b = pm.Exponential("b", 1)
        pm.HurdleGamma("y", psi=psi, alpha=a, beta=b, observed=y)
    return model


def von_mises(rng, n=300):
    """Circular data: the logp holds log I0e (a Bessel function)."""
    y = rng.vonmises(0.5, 2.0, size=n)
    with pm.Model() as model:
        mu = pm.VonMises("mu", 0, 0.1)
        kappa = pm.HalfNormal("kappa", 5)
        pm.VonMises("y", mu=mu, kappa=kappa, observed=y)
    return model


def gamma_glm(rng, n=500, k=3):
    x = rng.normal(size=(n, k))
    y = rng.gamma(2.0, np.exp(x @ rng.normal(0, 0.3, size=k)) / 2.0)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=k)
        a = pm.HalfNormal("a", 5)
        pm.Gamma("y", alpha=a, beta=a / pm.math.exp(pt.dot(x, b)), observed=y)
    return model


def cumsum_trend(rng, t=300):
    """A local level written with cumsum (CumOp) instead of a random walk distribution."""
    y = np.cumsum(rng.normal(0, 0.3, size=t)) + rng.normal(0, 0.5, size=t)
    with pm.Model() as model:
        d = pm.Normal("d", 0, 1, shape=t)
        s = pm.HalfNormal("s", 0.5)
        pm.Normal("y", pt.cumsum(s * d), pm.HalfNormal("sigma", 1), observed=y)
    return model


def ex_gaussian(rng, n=400):
    """Reaction times: a normal plus an exponential (log erfc in the logp)."""
    y = rng.exponential(1, n) + rng.normal(2, 0.5, n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 2)
        sigma = pm.HalfNormal("sigma")
        nu = pm.HalfNormal("nu")
        pm.ExGaussian("y", mu=mu, sigma=sigma, nu=nu, observed=y)
    return model


def hsgp(rng, n=300, basis=30):
    """A Hilbert-space approximate GP: a (n, basis) basis times spectral weights."""
    x = np.linspace(0, 10, n)[:, None]
    y = np.sin(x[:, 0]) + rng.normal(0, 0.3, n)
    with pm.Model() as model:
        ell = pm.InverseGamma("ell", 5, 5)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.HSGP(m=[basis], c=1.5, cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ls=ell))
        f = gp.prior("f", X=x)
        pm.Normal("y", f, pm.HalfNormal("sigma"), observed=y)
    return model


def ordered_probit(rng, n=400, k=2):
    x = rng.normal(size=(n, k))
    y = np.digitize(x @ [0.8, -0.5] + rng.normal(size=n), [-1.0, 0.0, 1.0])
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=k)
        c = pm.Normal("c", np.arange(3.0) - 1, 2, shape=3, transform=pm.distributions.transforms.ordered)
        pm.OrderedProbit("y", eta=pt.dot(x, b), cutpoints=c, sigma=1.0, observed=y)
    return model


def binomial_hierarchy(rng, groups=60, trials=30):
    y = rng.binomial(trials, rng.beta(3, 5, groups))
    with pm.Model() as model:
        mu = pm.Normal("mu")
        s = pm.HalfNormal("s")
        z = pm.Normal("z", shape=groups)
        pm.Binomial("y", n=trials, logit_p=mu + s * z, observed=y)
    return model



def bnn(rng, n=200, k=2, hidden=8):
    """A one-hidden-layer Bayesian neural network classifier (tanh, two Dots)."""
    x = rng.normal(size=(n, k))
    y = (x[:, 0] * x[:, 1] > 0).astype(int)
    with pm.Model() as model:
        w1 = pm.Normal("w1", 0, 1, shape=(k, hidden))
        w2 = pm.Normal("w2", 0, 1, shape=hidden)
        pm.Bernoulli("y", logit_p=pt.dot(pt.tanh(pt.dot(x, w1)), w2), observed=y)
    return model


def irt_2pl(rng, people=100, items=20):
    """Two-parameter item response theory: two index gathers per response."""
    pi = np.repeat(np.arange(people), items)
    ii = np.tile(np.arange(items), people)
    y = rng.binomial(1, 0.6, size=people * items)
    with pm.Model() as model:
        theta = pm.Normal("theta", 0, 1, shape=people)
        a = pm.LogNormal("a", 0, 0.5, shape=items)
        b = pm.Normal("b", 0, 1, shape=items)
        pm.Bernoulli("y", logit_p=a[ii] * (theta[pi] - b[ii]), observed=y)
    return model


def laplace_regression(rng, n=400, k=3):
    """Least absolute deviations: a Laplace likelihood (abs) with Cauchy priors."""
    x = rng.normal(size=(n, k))
    y = x @ [1.0, -0.5, 0.2] + rng.laplace(0, 0.5, size=n)
    with pm.Model() as model:
        b = pm.Cauchy("b", 0, 1, shape=k)
        s = pm.HalfCauchy("s", 1)
        pm.Laplace("y", mu=pt.dot(x, b), b=s, observed=y)
    return model


def gumbel_logistic(rng, n=400):
    """Extreme-value and logistic likelihoods on the same data."""
    y = rng.gumbel(1.0, 2.0, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        beta = pm.HalfNormal("beta", 3)
        pm.Gumbel("y", mu=mu, beta=beta, observed=y)
        m2 = pm.Normal("m2", 0, 5)
        s2 = pm.HalfNormal("s2", 3)
        pm.Logistic("z", mu=m2, s=s2, observed=y)
    return model


def lognormal_regression(rng, n=500, k=3):
    x = rng.normal(size=(n, k))
    y = np.exp(x @ [0.3, -0.2, 0.1] + rng.normal(0, 0.4, size=n))
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=k)
        s = pm.HalfNormal("s", 1)
        pm.LogNormal("y", mu=pt.dot(x, b), sigma=s, observed=y)
    return model


def wald_times(rng, n=400):
    """Inverse Gaussian (Wald) first-passage times."""
    y = rng.wald(1.5, 3.0, size=n)
    with pm.Model() as model:
        mu = pm.HalfNormal("mu", 3)
        lam = pm.HalfNormal("lam", 5)
        pm.Wald("y", mu=mu, lam=lam, observed=y)
    return model


def censored_exponential(rng, n=400):
    """Exponential survival times right-censored at 2 (pm.Censored: a log survival term)."""
    t = rng.exponential(1.5, size=n)
    with pm.Model() as model:
        lam = pm.HalfNormal("lam", 2)
        pm.Censored("y", pm.Exponential.dist(lam), lower=None, upper=2.0, observed=np.minimum(t, 2.0))
    return model


def mv_studentt(rng, n=150, d=3):
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("c", n=d, eta=2.0, sd_dist=pm.HalfNormal.dist(1.0, shape=d), compute_corr=True)
        mu = pm.Normal("mu", 0, 1, shape=d)
        nu = pm.Gamma("nu", 2, 0.1)
        pm.MvStudentT("y", nu=nu, mu=mu, scale=pt.dot(chol, chol.T), observed=rng.standard_t(5, size=(n, d)))
    return model


def rice(rng, n=300):
    """Rice-distributed magnitudes: log Bessel I0 in the logp."""
    y = np.abs(rng.normal(2, 1, size=n) + 1j * rng.normal(0, 1, size=n))
    with pm.Model() as model:
        nu = pm.HalfNormal("nu", 3)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Rice("y", nu=nu, sigma=sigma, observed=y)
    return model


def changepoint(rng, t=300):
    """A mean shift at an unknown time, smoothed by a sigmoid so NUTS can move it."""
    y = np.where(np.arange(t) < 120, 1.0, 2.5) + rng.normal(0, 0.5, size=t)
    with pm.Model() as model:
        tau = pm.Uniform("tau", 0, t)
        m1 = pm.Normal("m1", 0, 5)
        m2 = pm.Normal("m2", 0, 5)
        w = pm.math.sigmoid(np.arange(t) - tau)
        pm.Normal("y", (1 - w) * m1 + w * m2, pm.HalfNormal("s", 1), observed=y)
    return model


def poisson_offset(rng, n=600, groups=30):
    """Rates with an exposure offset and a group effect."""
    g = rng.integers(0, groups, size=n)
    expo = rng.uniform(0.5, 3, size=n)
    y = rng.poisson(expo * np.exp(rng.normal(0, 0.3, size=groups))[g])
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1)
        s = pm.HalfNormal("s", 1)
        z = pm.Normal("z", 0, 1, shape=groups)
        pm.Poisson("y", mu=pm.math.exp(a + s * z[g] + np.log(expo)), observed=y)
    return model


def asymmetric_laplace(rng, n=400):
    """Quantile regression's likelihood (asymmetric Laplace)."""
    x = rng.normal(size=n)
    y = 1 + 0.5 * x + rng.laplace(0, 1, size=n)
    with pm.Model() as model:
        b0 = pm.Normal("b0", 0, 5)
        b1 = pm.Normal("b1", 0, 5)
        s = pm.HalfNormal("s", 2)
        pm.AsymmetricLaplace("y", kappa=1.5, mu=b0 + b1 * x, b=s, observed=y)
    return model


def truncated_gamma(rng, n=300):
    """A Gamma likelihood truncated on both sides (regularized incomplete gammas)."""
    y = np.clip(rng.gamma(2, 1.5, size=n), 0.5, 6)
    with pm.Model() as model:
        a = pm.HalfNormal("a", 3)
        b = pm.HalfNormal("b", 2)
        pm.Truncated("y", pm.Gamma.dist(alpha=a, beta=b), lower=0.5, upper=6, observed=y)
    return model


def censored_weibull(rng, n=300, limit=2.5):
    """Survival times right-censored at a study's end (Weibull log-survival)."""
    t = np.minimum(rng.weibull(1.5, size=n) * 2, limit)
    with pm.Model() as model:
        a = pm.HalfNormal("a", 2)
        b = pm.HalfNormal("b", 3)
        pm.Censored("y", pm.Weibull.dist(alpha=a, beta=b), lower=None, upper=limit, observed=t)
    return model


def zero_inflated_negbin(rng, n=400):
    """Zero-inflated negative binomial counts."""
    y = rng.negative_binomial(3, 0.4, size=n) * (rng.random(n) > 0.3)
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        mu = pm.HalfNormal("mu", 10)
        alpha = pm.HalfNormal("alpha", 5)
        pm.ZeroInflatedNegativeBinomial("y", psi=psi, mu=mu, alpha=alpha, observed=y)
    return model


def hurdle_poisson(rng, n=400):
    """Zeros from a Bernoulli, positives from a zero-truncated Poisson."""
    y = rng.poisson(3, size=n) * (rng.random(n) > 0.4)
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        mu = pm.HalfNormal("mu", 10)
        pm.HurdlePoisson("y", psi=psi, mu=mu, observed=y)
    return model


def normal_t_mixture(rng, n=200):
    """A mixture of unlike components: a Normal and a Student-t."""
    y = np.concatenate([rng.normal(-2, 1, size=n), rng.standard_t(3, size=n) + 2])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", 0, 5, shape=2)
        s = pm.HalfNormal("s", 2, shape=2)
        comps = [pm.Normal.dist(mu[0], s[0]), pm.StudentT.dist(nu=3, mu=mu[1], sigma=s[1])]
        pm.Mixture("y", w=w, comp_dists=comps, observed=y)
    return model


def mvnormal_dense(rng, n=100, k=5):
    """A multivariate normal with a known dense covariance times a scale."""
    a = rng.normal(size=(k, k))
    cov = a @ a.T + k * np.eye(k)
    y = rng.multivariate_normal(np.zeros(k), cov, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3, shape=k)
        sc = pm.HalfNormal("sc", 2)
        pm.MvNormal("y", mu=mu, cov=sc * cov, observed=y)
    return model


def geometric_zib(rng, n=300):
    """Geometric waiting counts and zero-inflated binomial successes."""
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Geometric("y", p=p, observed=rng.geometric(0.3, size=n))
        q = pm.Beta("q", 2, 2)
        pm.ZeroInflatedBinomial("z", psi=0.8, n=10, p=q, observed=rng.binomial(10, 0.4, size=n))
    return model


def custom_potential(rng, n=300):
    """A CustomDist whose logp is a user's expression, plus a Potential."""
    y = rng.normal(1, 2, size=n)

    def logp(v, mu, s):
        z = (v - mu) / s
        return -0.5 * z**2 - pt.log(s) - 0.1 * pt.log1p(z**4)

    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        s = pm.HalfNormal("s", 3)
        pm.CustomDist("y", mu, s, logp=logp, observed=y)
        pm.Potential("pen", -pt.sqr(mu - 1))
    return model


def logitnormal_kumaraswamy(rng, n=300):
    """Two likelihoods on (0, 1): logit-normal and Kumaraswamy."""
    y = 1 / (1 + np.exp(-rng.normal(0.3, 0.8, size=n)))
    z = np.clip(rng.beta(2, 3, size=n), 1e-3, 1 - 1e-3)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        s = pm.HalfNormal("s", 2)
        pm.LogitNormal("y", mu=mu, sigma=s, observed=y)
        a = pm.HalfNormal("a", 3)
        b = pm.HalfNormal("b", 3)
        pm.Kumaraswamy("z", a=a, b=b, observed=z)
    return model


def moyal_triangular(rng, n=300):
    """A Moyal likelihood and a triangular one with an uncertain mode."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        s = pm.HalfNormal("s", 2)
        pm.Moyal("y", mu=mu, sigma=s, observed=rng.gumbel(0, 1, size=n))
        c = pm.Uniform("c", 0, 1)
        pm.Triangular("t", lower=0, c=c, upper=1, observed=rng.triangular(0, 0.3, 1, size=200))
    return model


def dp_mixture(rng, n=100, k=8):
    """A truncated Dirichlet-process mixture: stick-breaking weights."""
    y = np.concatenate([rng.normal(-3, 1, size=n), rng.normal(0, 1, size=n), rng.normal(3, 1, size=n)])
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2, 2)
        w = pm.StickBreakingWeights("w", alpha=alpha, K=k - 1)
        mu = pm.Normal("mu", 0, 5, shape=k)
        s = pm.HalfNormal("s", 2, shape=k)
        pm.NormalMixture("y", w=w, mu=mu, sigma=s, observed=y)
    return model


def spline_rw(rng, n=300, knots=12):
    """A linear-spline basis whose weights follow a Gaussian random walk."""
    x = np.sort(rng.uniform(0, 10, size=n))
    kn = np.linspace(0, 10, knots)
    basis = np.maximum(0, 1 - np.abs(x[:, None] - kn[None, :]) / (kn[1] - kn[0]))
    y = np.sin(x) + rng.normal(0, 0.3, size=n)
    with pm.Model() as model:
        tau = pm.HalfCauchy("tau", 1)
        w = pm.GaussianRandomWalk("w", sigma=tau, init_dist=pm.Normal.dist(0, 1), shape=knots)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", mu=pt.dot(basis, w), sigma=s, observed=y)
    return model


def ordered_logsumexp(rng, n=50, k=6):
    """Ordered means, a per-row logsumexp and a sort inside Potentials."""
    y = rng.normal(0, 1, size=(n, k))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1, 1, k))
        s = pm.HalfNormal("s", 1)
        lp = pm.logp(pm.Normal.dist(mu, s), y)
        pm.Potential("lse", pt.sum(pt.logsumexp(lp, axis=1)))
        pm.Potential("srt", -pt.sum(pt.sqr(pt.sort(mu) - mu)))
    return model


def solve_det(rng, n=60, k=4):
    """A Gaussian likelihood written by hand: a linear solve and a determinant."""
    y = rng.normal(size=(n, k))
    with pm.Model() as model:
        lo = pm.Normal("L", 0, 1, shape=(k, k))
        a = pt.dot(lo, lo.T) + 2 * pt.eye(k)
        pm.Potential("lik", -0.5 * pt.sum(y * pt.linalg.solve(a, y.T).T) - 0.5 * n * pt.log(pt.linalg.det(a)))
    return model


def skew_student_t(rng, n=300):
    """Jones and Faddy's skewed Student-t (incomplete beta in its cdf-free logp)."""
    y = rng.standard_t(4, size=n) * 1.5 + 0.5
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        s = pm.HalfNormal("s", 2)
        a = pm.Gamma("a", 2, 0.2)
        b = pm.Gamma("b", 2, 0.2)
        pm.SkewStudentT("y", a=a, b=b, mu=mu, sigma=s, observed=y)
    return model


def poisson_process(rng, n=200):
    """A log-linear hazard with exposure times (a Poisson-process Potential)."""
    x = rng.normal(size=n)
    t = rng.exponential(1, size=n)
    event = (rng.random(n) > 0.3).astype(float)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=2)
        lam = pt.exp(b[0] + b[1] * x)
        pm.Potential("lik", pt.sum(event * pt.log(lam)) - pt.sum(lam * t))
    return model


def probit_bernoulli(rng, n=800, k=3):
    """Bernoulli regression with a probit link (the normal CDF: erfc of the linear predictor)."""
    x = rng.normal(size=(n, k))
    y = (x @ [0.8, -0.4, 0.2] + rng.normal(size=n) > 0).astype(int)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1, shape=k)
        pm.Bernoulli("y", p=pm.math.invprobit(a + pt.dot(x, b)), observed=y)
    return model


def varying_slopes_logistic(rng, n=1500, groups=25, k=3):
    """Hierarchical logistic regression: non-centered varying intercepts and slopes, diagonal scales."""
    g = rng.integers(0, groups, size=n)
    x = rng.normal(size=(n, k))
    coef = rng.normal(0.3, 0.5, size=(groups, k + 1))
    y = rng.binomial(1, 1 / (1 + np.exp(-(coef[g, 0] + np.sum(coef[g, 1:] * x, axis=1)))))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1, shape=k + 1)
        tau = pm.HalfNormal("tau", 1, shape=k + 1)
        z = pm.Normal("z", 0, 1, shape=(groups, k + 1))
        beta = mu + z * tau  # (groups, k + 1)
        bg = beta[g]
        pm.Bernoulli("y", logit_p=bg[:, 0] + pt.sum(bg[:, 1:] * x, axis=1), observed=y)
    return model


def exp_decay_curves(rng, n=40, groups=12):
    """Nonlinear regression: per-group exponential decay curves a * exp(-b * t) + c, log-normal group effects."""
    t = np.tile(np.linspace(0, 10, n), groups)
    g = np.repeat(np.arange(groups), n)
    a_true, b_true = np.exp(rng.normal(1.0, 0.3, groups)), np.exp(rng.normal(-1.0, 0.3, groups))
    y = a_true[g] * np.exp(-b_true[g] * t) + 0.5 + rng.normal(0, 0.1, size=n * groups)
    with pm.Model() as model:
        la = pm.Normal("la", 1, 1)
        lb = pm.Normal("lb", -1, 1)
        sa = pm.HalfNormal("sa", 0.5)
        sb = pm.HalfNormal("sb", 0.5)
        za = pm.Normal("za", 0, 1, shape=groups)
        zb = pm.Normal("zb", 0, 1, shape=groups)
        c = pm.Normal("c", 0, 1)
        a, b = pt.exp(la + sa * za), pt.exp(lb + sb * zb)
        pm.Normal("y", a[g] * pt.exp(-b[g] * t) + c, pm.HalfNormal("sigma", 0.5), observed=y)
    return model


def lognormal_aft(rng, n=500, k=3):
    """Log-normal accelerated failure times, right-censored at per-subject follow-up times (pm.Censored)."""
    x = rng.normal(size=(n, k))
    t = np.exp(1.0 + x @ [0.4, -0.3, 0.2] + rng.normal(0, 0.6, size=n))
    follow = rng.uniform(1, 8, size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 3)
        b = pm.Normal("b", 0, 1, shape=k)
        s = pm.HalfNormal("s", 1)
        pm.Censored("t", pm.LogNormal.dist(a + pt.dot(x, b), s), lower=None, upper=follow,
                    observed=np.minimum(t, follow))
    return model


def zip_logit_inflation(rng, n=800, k=2):
    """Zero-inflated Poisson whose inflation probability has its own logistic regression."""
    x = rng.normal(size=(n, k))
    z = rng.normal(size=n)
    psi = 1 / (1 + np.exp(-(1.0 + 0.8 * z)))
    y = np.where(rng.uniform(size=n) < psi, rng.poisson(np.exp(0.8 + x @ [0.3, -0.4])), 0)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=k)
        a = pm.Normal("a", 0, 2)
        g = pm.Normal("g", 0, 2, shape=2)
        pm.ZeroInflatedPoisson("y", psi=pm.math.invlogit(g[0] + g[1] * z), mu=pt.exp(a + pt.dot(x, b)), observed=y)
    return model


def betabinomial_groups(rng, n=600, groups=20):
    """Beta-binomial counts with a group-level mean (logit) and a group-level concentration."""
    g = rng.integers(0, groups, size=n)
    trials = rng.integers(5, 40, size=n)
    y = rng.binomial(trials, rng.beta(2, 3, size=n))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1.5)
        s = pm.HalfNormal("s", 1)
        z = pm.Normal("z", 0, 1, shape=groups)
        kappa = pm.Gamma("kappa", 2, 0.1, shape=groups)
        p = pm.math.invlogit(mu + s * z)
        pm.BetaBinomial("y", alpha=(p * kappa)[g], beta=((1 - p) * kappa)[g], n=trials, observed=y)
    return model


def lognormal_mixture(rng, n=600):
    """A two-component mixture of log-normals with ordered log-medians (pm.Mixture)."""
    y = np.concatenate([rng.lognormal(0.0, 0.4, n // 2), rng.lognormal(1.5, 0.3, n - n // 2)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", 0, 2, shape=2, transform=pm.distributions.transforms.ordered, initval=[-0.5, 0.5])
        s = pm.HalfNormal("s", 1, shape=2)
        pm.Mixture("y", w=w, comp_dists=pm.LogNormal.dist(mu, s), observed=y)
    return model


def seasonal_rw_studentt(rng, t=364, period=7):
    """A random-walk level plus a zero-sum weekly season (a gather by t % 7), read through a Student-t."""
    level = np.cumsum(rng.normal(0, 0.1, size=t))
    season = rng.normal(0, 0.5, size=period)
    season -= season.mean()
    y = level + season[np.arange(t) % period] + rng.standard_t(4, size=t) * 0.3
    with pm.Model() as model:
        s = pm.HalfNormal("s", 0.3)
        walk = pm.GaussianRandomWalk("walk", sigma=s, init_dist=pm.Normal.dist(0, 1), steps=t - 1)
        season_eff = pm.ZeroSumNormal("season", sigma=1.0, shape=period)
        nu = pm.Gamma("nu", 2, 0.1)
        pm.StudentT("y", nu=nu, mu=walk + season_eff[np.arange(t) % period], sigma=pm.HalfNormal("sigma", 1),
                    observed=y)
    return model


def lowrank_mvnormal(rng, n=150, d=6, rank=2):
    """A multivariate normal whose covariance is a diagonal plus a low-rank factor (a factor model)."""
    w_true = rng.normal(size=(d, rank))
    y = rng.multivariate_normal(np.zeros(d), w_true @ w_true.T + np.diag(rng.uniform(0.3, 1, d)), size=n)
    with pm.Model() as model:
        w = pm.Normal("w", 0, 1, shape=(d, rank))
        psi = pm.HalfNormal("psi", 1, shape=d)
        mu = pm.Normal("mu", 0, 2, shape=d)
        pm.MvNormal("y", mu=mu, cov=pt.dot(w, w.T) + pt.diag(psi**2), observed=y)
    return model


def gamma_poisson_latent(rng, n=300, k=2):
    """Overdispersed counts with exposure: a latent Gamma rate per observation around a log-linear mean."""
    x = rng.normal(size=(n, k))
    expo = rng.uniform(0.5, 2, size=n)
    y = rng.poisson(expo * rng.gamma(4, np.exp(0.5 + x @ [0.3, -0.2]) / 4))
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1, shape=k)
        phi = pm.Gamma("phi", 2, 0.5)
        mu = pt.exp(a + pt.dot(x, b))
        lam = pm.Gamma("lam", alpha=phi, beta=phi / mu, shape=n)
        pm.Poisson("y", mu=lam * expo, observed=y)
    return model


def polynomial_negbin(rng, n=600, degree=3):
    """A negative-binomial trend: a cubic polynomial basis built with pt.stack, the (n, p) parametrization."""
    x = np.linspace(-1, 1, n)
    mu = np.exp(2 + 0.5 * x - 0.8 * x**2 + 0.3 * x**3)
    y = rng.negative_binomial(4, 4 / (4 + mu))
    with pm.Model() as model:
        c = pm.Normal("c", 0, 1, shape=degree + 1)
        r = pm.Gamma("r", 2, 0.2)
        xt = pt.as_tensor_variable(x)
        basis = pt.stack([pt.ones_like(xt)] + [xt**j for j in range(1, degree + 1)], axis=1)
        m = pt.exp(pt.dot(basis, c))
        pm.NegativeBinomial("y", n=r, p=r / (r + m), observed=y)
    return model


def multinomial_regression(rng, n=300, k=2, classes=4, total=20):
    """Multinomial counts with a softmax regression; the reference class's zero logits joined by concatenate."""
    x = rng.normal(size=(n, k))
    logits = np.concatenate([np.zeros((n, 1)), x @ rng.normal(0, 0.5, size=(k, classes - 1))], axis=1)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.multinomial(total, pi) for pi in p])
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1, shape=classes - 1)
        b = pm.Normal("b", 0, 1, shape=(k, classes - 1))
        eta = pt.concatenate([pt.zeros((n, 1)), a + pt.dot(x, b)], axis=1)
        pm.Multinomial("y", n=total, p=pm.math.softmax(eta, axis=1), observed=y)
    return model


def halft_scale_hierarchy(rng, n=800, groups=16):
    """Heteroscedastic groups: per-group means and Half-Student-t scales under a Half-Cauchy hyperprior."""
    g = rng.integers(0, groups, size=n)
    y = rng.normal(rng.normal(0, 1, groups)[g], rng.gamma(2, 0.5, groups)[g])
    with pm.Model() as model:
        mu0 = pm.Normal("mu0", 0, 3)
        tau = pm.HalfCauchy("tau", 1)
        z = pm.Normal("z", 0, 1, shape=groups)
        omega = pm.HalfCauchy("omega", 2)
        sigma = pm.HalfStudentT("sigma", nu=3, sigma=omega, shape=groups)
        pm.Normal("y", (mu0 + tau * z)[g], sigma[g], observed=y)
    return model


def matrix_factorization(rng, users=60, items=40, rank=3, n=1200):
    """Probabilistic matrix factorization: a rating is the row-wise dot of two gathered factor rows."""
    ui, ii = rng.integers(0, users, size=n), rng.integers(0, items, size=n)
    u, v = rng.normal(0, 0.7, size=(users, rank)), rng.normal(0, 0.7, size=(items, rank))
    y = np.sum(u[ui] * v[ii], axis=1) + rng.normal(0, 0.5, size=n)
    with pm.Model() as model:
        su = pm.HalfNormal("su", 1)
        sv = pm.HalfNormal("sv", 1)
        U = pm.Normal("U", 0, 1, shape=(users, rank))
        V = pm.Normal("V", 0, 1, shape=(items, rank))
        pm.Normal("y", pt.sum((su * U)[ui] * (sv * V)[ii], axis=1), pm.HalfNormal("sigma", 1), observed=y)
    return model


def cloglog_binomial(rng, n=400, k=2):
    """Binomial dose-response with a complementary log-log link: p = 1 - exp(-exp(eta))."""
    x = rng.normal(size=(n, k))
    trials = rng.integers(1, 20, size=n)
    y = rng.binomial(trials, 1 - np.exp(-np.exp(-0.5 + x @ [0.6, -0.3])))
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1, shape=k)
        pm.Binomial("y", n=trials, p=1 - pt.exp(-pt.exp(a + pt.dot(x, b))), observed=y)
    return model


def dirichlet_regression(rng, n=300, k=2, parts=4):
    """Compositional responses: a Dirichlet whose concentrations are exp of a linear predictor per part."""
    x = rng.normal(size=(n, k))
    y = np.array([rng.dirichlet(np.exp(1 + xi @ rng.normal(0, 0.3, size=(k, parts)))) for xi in x])
    y = np.clip(y, 1e-6, None)
    y /= y.sum(axis=1, keepdims=True)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2, shape=parts)
        b = pm.Normal("b", 0, 1, shape=(k, parts))
        pm.Dirichlet("y", a=pt.exp(a + pt.dot(x, b)), observed=y)
    return model


def ordinal_cumsum_cuts(rng, n=600, groups=10, levels=6):
    """Ordered-logistic ratings with group intercepts; cutpoints built by a cumsum of positive gaps."""
    g = rng.integers(0, groups, size=n)
    eta = rng.normal(0, 0.7, size=groups)[g]
    y = np.digitize(eta + rng.logistic(size=n), np.linspace(-2, 2, levels - 1))
    with pm.Model() as model:
        c0 = pm.Normal("c0", -2, 2)
        gaps = pm.Exponential("gaps", 1, shape=levels - 2)
        cuts = pt.concatenate([pt.stack([c0]), c0 + pt.cumsum(gaps)])
        s = pm.HalfNormal("s", 1)
        z = pm.Normal("z", 0, 1, shape=groups)
        pm.OrderedLogistic("y", eta=s * z[g], cutpoints=cuts, observed=y)
    return model


def matrix_normal(rng, n=30, p=3):
    """Matrix-variate normal: known row covariance (AR(1) over rows), LKJ column Cholesky."""
    rowcov = 0.5 ** np.abs(np.subtract.outer(np.arange(n), np.arange(n))) + 1e-6 * np.eye(n)
    y = np.linalg.cholesky(rowcov) @ rng.normal(size=(n, p)) @ np.diag([1.0, 0.5, 2.0])
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("c", n=p, eta=2.0, sd_dist=pm.HalfNormal.dist(2.0, shape=p),
                                       compute_corr=True)
        mu = pm.Normal("mu", 0, 2, shape=p)
        pm.MatrixNormal("y", mu=pt.ones((n, 1)) * mu[None, :], rowcov=rowcov, colchol=chol, observed=y)
    return model


def _grid_adj(r, c):
    n = r * c
    W = np.zeros((n, n))
    for i in range(r):
        for j in range(c):
            k = i * c + j
            if j + 1 < c:
                W[k, k + 1] = W[k + 1, k] = 1
            if i + 1 < r:
                W[k, k + c] = W[k + c, k] = 1
    return W


def _lattice_counts(rng, r, c):
    """An r x c lattice's adjacency and Poisson counts around exp(1) on it."""
    y = rng.poisson(np.exp(1.0 + 0.3 * rng.normal(size=r * c)))
    return _grid_adj(r, c), y


def icar_spatial(rng, r=6, c=6):
    """Intrinsic CAR (BYM-like) spatial effects on a 6x6 lattice, Poisson counts (pm.ICAR)."""
    W, y = _lattice_counts(rng, r, c)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        s = pm.HalfNormal("s", 1)
        phi = pm.ICAR("phi", W=W)
        pm.Poisson("y", pt.exp(a + s * phi), observed=y)
    return model


def euler_maruyama(rng, t=100, dt=0.1):
    """An Ornstein-Uhlenbeck SDE discretised by Euler-Maruyama, noisy observations."""
    x = np.zeros(t)
    for i in range(1, t):
        x[i] = x[i - 1] - 0.5 * x[i - 1] * dt + 0.3 * np.sqrt(dt) * rng.normal()
    y = x + rng.normal(0, 0.1, size=t)
    with pm.Model() as model:
        theta = pm.HalfNormal("theta", 1)
        s = pm.HalfNormal("s", 1)

        def sde(x, theta, s):
            return -theta * x, s

        z = pm.EulerMaruyama("z", dt=dt, sde_fn=sde, sde_pars=(theta, s), init_dist=pm.Normal.dist(0, 1),
                             steps=t - 1)
        pm.Normal("y", z, 0.1, observed=y)
    return model


def hurdle_lognormal(rng, n=400):
    """Semicontinuous data: zeros from a Bernoulli, positives log-normal (pm.HurdleLogNormal)."""
    y = np.where(rng.random(n) < 0.3, 0.0, rng.lognormal(0.5, 0.8, size=n))
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        mu = pm.Normal("mu", 0, 2)
        s = pm.HalfNormal("s", 1)
        pm.HurdleLogNormal("y", psi=psi, mu=mu, sigma=s, observed=y)
    return model


def censored_poisson(rng, n=400, limit=8):
    """Counts top-coded at 8 (pm.Censored of a Poisson: regularized upper incomplete gamma)."""
    x = rng.normal(size=n)
    y = np.minimum(rng.poisson(np.exp(1.5 + 0.4 * x)), limit)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Censored("y", pm.Poisson.dist(pt.exp(b[0] + b[1] * x)), lower=None, upper=limit, observed=y)
    return model


def ordered_multinomial(rng, n=50, levels=5, total=20):
    """Grouped ordinal counts: an OrderedMultinomial per row over ordered cutpoints."""
    x = rng.normal(size=n)
    p = np.full(levels, 1.0 / levels)
    y = rng.multinomial(total, p, size=n)
    with pm.Model() as model:
        cuts = pm.Normal("cuts", 0, 3, shape=levels - 1, transform=pm.distributions.transforms.ordered,
                         initval=np.linspace(-1.5, 1.5, levels - 1))
        b = pm.Normal("b", 0, 1)
        pm.OrderedMultinomial("y", eta=b * x, cutpoints=cuts, n=total, observed=y)
    return model


def inverse_gamma_regression(rng, n=400, k=2):
    """Positive responses with an inverse-gamma likelihood whose mean is log-linear."""
    X = rng.normal(size=(n, k))
    y = 1.0 / rng.gamma(4.0, 1.0 / (3.0 * np.exp(-0.3 * X[:, 0])), size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1, shape=k)
        alpha = pm.Gamma("alpha", 2, 0.5)
        mean = pt.exp(a + pt.dot(X, b))
        pm.InverseGamma("y", alpha=alpha + 1.0, beta=mean * alpha, observed=y)
    return model


def slogdet_potential(rng, n=60, k=4):
    """A hand-written Gaussian likelihood using slogdet and an inverse."""
    y = rng.normal(size=(n, k))
    with pm.Model() as model:
        lo = pm.Normal("L", 0, 1, shape=(k, k))
        a = pt.dot(lo, lo.T) + 2 * pt.eye(k)
        sign, ld = pt.linalg.slogdet(a)
        pm.Potential("lik", -0.5 * pt.sum(y * pt.dot(y, pt.linalg.inv(a))) - 0.5 * n * ld)
    return model


def argsort_rank(rng, n=40):
    """Gathers through an argsort of the parameters (a rank-based Potential)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=n)
        idx = pt.argsort(x)
        pm.Potential("p", -pt.sum((x[idx] - np.linspace(-2, 2, n)) ** 2))
    return model


def missing_imputation(rng, n=300):
    """Regression with missing covariate and response values imputed by PyMC (np.nan in observed)."""
    x = rng.normal(size=n)
    y = 1.0 + 0.5 * x + rng.normal(0, 0.5, size=n)
    xo, yo = x.copy(), y.copy()
    xo[rng.random(n) < 0.1] = np.nan
    yo[rng.random(n) < 0.1] = np.nan
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore", ImputationWarning)
        mx = pm.Normal("mx", 0, 2)
        xi = pm.Normal("x", mx, 1, observed=xo)
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", a + b * xi, s, observed=yo)
    return model


def switch_isnan_mask(rng, n=300):
    """Missing responses masked by pt.switch(isnan) in a Potential (a constant: pm.Data refuses nan)."""
    x = rng.normal(size=n)
    y = 1.0 + 0.5 * x + rng.normal(0, 0.5, size=n)
    y[rng.random(n) < 0.15] = np.nan
    with pm.Model() as model:
        yd = pt.as_tensor(y)
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2)
        s = pm.HalfNormal("s", 1)
        miss = pt.isnan(yd)
        lp = pm.logp(pm.Normal.dist(a + b * x, s), pt.switch(miss, 0.0, yd))
        pm.Potential("lik", pt.sum(pt.switch(miss, 0.0, lp)))
    return model


def mv_random_walk(rng, t=100, d=3):
    """A multivariate Gaussian random walk with an LKJ innovation covariance."""
    y = np.cumsum(rng.normal(0, 0.3, size=(t, d)), axis=0) + rng.normal(0, 0.2, size=(t, d))
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("c", n=d, eta=2.0, sd_dist=pm.HalfNormal.dist(0.5, shape=d),
                                       compute_corr=True)
        w = pm.MvGaussianRandomWalk("w", mu=np.zeros(d), chol=chol, steps=t - 1,
                                    init_dist=pm.MvNormal.dist(np.zeros(d), np.eye(d)))
        pm.Normal("y", w, 0.2, observed=y)
    return model


def truncated_poisson(rng, n=300):
    """Counts truncated to [1, 12]: a discrete truncation (Poisson cdf differences)."""
    y = np.clip(rng.poisson(4, size=n), 1, 12)
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2, 0.5)
        pm.Truncated("y", pm.Poisson.dist(mu), lower=1, upper=12, observed=y)
    return model


def mvnormal_precision(rng, n=100, d=3):
    """An MvNormal parametrized by its precision matrix (tau = L L^T from an LKJ Cholesky factor)."""
    y = rng.normal(size=(n, d))
    with pm.Model() as model:
        packed = pm.LKJCholeskyCov("c", n=d, eta=1.0, sd_dist=pm.Exponential.dist(1.0, shape=d), compute_corr=False)
        mu = pm.Normal("mu", 0, 1, shape=d)
        chol = pm.math.expand_packed_triangular(d, packed)
        pm.MvNormal("y", mu, tau=pt.dot(chol, chol.T), observed=y)
    return model


def missing_imputation_2d(rng, n=200, d=3):
    """Missing entries of a (n, d) matrix imputed by PyMC: gathers and sets by two index vectors."""
    x = rng.normal(0.5, 1.0, size=(n, d))
    x[rng.random((n, d)) < 0.1] = np.nan
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore", ImputationWarning)
        mu = pm.Normal("mu", 0, 2, shape=d)
        sd = pm.HalfNormal("sd", 1, shape=d)
        pm.Normal("x", mu, sd, observed=x)
    return model


def kronecker_normal(rng, nx=8, nt=6):
    """A separable space-time GP (pm.KroneckerNormal: an eigendecomposition of each covariance factor)."""
    xs, ts = np.linspace(0, 1, nx)[:, None], np.linspace(0, 1, nt)[:, None]
    kx = np.exp(-np.sqrt(3) * np.abs(xs - xs.T) / 0.4) * (1 + np.sqrt(3) * np.abs(xs - xs.T) / 0.4)
    kt = np.exp(-0.5 * (ts - ts.T) ** 2 / 0.3**2) + 1e-6 * np.eye(nt)
    y = np.kron(np.linalg.cholesky(kx), np.linalg.cholesky(kt)) @ rng.normal(size=nx * nt)
    y = y + rng.normal(0, 0.2, size=nx * nt)
    with pm.Model() as model:
        eta = pm.HalfNormal("eta", 1)
        ls_x = pm.Gamma("ls_x", 4, 8)
        ls_t = pm.Gamma("ls_t", 4, 8)
        cov_x = eta**2 * pm.gp.cov.Matern32(1, ls_x).full(xs) + 1e-6 * np.eye(nx)
        cov_t = pm.gp.cov.ExpQuad(1, ls_t).full(ts) + 1e-6 * np.eye(nt)
        pm.KroneckerNormal("y", mu=np.zeros(nx * nt), covs=[cov_x, cov_t], sigma=pm.HalfNormal("sigma", 0.5),
                           observed=y)
    return model


def car_spatial(rng, r=5, c=5):
    """Proper CAR spatial effects (pm.CAR, free alpha and tau) on a 5x5 lattice, Poisson counts."""
    W, y = _lattice_counts(rng, r, c)
    n = r * c
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        tau = pm.Gamma("tau", 2, 2)
        alpha = pm.Beta("alpha", 2, 2)
        phi = pm.CAR("phi", mu=pt.zeros(n), W=W, alpha=alpha, tau=tau)
        pm.Poisson("y", pt.exp(a + phi), observed=y)
    return model


def lkj_corr(rng, n=100, d=3):
    """An LKJ correlation prior (pm.LKJCorr) with half-normal scales, MvNormal observations."""
    L = np.linalg.cholesky(np.array([[1.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.0]]))
    y = rng.normal(size=(n, d)) @ (L * np.array([1.0, 0.5, 2.0])[:, None]).T
    with pm.Model() as model:
        c = pm.LKJCorr("c", n=d, eta=2.0)
        # PyMC 6 gives the correlation's Cholesky factor, PyMC 5 its packed upper triangle.
        corr = c @ c.T if c.ndim == 2 else pm.LKJCorr.vec_to_corr_mat(c, d)
        sd = pm.HalfNormal("sd", 2.0, shape=d)
        pm.MvNormal("y", mu=np.zeros(d), cov=corr * sd[:, None] * sd[None, :], observed=y)
    return model


def spectral_potentials(rng, k=4):
    """Potentials on a parameter matrix's generalized eigenvalues (eigvalsh against a fixed metric) and singular values."""
    metric = np.eye(k) + 0.2
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=(k + 1, k))
        a = pt.dot(x.T, x) + np.eye(k)
        ev = pt.linalg.eigvalsh(a, pt.as_tensor(metric))
        pm.Potential("eig", pt.sum(pt.log(ev)) - 0.5 * pt.sum(ev))
        pm.Potential("nuclear", -pt.sum(pt.linalg.svd(x, compute_uv=False)))
    return model


def upper_cholesky_mvnormal(rng, n=80, d=6):
    """An MvNormal whose Cholesky factor is the transpose of an upper factor (pt.linalg.cholesky(lower=False))."""
    t = np.linspace(0, 1, d)
    y = rng.normal(size=(n, d))
    with pm.Model() as model:
        ls = pm.Gamma("ls", 4, 8)
        sd = pm.HalfNormal("sd", 1)
        cov = sd**2 * pt.exp(-np.abs(t[:, None] - t[None, :]) / ls) + 1e-6 * np.eye(d)
        u = pt.linalg.cholesky(cov, lower=False)
        pm.MvNormal("y", np.zeros(d), chol=u.T, observed=y)
    return model


def censored_gamma_shape(rng, n=300, upper=5.0):
    """Gamma durations right-censored at 5 with a free shape (the censored mass: gammaincc in the shape)."""
    y = np.minimum(rng.gamma(2.5, 1 / 1.2, size=n), upper)
    with pm.Model() as model:
        a = pm.Gamma("a", 2, 1)
        b = pm.Gamma("b", 2, 1)
        pm.Censored("y", pm.Gamma.dist(alpha=a, beta=b), lower=None, upper=upper, observed=y)
    return model


def truncated_studentt(rng, n=300):
    """Positive Student-t data, truncated at 0 with a free nu (the cdf: betainc in nu / 2)."""
    y = np.abs(1.0 + 0.8 * rng.standard_t(5, size=n))
    with pm.Model() as model:
        nu = pm.Gamma("nu", 4, 0.5)
        mu = pm.Normal("mu", 1, 1)
        s = pm.HalfNormal("s", 1)
        pm.Truncated("y", pm.StudentT.dist(nu=nu, mu=mu, sigma=s), lower=0, observed=y)
    return model


def hurdle_negbin(rng, n=300):
    """Overdispersed counts with a hurdle at zero (the zero-truncated negative binomial: betainc in its alpha)."""
    y = np.where(rng.random(n) < 0.3, 0, 1 + rng.negative_binomial(2, 0.3, size=n))
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        mu = pm.Gamma("mu", 2, 0.5)
        alpha = pm.Gamma("alpha", 2, 1)
        pm.HurdleNegativeBinomial("y", psi=psi, mu=mu, alpha=alpha, observed=y)
    return model


def two_way_anova(rng, rows=12, cols=9, n=800):
    """Crossed random effects with an interaction cell gathered by two index vectors: ab[r, c]."""
    r, c = rng.integers(0, rows, size=n), rng.integers(0, cols, size=n)
    ab_true = rng.normal(0, 0.5, size=(rows, cols))
    y = 1.0 + rng.normal(0, 0.7, size=rows)[r] + rng.normal(0, 0.7, size=cols)[c] + ab_true[r, c] + rng.normal(0, 1, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        sa, sb, sab = pm.HalfNormal("sa", 1), pm.HalfNormal("sb", 1), pm.HalfNormal("sab", 1)
        a = pm.Normal("a", 0, sa, shape=rows)
        b = pm.Normal("b", 0, sb, shape=cols)
        ab = pm.Normal("ab", 0, sab, shape=(rows, cols))
        pm.Normal("y", mu + a[r] + b[c] + ab[r, c], pm.HalfNormal("sigma", 2), observed=y)
    return model


def discrete_survival(rng, n=300, periods=12, k=2):
    """Discrete-time survival: per-period logit hazards, survival as a cumulative product (pt.cumprod)."""
    X = rng.normal(size=(n, k))
    base = np.linspace(-3.0, -1.5, periods)
    h = 1 / (1 + np.exp(-(base[None, :] + (X @ [0.5, -0.4])[:, None])))
    alive = np.cumprod(rng.uniform(size=(n, periods)) > h, axis=1)
    t = np.minimum(periods - 1, alive.sum(axis=1))
    event = (alive.sum(axis=1) < periods).astype("float64")
    with pm.Model() as model:
        b0 = pm.Normal("b0", -2, 1, shape=periods)
        b = pm.Normal("b", 0, 1, shape=k)
        haz = pm.math.sigmoid(b0[None, :] + pt.dot(X, b)[:, None])
        surv = pt.cumprod(1 - haz, axis=1)
        idx = np.arange(n)
        s_prev = pt.concatenate([pt.ones((n, 1)), surv[:, :-1]], axis=1)[idx, t]
        ll = event * (pt.log(s_prev) + pt.log(haz[idx, t])) + (1 - event) * pt.log(surv[idx, t])
        pm.Potential("ll", pt.sum(ll))
    return model


def grouped_mvnormal(rng, groups=4, n=50, d=3):
    """A covariance per group (batched Cholesky factors from per-group scales and one LKJ correlation)."""
    L = np.linalg.cholesky(np.array([[1.0, 0.4, 0.1], [0.4, 1.0, -0.3], [0.1, -0.3, 1.0]]))
    sds = rng.uniform(0.5, 2.0, size=(groups, d))
    y = np.stack([rng.normal(size=(n, d)) @ (sds[g][:, None] * L).T for g in range(groups)])
    with pm.Model() as model:
        corr_chol, _, _ = pm.LKJCholeskyCov("cc", n=d, eta=2.0, sd_dist=pm.Exponential.dist(1.0, size=d),
                                            compute_corr=True)
        sd = pm.HalfNormal("sd", 2.0, shape=(groups, d))
        chol = sd[:, :, None] * corr_chol[None, :, :]
        mu = pm.Normal("mu", 0, 2, shape=(groups, d))
        pm.MvNormal("y", mu=mu[:, None, :], chol=chol[:, None, :, :], observed=y)
    return model


def tensor_regression(rng, n=200, t=6, k=3):
    """Panel regression on a 3-d design contracted by einsum ('ntk,k->nt') with unit effects."""
    X = rng.normal(size=(n, t, k))
    u = rng.normal(0, 0.5, size=n)
    y = np.einsum("ntk,k->nt", X, [0.8, -0.5, 0.3]) + u[:, None] + rng.normal(0, 0.6, size=(n, t))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=k)
        su = pm.HalfNormal("su", 1)
        unit = pm.Normal("unit", 0, su, shape=n)
        mu = pt.einsum("ntk,k->nt", X, beta) + unit[:, None]
        pm.Normal("y", mu, pm.HalfNormal("sigma", 1), observed=y)
    return model


def hockey_stick(rng, n=400):
    """Segmented regression with a free breakpoint: slope changes at c through pt.maximum(0, x - c)."""
    x = rng.uniform(0, 10, size=n)
    y = 1.0 + 0.2 * x + 0.8 * np.maximum(0, x - 6.0) + rng.normal(0, 0.5, size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 5)
        b1 = pm.Normal("b1", 0, 2)
        b2 = pm.Normal("b2", 0, 2)
        c = pm.Uniform("c", 1, 9)
        pm.StudentT("y", nu=5, mu=a + b1 * x + b2 * pt.maximum(0, x - c), sigma=pm.HalfNormal("s", 1), observed=y)
    return model


def circular_seasonal(rng, periods=52, years=6):
    """A weekly seasonal effect with a circular random-walk prior (pt.roll) and Poisson counts."""
    t = np.arange(periods * years)
    season = np.sin(2 * np.pi * (t % periods) / periods)
    y = rng.poisson(np.exp(1.5 + 0.6 * season))
    with pm.Model() as model:
        s = pm.HalfNormal("s", 0.3)
        eff = pm.Normal("eff", 0, 1, shape=periods)
        pm.Potential("circ", pm.logp(pm.Normal.dist(0, s), eff - pt.roll(eff, 1)).sum())
        a = pm.Normal("a", 0, 2)
        pm.Poisson("y", pt.exp(a + eff[t % periods]), observed=y)
    return model


def mixture_logsumexp(rng, n=500, k=4):
    """A Student-t mixture written with pm.math.logsumexp over the (n, k) component axis."""
    comp = rng.integers(0, k, size=n)
    y = np.array([-4.0, -1.0, 2.0, 5.0])[comp] + rng.standard_t(4, size=n)
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(k))
        mu = pm.Normal("mu", 0, 5, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-3, 3, k))
        sigma = pm.HalfNormal("sigma", 2)
        lp = pm.logp(pm.StudentT.dist(nu=4, mu=mu, sigma=sigma), y[:, None]) + pt.log(w)
        pm.Potential("mix", pm.math.logsumexp(lp, axis=1).sum())
    return model


def repeat_groups(rng, groups=40, per=15):
    """Group means expanded to observations by pt.repeat, lognormal group scales."""
    g_mu = rng.normal(0, 1, size=groups)
    y = np.repeat(g_mu, per) + rng.normal(0, 0.5, size=groups * per)
    with pm.Model() as model:
        m = pm.Normal("m", 0, 2)
        s = pm.HalfNormal("s", 1)
        z = pm.Normal("z", 0, 1, shape=groups)
        ls = pm.Normal("ls", -0.5, 0.5, shape=groups)
        pm.Normal("y", pt.repeat(m + s * z, per), pt.repeat(pt.exp(ls), per), observed=y)
    return model


def clip_tobit(rng, n=300):
    """A regression whose mean is clipped into a band (pt.clip)."""
    x = rng.normal(size=n)
    y = np.clip(0.5 + 1.2 * x, -1, 1.5) + rng.normal(0, 0.3, size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2)
        pm.Normal("y", pt.clip(a + b * x, -1.0, 1.5), pm.HalfNormal("s", 1), observed=y)
    return model


def max_potential(rng, k=6):
    """A soft constraint on the largest of several effects (pt.max) and their product (pt.prod)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=k)
        pm.Potential("mx", -2.0 * pt.max(x) ** 2)
        pm.Potential("pr", -0.1 * pt.prod(pt.exp(x / 4)))
    return model


def periodic_gp(rng, n=50):
    """A marginal GP with a sum of ExpQuad and Periodic kernels."""
    x = np.linspace(0, 10, n)[:, None]
    y = np.sin(2 * x[:, 0]) + 0.3 * x[:, 0] + rng.normal(0, 0.2, size=n)
    with pm.Model() as model:
        ls = pm.Gamma("ls", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        per = pm.Gamma("per", 10, 3)
        cov = eta**2 * pm.gp.cov.ExpQuad(1, ls) + pm.gp.cov.Periodic(1, per, ls=1.0)
        gp = pm.gp.Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=x, y=y, sigma=pm.HalfNormal("sigma", 1))
    return model


def softmax_categorical(rng, n=400, k=5, p=3):
    """Multinomial logistic regression: pm.Categorical with p = softmax(X @ B) over classes."""
    X = rng.normal(size=(n, p))
    B = rng.normal(size=(p, k))
    logits = X @ B
    pr = np.exp(logits - logits.max(1, keepdims=True)); pr /= pr.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=q) for q in pr])
    with pm.Model() as model:
        Bv = pm.Normal("B", 0, 2, shape=(p, k))
        pm.Categorical("y", p=pt.special.softmax(pt.dot(X, Bv), axis=-1), observed=y)
    return model


def zero_inflated_binomial(rng, n=300):
    y = np.where(rng.uniform(size=n) < 0.3, 0, rng.binomial(10, 0.4, size=n))
    with pm.Model() as model:
        psi = pm.Beta("psi", 2, 2)
        p = pm.Beta("p", 2, 2)
        pm.ZeroInflatedBinomial("y", psi=psi, n=10, p=p, observed=y)
    return model


def truncated_lognormal(rng, n=300):
    y = rng.lognormal(0.5, 0.6, size=4 * n)
    y = y[(y > 0.8) & (y < 6)][:n]
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        s = pm.HalfNormal("s", 1)
        pm.Truncated("y", pm.LogNormal.dist(mu, s), lower=0.8, upper=6.0, observed=y)
    return model


def censored_studentt(rng, n=300):
    y = np.clip(1.0 + rng.standard_t(4, size=n), -1.5, 3.0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        s = pm.HalfNormal("s", 1)
        pm.Censored("y", pm.StudentT.dist(nu=4, mu=mu, sigma=s), lower=-1.5, upper=3.0, observed=y)
    return model


def mv_mixture(rng, n=200, d=2):
    """A two-component mixture of bivariate normals (pm.Mixture of MvNormal components)."""
    comp = rng.integers(0, 2, size=n)
    y = np.array([[-2.0, 0.0], [2.0, 1.0]])[comp] + rng.normal(size=(n, d))
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu0 = pm.Normal("mu0", -1, 2, shape=d)
        mu1 = pm.Normal("mu1", 1, 2, shape=d)
        comps = [pm.MvNormal.dist(mu0, np.eye(d)), pm.MvNormal.dist(mu1, np.eye(d))]
        pm.Mixture("y", w=w, comp_dists=comps, observed=y)
    return model


def diff_smoothing(rng, t=200):
    """A second-difference smoothing prior on a trend (pt.diff twice)."""
    trend = np.cumsum(np.cumsum(rng.normal(0, 0.02, size=t)))
    y = trend + rng.normal(0, 0.3, size=t)
    with pm.Model() as model:
        f = pm.Normal("f", 0, 5, shape=t)
        lam = pm.HalfNormal("lam", 1)
        pm.Potential("smooth", pm.logp(pm.Normal.dist(0, lam * 0.05), pt.diff(f, n=2)).sum())
        pm.Normal("y", f, pm.HalfNormal("s", 1), observed=y)
    return model


def interpolated_prior(rng, n=100):
    """An empirical prior given on a grid (pm.Interpolated)."""
    grid = np.linspace(-4, 4, 60)
    dens = np.exp(-0.5 * grid**2) * (1 + 0.5 * np.sin(grid))
    y = rng.normal(0.5, 1, size=n)
    with pm.Model() as model:
        m = pm.Interpolated("m", grid, dens)
        pm.Normal("y", m, 1, observed=y)
    return model


def logaddexp_mixture(rng, n=400):
    """A two-part mixture by pm.math.logaddexp of exponential and gamma log-densities."""
    y = np.where(rng.uniform(size=n) < 0.4, rng.exponential(0.5, size=n), rng.gamma(5, 1, size=n))
    with pm.Model() as model:
        w = pm.Beta("w", 2, 2)
        lam = pm.Gamma("lam", 2, 1)
        a = pm.Gamma("a", 4, 1)
        lp = pm.math.logaddexp(pt.log(w) + pm.logp(pm.Exponential.dist(lam), y),
                               pt.log1p(-w) + pm.logp(pm.Gamma.dist(a, 1.0), y))
        pm.Potential("mix", lp.sum())
    return model


def coords_hierarchy(rng, g=8, n=240):
    """Hierarchical Poisson rates with named dims, pm.Data and a group-level log link."""
    grp = rng.integers(0, g, size=n)
    expo = rng.uniform(0.5, 2, size=n)
    y = rng.poisson(expo * np.exp(rng.normal(0.5, 0.4, size=g))[grp])
    with pm.Model(coords={"group": np.arange(g), "obs": np.arange(n)}) as model:
        gi = pm.Data("gi", grp, dims="obs")
        ex = pm.Data("ex", expo, dims="obs")
        mu = pm.Normal("mu", 0, 1)
        sd = pm.HalfNormal("sd", 1)
        z = pm.Normal("z", 0, 1, dims="group")
        rate = pm.Deterministic("rate", pt.exp(mu + sd * z), dims="group")
        pm.Poisson("y", ex * rate[gi], observed=y, dims="obs")
    return model


def flat_priors(rng, n=200):
    x = rng.normal(size=n)
    y = 2 + 0.5 * x + rng.normal(0, 0.4, size=n)
    with pm.Model() as model:
        a = pm.Flat("a")
        b = pm.Flat("b")
        s = pm.HalfFlat("s")
        pm.Normal("y", a + b * x, s, observed=y)
    return model


def discrete_weibull_counts(rng, n=200):
    """Counts of a few (pm.DiscreteWeibull); its logp is -inf once q**(y**beta) underflows."""
    y = rng.geometric(0.6, size=n) - 1
    with pm.Model() as model:
        q = pm.Beta("q", 4, 2)
        beta = pm.Gamma("beta", 8, 8)
        pm.DiscreteWeibull("y", q=q, beta=beta, observed=y)
    return model


def std_normalized(rng, n=150, k=4):
    """Effects centred and scaled by their own mean and standard deviation (pt.mean, pt.std)."""
    X = rng.normal(size=(n, k))
    y = X @ np.array([1.0, -0.5, 0.2, 0.0]) + rng.normal(0, 0.5, size=n)
    with pm.Model() as model:
        raw = pm.Normal("raw", 0, 1, shape=k)
        b = (raw - pt.mean(raw)) / pt.std(raw)
        scale = pm.HalfNormal("scale", 1)
        pm.Normal("y", pt.dot(X, scale * b), pm.HalfNormal("s", 1), observed=y)
    return model


def cumsum_2d(rng, g=10, t=30):
    """Random walks per group along axis 1 (pt.cumsum over a matrix)."""
    y = np.cumsum(rng.normal(0, 0.3, size=(g, t)), axis=1) + rng.normal(0, 0.2, size=(g, t))
    with pm.Model() as model:
        s = pm.HalfNormal("s", 0.5)
        steps = pm.Normal("steps", 0, 1, shape=(g, t))
        pm.Normal("y", pt.cumsum(s * steps, axis=1), pm.HalfNormal("e", 0.5), observed=y)
    return model


def kron_outer(rng, r=8, c=6):
    """A matrix of effects as an outer product of row and column effects (pt.outer) plus noise."""
    y = np.outer(rng.normal(size=r), rng.normal(size=c)) + rng.normal(0, 0.3, size=(r, c))
    with pm.Model() as model:
        u = pm.Normal("u", 0, 1, shape=r)
        v = pm.Normal("v", 0, 1, shape=c)
        pm.Normal("y", pt.outer(u, v), pm.HalfNormal("s", 1), observed=y)
    return model


def inverse_link_erfinv(rng, n=300):
    """Quantile-mapped effects: a uniform parameter sent through the normal quantile (erfinv)."""
    y = rng.normal(0.3, 1, size=n)
    with pm.Model() as model:
        u = pm.Uniform("u", 0.01, 0.99)
        mu = np.sqrt(2) * pt.erfinv(2 * u - 1)
        pm.Normal("y", mu, 1, observed=y)
    return model


def pareto_tails(rng, n=300):
    """Heavy-tailed sizes above a known floor: a Pareto likelihood with a free shape."""
    floor = np.exp(0.2 * rng.normal(size=n))
    y = floor * (1.0 + rng.pareto(2.5, size=n))
    with pm.Model() as model:
        a = pm.HalfNormal("a", 3)
        pm.Pareto("y", alpha=a, m=floor, observed=y)
    return model


def customdist_exp(rng, n=300):
    """A CustomDist given by its generative graph, exp of a Normal plus a shift: PyMC derives its logp."""
    y = 1.0 + np.exp(rng.normal(0.3, 0.5, size=n))
    def dist(mu, s, size):
        return pt.exp(pm.Normal.dist(mu, s, size=size)) + 1.0
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        s = pm.HalfNormal("s", 1)
        pm.CustomDist("y", mu, s, dist=dist, observed=y)
    return model


def fitc_gp(rng, n=200, m=12):
    """A sparse GP regression (FITC, pm.gp.MarginalApprox) with 12 inducing points."""
    X = np.sort(rng.uniform(0, 10, size=n))[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    Xu = np.linspace(0, 10, m)[:, None]
    with pm.Model() as model:
        ell = pm.Gamma("ell", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        cov = eta**2 * pm.gp.cov.ExpQuad(1, ell)
        gp = pm.gp.MarginalApprox(cov_func=cov, approx="FITC")
        sigma = pm.HalfNormal("sigma", 1)
        gp.marginal_likelihood("y", X=X, Xu=Xu, y=y, sigma=sigma)
    return model


def censored_negbin(rng, n=300, limit=12):
    """Counts top-coded at 12 from a negative binomial (pm.Censored: the regularized incomplete beta)."""
    x = rng.normal(size=n)
    y = np.minimum(rng.negative_binomial(5, 5 / (5 + np.exp(1.5 + 0.3 * x))), limit)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=2)
        alpha = pm.Gamma("alpha", 2, 0.5)
        nb = pm.NegativeBinomial.dist(mu=pt.exp(b[0] + b[1] * x), alpha=alpha)
        pm.Censored("y", nb, lower=None, upper=limit, observed=y)
    return model


def order_stats(rng, n=50):
    """Sorted latent values (pt.sort) matched to sorted observations."""
    y = np.sort(rng.normal(1.0, 2.0, size=n))
    with pm.Model() as model:
        z = pm.Normal("z", 0, 1, shape=n)
        mu = pm.Normal("mu", 0, 3)
        s = pm.HalfNormal("s", 2)
        pm.Normal("y", pt.sort(mu + s * z), 0.5, observed=y)
    return model


def logit_spline_gam(rng, n=400, k=8):
    """A Bernoulli GAM: a logit link over a Gaussian-bump basis with a random-walk prior on its weights."""
    x = rng.uniform(0, 1, size=n)
    centers = np.linspace(0, 1, k)
    B = np.exp(-((x[:, None] - centers) ** 2) / (2 * 0.1**2))
    y = rng.random(n) < 1 / (1 + np.exp(-np.sin(6 * x)))
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1)
        w = pm.GaussianRandomWalk("w", sigma=s, init_dist=pm.Normal.dist(0, 1), shape=k)
        pm.Bernoulli("y", logit_p=pt.dot(B, w), observed=y)
    return model


def expm_linear_ode(rng, t=20):
    """A 2-state linear ODE solved by matrix exponentials (pt.linalg.expm) at 20 times."""
    ts = np.linspace(0.1, 4, t)
    y = np.exp(-0.7 * ts)[:, None] * np.array([1.0, 0.5]) + 0.05 * rng.normal(size=(t, 2))
    with pm.Model() as model:
        k = pm.HalfNormal("k", 1, shape=3)
        A = pt.stack([pt.stack([-k[0], k[1]]), pt.stack([k[0], -k[1] - k[2]])])
        x0 = pt.as_tensor(np.array([1.0, 0.5]))
        xs = pt.stack([pt.dot(pt.linalg.expm(A * tt), x0) for tt in ts])
        s = pm.HalfNormal("s", 0.2)
        pm.Normal("y", xs, s, observed=y)
    return model


MODELS = {f.__name__: f for f in [
    radon, eight_schools, seed_gamma, seed_lognormal, logistic_glm, poisson_glm, negative_binomial,
    ordinal_regression, dirichlet_multinomial, mvnormal_lkj, hierarchical_large, censored_normal, gp_marginal,
    gp_latent, ar2, random_walk, stochastic_volatility, zero_sum_hierarchy, beta_regression, horseshoe,
    normal_mixture, weibull_survival, simplex_categorical, studentt_robust, zero_inflated_poisson, garch11_scan,
    hmm_scan, structural_ts, skew_normal, truncated_normal, beta_binomial, multinomial_logit, poisson_mixture,
    hurdle_gamma, von_mises, gamma_glm, cumsum_trend, ex_gaussian, hsgp, ordered_probit, binomial_hierarchy, bnn,
    irt_2pl, laplace_regression, gumbel_logistic, lognormal_regression, wald_times, censored_exponential, mv_studentt,
    rice, changepoint, poisson_offset, asymmetric_laplace, truncated_gamma, censored_weibull, zero_inflated_negbin,
    hurdle_poisson, normal_t_mixture, mvnormal_dense, geometric_zib, custom_potential, logitnormal_kumaraswamy,
    moyal_triangular, dp_mixture, spline_rw, ordered_logsumexp, solve_det, skew_student_t, poisson_process,
    probit_bernoulli, varying_slopes_logistic, exp_decay_curves, lognormal_aft, zip_logit_inflation,
    betabinomial_groups, lognormal_mixture, seasonal_rw_studentt, lowrank_mvnormal, gamma_poisson_latent,
    polynomial_negbin, multinomial_regression, halft_scale_hierarchy, matrix_factorization, cloglog_binomial,
    dirichlet_regression, ordinal_cumsum_cuts, matrix_normal, icar_spatial, euler_maruyama, hurdle_lognormal,
    censored_poisson, ordered_multinomial, inverse_gamma_regression, slogdet_potential, argsort_rank,
    missing_imputation, switch_isnan_mask, mv_random_walk, truncated_poisson, mvnormal_precision,
    missing_imputation_2d, kronecker_normal, car_spatial, lkj_corr, spectral_potentials, upper_cholesky_mvnormal,
    censored_gamma_shape, truncated_studentt, hurdle_negbin, two_way_anova, discrete_survival, grouped_mvnormal,
    tensor_regression, hockey_stick, circular_seasonal, mixture_logsumexp, repeat_groups,
    clip_tobit, max_potential, periodic_gp, softmax_categorical, zero_inflated_binomial, truncated_lognormal,
    censored_studentt, mv_mixture, diff_smoothing, interpolated_prior, logaddexp_mixture, coords_hierarchy,
    flat_priors, discrete_weibull_counts, std_normalized, cumsum_2d, kron_outer, inverse_link_erfinv,
    pareto_tails, customdist_exp, fitc_gp, censored_negbin, order_stats, logit_spline_gam, expm_linear_ode,
]}


def build(name, seed=0):
    return MODELS[name](np.random.default_rng(seed))
