"""The pinned environment works: nutpie's numba backend samples a tiny model."""

import numpy as np
import pytest


def test_nutpie_numba_backend_samples_tiny_model():
    pm = pytest.importorskip("pymc")
    nutpie = pytest.importorskip("nutpie")
    y = np.array([0.1, -0.3, 0.5, 1.2, 0.4])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
    compiled = nutpie.compile_pymc_model(model, backend="numba")
    trace = nutpie.sample(compiled, draws=300, tune=300, chains=2, progress_bar=False, seed=1)
    # Conjugate posterior: mean = sum(y) / (n + 1/100), sd ~ 1/sqrt(n).
    post_mean = y.sum() / (len(y) + 0.01)
    est = float(trace.posterior["mu"].mean())
    assert abs(est - post_mean) < 0.25
