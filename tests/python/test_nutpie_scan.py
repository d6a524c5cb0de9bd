"""A PyMC model with a Scan (GARCH11) through ember.nutpie: the Scan and its
gradient run natively inside nutpie's chain threads (which call the C ABI
without the GIL); logp matches PyTensor's Python linker and the posterior
matches nutpie-numba's within 4 Monte Carlo standard errors."""

import warnings

import numpy as np
import pytest

from native_helpers import call_logp, nutpie_point, require_native

import arviz
import pymc as pm
import nutpie
import pytensor  # noqa: E402

import ember  # noqa: E402
import ember.nutpie as en  # noqa: E402

native = require_native()


def garch_model():
    r = np.random.default_rng(3).normal(0, 1, 120) * 0.1
    with pm.Model() as m:
        omega = pm.HalfNormal("omega", 0.1)
        alpha_1 = pm.Beta("alpha_1", 2, 5)
        beta_1 = pm.Beta("beta_1", 5, 2)
        pm.GARCH11("y", omega=omega, alpha_1=alpha_1, beta_1=beta_1, initial_vol=0.1, observed=r)
    return m


@pytest.mark.covers("Scan")
def test_garch11_runs_natively_matches_and_its_posterior_agrees_with_numba():
    model = garch_model()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        compiled = en.compile_pymc_model(model)
    assert not [w for w in rec if issubclass(w.category, ember.FallbackWarning)]
    assert not compiled.logp_program.callbacks

    logp = model.compile_logp(jacobian=True, mode=pytensor.compile.mode.Mode(linker="py", optimizer="fast_run"))
    x0 = np.asarray(compiled.initial_point_func(0), dtype="float64")
    rc, lp, grad = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)
    assert rc == 0 and np.all(np.isfinite(grad))
    np.testing.assert_allclose(lp, logp(nutpie_point(model, x0)), rtol=1e-10)

    kw = dict(draws=600, tune=400, chains=4, cores=4, progress_bar=False)
    ours = nutpie.sample(compiled, seed=2, **kw).posterior
    theirs = nutpie.sample(nutpie.compile_pymc_model(model, backend="numba"), seed=5, **kw).posterior
    assert ours.sizes["chain"] == 4 and ours.sizes["draw"] == 600
    assert compiled.logp_program.nutpie_calls() > 2400
    for name in ("omega", "alpha_1", "beta_1"):
        a, b = ours[name], theirs[name]
        se = np.hypot(float(arviz.mcse(a.to_dataset())[name]), float(arviz.mcse(b.to_dataset())[name]))
        assert abs(float(a.mean()) - float(b.mean())) < 4 * se, (name, float(a.mean()), float(b.mean()), se)
