"""PyMC models whose graphs hold ops beyond Ember's original set: does each
compile and sample through ember.nutpie, which ops fall back to Python, and
its steady-state logp+gradient time against nutpie's numba backend.

    python fallback_models.py MODEL [--draws N] [--chains K]    # one JSON line
    python fallback_models.py --list

MODEL: mixture, zip, softmax_regression, lkj_corr, garch11, random_walk.
Each runs in a fresh process (run it once per model); times are medians of
~0.5 ms batches of a C loop over the nutpie function pointers (ctimer.py).
"""

import json
import os
import re
import sys
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _models():
    import pymc as pm
    import pytensor.tensor as pt

    rng = np.random.default_rng(42)

    def mixture():
        y = np.concatenate([rng.normal(-2, 1, 300), rng.normal(3, 0.5, 200)])
        with pm.Model() as m:
            w = pm.Dirichlet("w", np.ones(2))
            mu = pm.Normal("mu", 0, 5, shape=2, transform=pm.distributions.transforms.ordered,
                           initval=np.array([-1.0, 1.0]))
            sigma = pm.HalfNormal("sigma", 2, shape=2)
            pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y)
        return m

    def zip_():
        y = np.where(rng.random(400) < 0.3, 0, rng.poisson(3.0, 400))
        with pm.Model() as m:
            psi = pm.Beta("psi", 1, 1)
            mu = pm.Exponential("mu", 1.0)
            pm.ZeroInflatedPoisson("y", psi=psi, mu=mu, observed=y)
        return m

    def softmax_regression():
        n, k, c = 300, 4, 3
        X = rng.normal(size=(n, k))
        beta_true = rng.normal(size=(k, c))
        logits = X @ beta_true
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        y = np.array([rng.choice(c, p=pi) for pi in p])
        with pm.Model() as m:
            beta = pm.Normal("beta", 0, 1, shape=(k, c))
            alpha = pm.Normal("alpha", 0, 1, shape=c)
            pm.Categorical("y", p=pt.special.softmax(X @ beta + alpha, axis=-1), observed=y)
        return m

    def lkj_corr():
        n = 3
        true_corr = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, -0.3], [0.2, -0.3, 1.0]])
        y = rng.multivariate_normal(np.zeros(n), true_corr, size=200)
        with pm.Model() as m:
            if int(pm.__version__.split(".")[0]) >= 6:  # PyMC 6: the Cholesky factor of the correlation
                chol = pm.LKJCorr("corr", n=n, eta=2.0)
                corr = chol @ chol.T
            else:  # PyMC 5: the matrix (its logp checks MatrixIsPositiveDefinite)
                corr = pm.LKJCorr("corr", n=n, eta=2.0, return_matrix=True)
            sigma = pm.HalfNormal("sigma", 1.0, shape=n)
            cov = corr * sigma[:, None] * sigma[None, :]
            pm.MvNormal("y", mu=np.zeros(n), cov=cov, observed=y)
        return m

    def garch11():
        r = rng.normal(0, 1, 200) * 0.1
        with pm.Model() as m:
            omega = pm.HalfNormal("omega", 0.1)
            alpha_1 = pm.Beta("alpha_1", 2, 5)
            beta_1 = pm.Beta("beta_1", 5, 2)
            pm.GARCH11("y", omega=omega, alpha_1=alpha_1, beta_1=beta_1, initial_vol=0.1, observed=r)
        return m

    def random_walk():
        y = np.cumsum(rng.normal(0, 0.5, 100)) + rng.normal(0, 0.3, 100)
        with pm.Model() as m:
            sigma = pm.HalfNormal("sigma", 1.0)
            walk = pm.GaussianRandomWalk("walk", sigma=sigma, init_dist=pm.Normal.dist(0, 5), steps=99)
            obs_sigma = pm.HalfNormal("obs_sigma", 1.0)
            pm.Normal("y", mu=walk, sigma=obs_sigma, observed=y)
        return m

    return {"mixture": mixture, "zip": zip_, "softmax_regression": softmax_regression,
            "lkj_corr": lkj_corr, "garch11": garch11, "random_walk": random_walk}


def _fallback_ops(compiled):
    ops = {}
    for prog in (compiled.logp_program, compiled.expand_program):
        for cb in getattr(prog, "callbacks", []):
            ops[cb.op_name] = ops.get(cb.op_name, 0) + 1
    return ops


def main():
    args = sys.argv[1:]
    models = _models()
    if "--list" in args:
        print(" ".join(models))
        return
    name = args[0]
    draws = int(args[args.index("--draws") + 1]) if "--draws" in args else 300
    chains = int(args[args.index("--chains") + 1]) if "--chains" in args else 4
    import nutpie
    import pytensor

    import ember
    import ember.nutpie as en
    from ember import native
    from ctimer import Caller, load as timer_lib

    res = {"model": name, "pytensor": pytensor.__version__, "nutpie": nutpie.__version__}
    model = models[name]()
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            t = time.perf_counter()
            ec = en.compile_pymc_model(model)
            res["ember_compile_s"] = round(time.perf_counter() - t, 2)
        res["fallback_ops"] = _fallback_ops(ec)
        res["warnings"] = sorted({m.group(1) for w in rec if issubclass(w.category, ember.FallbackWarning)
                                  for m in [re.search(r"op (\S+) has no native kernel", str(w.message))] if m})
    except Exception as e:  # noqa: BLE001
        res["ember_compile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        traceback.print_exc(file=sys.stderr)
        print(json.dumps(res))
        return
    try:
        t = time.perf_counter()
        nc = nutpie.compile_pymc_model(model, backend="numba")
        res["numba_compile_s"] = round(time.perf_counter() - t, 2)
    except Exception as e:  # noqa: BLE001
        nc = None
        res["numba_compile_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    x0 = np.asarray(ec.initial_point_func(1), dtype="float64")
    lib = timer_lib()
    callers = [Caller(lib, "ember", native.logp_address, ec.logp_program.nutpie_handle(), x0)]
    if nc is not None:
        callers.append(Caller(lib, "nutpie-numba", nc.compiled_logp_func.address, nc.user_data.ctypes.data, x0))
    for c in callers:
        for _ in range(20):
            c.batch(1, record=False)
    if nc is not None:
        a, b = callers
        res["rel_diff"] = {"logp": abs(a.logp[0] - b.logp[0]) / max(1.0, abs(b.logp[0])),
                           "grad_max": float(np.max(np.abs(a.grad - b.grad) / np.maximum(1.0, np.abs(b.grad))))}
    sizes = {c.name: c.batch_size() for c in callers}
    for _ in range(101):
        for c in callers:
            c.batch(sizes[c.name])
    for c in callers:
        res[f"{c.name}_us"] = round(float(np.median(c.wall)) / 1e3, 2)
    t = time.perf_counter()
    try:
        idata = nutpie.sample(ec, draws=draws, tune=draws, chains=chains, cores=chains, progress_bar=False, seed=1)
        res["sample_s"] = round(time.perf_counter() - t, 1)
        post = idata.posterior
        res["draws"] = int(post.sizes["chain"] * post.sizes["draw"])
        res["divergences"] = int(idata.sample_stats["diverging"].sum())
        res["sampled"] = True
    except Exception as e:  # noqa: BLE001
        res["sample_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        res["sampled"] = False
    res["load_avg"] = [round(x, 1) for x in os.getloadavg()]
    print(json.dumps(res))


if __name__ == "__main__":
    main()
