"""A pymc-extras structural time-series model (local linear trend plus
measurement error, a Kalman filter in a Scan) through ember.nutpie: it runs
natively, logp and gradient match PyTensor's Python linker, and the posterior
matches nutpie-numba's within 4 Monte Carlo standard errors."""

import warnings

import numpy as np
import pytest

from native_helpers import call_logp, nutpie_point, require_native

import arviz  # noqa: E402
import pymc_extras  # noqa: E402,F401  (scripts/setup-python.sh installs it on both stacks)
import nutpie  # noqa: E402
import pytensor  # noqa: E402

import ember  # noqa: E402
import ember.nutpie as en  # noqa: E402
from ember.testing import models  # noqa: E402

native = require_native()


@pytest.mark.covers("Scan", "Blockwise")
def test_structural_time_series_runs_natively_matches_and_its_posterior_agrees_with_numba():
    model = models.structural_time_series(seed=3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        compiled = en.compile_pymc_model(model, cache=False)
    assert not [w for w in rec if issubclass(w.category, ember.FallbackWarning)]
    assert not compiled.logp_program.callbacks

    py = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
    logp = model.compile_logp(jacobian=True, mode=py)
    dlogp = model.compile_dlogp(jacobian=True, mode=py)
    for seed in (0, 1, 2):
        x0 = np.asarray(compiled.initial_point_func(seed), dtype="float64")
        rc, lp, grad = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)
        assert rc == 0
        point = nutpie_point(model, x0)
        np.testing.assert_allclose(lp, logp(point), rtol=1e-10)
        want = dlogp(point)
        np.testing.assert_allclose(grad, want, rtol=1e-9, atol=1e-9 * np.max(np.abs(want)))

    kw = dict(draws=500, tune=500, chains=2, cores=2, progress_bar=False)
    ours = nutpie.sample(compiled, seed=2, **kw).posterior
    theirs = nutpie.sample(nutpie.compile_pymc_model(model, backend="numba"), seed=5, **kw).posterior
    assert compiled.logp_program.nutpie_calls() > 2000
    for name in ("sigma_level_trend", "sigma_MeasurementError", "initial_level_trend"):
        a, b = ours[name], theirs[name]
        mean_a, mean_b = a.mean(("chain", "draw")).values, b.mean(("chain", "draw")).values
        se = np.hypot(arviz.mcse(a.to_dataset())[name].values, arviz.mcse(b.to_dataset())[name].values)
        assert np.all(np.abs(mean_a - mean_b) < 4 * se), (name, mean_a, mean_b, se)
