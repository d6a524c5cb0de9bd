"""Small PyMC models whose logp+grad graphs exercise Ember (tests/data/models).

Every builder takes a seed and returns a pm.Model; data are simulated from the
model's own structure so posteriors are sensible. MODELS maps names to builders.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt


def _seed_model(kind, groups, shared, n_per_group, seed):
    """The seed report's model: a pool of scalar parameters every group's mean
    depends on, and a per-group coefficient of variation."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(0.0, 0.3, size=(groups, shared))
    theta_true = rng.normal(size=shared)
    with pm.Model() as model:
        pool = [pm.Normal(f"theta_{j}", 0.0, 1.0) for j in range(shared)]
        for g in range(groups):
            cv = pm.HalfNormal(f"cv_{g}", 0.5)
            mu = pt.exp(1.0 + sum(weights[g, j] * pool[j] for j in range(shared)))
            mean = np.exp(1.0 + weights[g] @ theta_true)
            cv_true = 0.3
            if kind == "gamma":
                y = rng.gamma(1.0 / cv_true**2, mean * cv_true**2, size=n_per_group)
                pm.Gamma(f"y_{g}", mu=mu, sigma=mu * cv, observed=y)
            else:
                s = np.sqrt(np.log1p(cv_true**2))
                y = rng.lognormal(np.log(mean) - s**2 / 2, s, size=n_per_group)
                sigma = pt.sqrt(pt.log(1.0 + cv**2))
                pm.LogNormal(f"y_{g}", mu=pt.log(mu) - 0.5 * sigma**2, sigma=sigma, observed=y)
    return model


def seed_gamma(seed=0, groups=6, shared=8, n_per_group=20):
    return _seed_model("gamma", groups, shared, n_per_group, seed)


def seed_lognormal(seed=0, groups=6, shared=8, n_per_group=20):
    return _seed_model("lognormal", groups, shared, n_per_group, seed)


_SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
_SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools_centered(seed=0):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, _SCHOOLS_SIGMA, observed=_SCHOOLS_Y)
    return model


def eight_schools_noncentered(seed=0):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_t = pm.Normal("theta_t", 0.0, 1.0, shape=8)
        theta = pm.Deterministic("theta", mu + tau * theta_t)
        pm.Normal("y", theta, _SCHOOLS_SIGMA, observed=_SCHOOLS_Y)
    return model


def radon(seed=0, counties=12, n=120):
    """Varying intercepts and slopes by county (radon-style)."""
    rng = np.random.default_rng(seed)
    county = rng.integers(0, counties, size=n)
    floor = rng.integers(0, 2, size=n).astype("float64")
    a_true = rng.normal(1.5, 0.4, size=counties)
    b_true = rng.normal(-0.6, 0.2, size=counties)
    y = a_true[county] + b_true[county] * floor + rng.normal(0.0, 0.7, size=n)
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0.0, 10.0)
        sigma_a = pm.HalfNormal("sigma_a", 1.0)
        mu_b = pm.Normal("mu_b", 0.0, 10.0)
        sigma_b = pm.HalfNormal("sigma_b", 1.0)
        a = pm.Normal("a", mu_a, sigma_a, shape=counties)
        b = pm.Normal("b", mu_b, sigma_b, shape=counties)
        sigma = pm.Exponential("sigma", 1.0)
        pm.Normal("log_radon", a[county] + b[county] * floor, sigma, observed=y)
    return model


def logistic_glm(seed=0, groups=5, n=200, k=3):
    """Bernoulli GLM with group intercepts and X @ beta."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, groups, size=n)
    X = rng.normal(size=(n, k))
    beta_true = rng.normal(size=k)
    alpha_true = rng.normal(0.0, 0.5, size=groups)
    p = 1.0 / (1.0 + np.exp(-(alpha_true[group] + X @ beta_true)))
    y = (rng.uniform(size=n) < p).astype("int64")
    with pm.Model() as model:
        mu_alpha = pm.Normal("mu_alpha", 0.0, 2.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        alpha = pm.Normal("alpha", mu_alpha, sigma_alpha, shape=groups)
        beta = pm.Normal("beta", 0.0, 1.0, shape=k)
        pm.Bernoulli("y", logit_p=alpha[group] + pt.dot(X, beta), observed=y)
    return model


def poisson_glm(seed=0, n=150, k=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    beta_true = np.array([0.4, -0.3])[:k]
    y = rng.poisson(np.exp(0.5 + X @ beta_true))
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0.0, 2.0)
        beta = pm.Normal("beta", 0.0, 1.0, shape=k)
        pm.Poisson("y", mu=pt.exp(intercept + pt.dot(X, beta)), observed=y)
    return model


def studentt_regression(seed=0, n=100):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.standard_t(4.0, size=n) * 0.5
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 5.0)
        b = pm.Normal("b", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("y", nu=nu, mu=a + b * x, sigma=sigma, observed=y)
    return model


def data_regression(seed=0, n=50):
    """Linear regression on pm.Data: x and y are shared inputs of the graph."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.5 - 1.5 * x + rng.normal(0.0, 0.3, size=n)
    with pm.Model() as model:
        x_data = pm.Data("x_data", x)
        y_data = pm.Data("y_data", y)
        a = pm.Normal("a", 0.0, 5.0)
        b = pm.Normal("b", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", a + b * x_data, sigma, observed=y_data)
    return model


def mvnormal_lkj(seed=0, n=40, d=3):
    """Correlated MvNormal with an LKJ Cholesky prior (linear algebra ops)."""
    rng = np.random.default_rng(seed)
    cov = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, -0.3], [0.2, -0.3, 1.5]])[:d, :d]
    y = rng.multivariate_normal(np.zeros(d), cov, size=n)
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("chol", n=d, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=d))
        mu = pm.Normal("mu", 0.0, 2.0, shape=d)
        pm.MvNormal("y", mu=mu, chol=chol, observed=y)
    return model


def structural_time_series(seed=0, t=60):
    """pymc-extras' structural time series: a local linear trend with measurement
    error over t daily observations; its Kalman filter is a Scan. Needs pymc-extras."""
    import pandas as pd
    from pymc_extras.statespace import structural as st

    rng = np.random.default_rng(seed)
    y = np.cumsum(0.1 + rng.normal(0, 0.3, t)) + rng.normal(0, 0.5, t)
    data = pd.DataFrame({"y": y}, index=pd.date_range("2024-01-01", periods=t, freq="D"))
    ss = (st.LevelTrend(order=2, innovations_order=[1, 1]) + st.MeasurementError()).build(verbose=False)
    with pm.Model(coords=ss.coords) as model:
        pm.Deterministic("P0", pt.eye(ss.k_states) * 10, dims=ss.param_dims["P0"])
        pm.Normal("initial_level_trend", sigma=10, dims=ss.param_dims["initial_level_trend"])
        pm.HalfNormal("sigma_level_trend", sigma=1, dims=ss.param_dims["sigma_level_trend"])
        pm.Exponential("sigma_MeasurementError", 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pymc-extras' notes on the data's frequency
            ss.build_statespace_graph(data)
    return model


def seed_gamma_large(seed=0):
    """The seed report's largest grid point (18 groups, 24 shared parameters)."""
    return seed_gamma(seed, groups=18, shared=24)


def seed_lognormal_large(seed=0):
    return seed_lognormal(seed, groups=18, shared=24)


MODELS = {
    "seed_gamma": seed_gamma,
    "seed_lognormal": seed_lognormal,
    "seed_gamma_large": seed_gamma_large,
    "seed_lognormal_large": seed_lognormal_large,
    "eight_schools_centered": eight_schools_centered,
    "eight_schools_noncentered": eight_schools_noncentered,
    "radon": radon,
    "logistic_glm": logistic_glm,
    "poisson_glm": poisson_glm,
    "studentt_regression": studentt_regression,
    "data_regression": data_regression,
    "mvnormal_lkj": mvnormal_lkj,
}
