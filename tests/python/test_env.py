"""The pinned environment works: every component the suite needs imports
(a missing one fails here, not as skipped tests), and nutpie's numba
backend samples a tiny model."""

import numpy as np
import pymc as pm
import nutpie


def test_every_required_component_imports():
    import distributed  # noqa: F401
    import mpmath  # noqa: F401
    import pytensor  # noqa: F401
    import scipy  # noqa: F401
    assert pm.__version__ and nutpie.__version__ and pytensor.__version__


def test_nutpie_numba_backend_samples_tiny_model():
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
