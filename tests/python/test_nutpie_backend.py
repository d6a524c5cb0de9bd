"""ember.nutpie: PyMC models built live, logp+gradient against PyTensor's
Python implementations, sampling against nutpie's numba backend, with_data."""

import numpy as np
import pytest

from native_helpers import assert_close_rel, call_logp, reference_mode, require_native

import pymc as pm
import nutpie

native = require_native()
import ember.nutpie as enutpie  # noqa: E402
from ember.testing import models  # noqa: E402
from ember._nutpie_compat import make_functions  # noqa: E402
from ember.nutpie import TESTED_NUTPIE  # noqa: E402

LIVE = ["seed_gamma", "seed_lognormal", "eight_schools_centered", "radon", "logistic_glm", "poisson_glm",
        "studentt_regression", "data_regression", "mvnormal_lkj"]


def test_nutpie_version_is_the_tested_one():
    assert nutpie.__version__ in TESTED_NUTPIE


def _reference_logp(model):
    """nutpie's logp+grad function on PyTensor's Python implementations."""
    from pymc.initial_point import make_initial_point_fn

    point_fn = make_initial_point_fn(model=model, default_strategy="support_point", return_transformed=True)
    _, _, logp_fn, *_ = make_functions(model, mode=reference_mode(), compute_grad=True, join_expanded=True,
                                       pymc_initial_point_fn=point_fn)
    return logp_fn


@pytest.mark.parametrize("name", LIVE)
def test_live_model_logp_and_grad_match_pytensor(name):
    model = models.MODELS[name](seed=3)
    compiled = enutpie.compile_pymc_model(model)
    ref = _reference_logp(model)
    rng = np.random.default_rng(11)
    handle = compiled.logp_program.nutpie_handle()
    for k in range(10):
        x = compiled.initial_point_func(k) + rng.normal(0.0, 0.5, size=compiled.n_dim)
        want_logp, want_grad = ref(x)
        rc, logp, grad = call_logp(native.logp_address, handle, x)
        assert rc == 0
        assert_close_rel(logp, want_logp, what=f"{name} logp at point {k}")
        assert_close_rel(grad, want_grad, what=f"{name} grad at point {k}")


def _posterior_means_agree(idata_a, idata_b, k=4.0):
    import arviz as az

    names = [v for v in idata_a.posterior.data_vars]
    ma, mb = idata_a.posterior.mean(("chain", "draw")), idata_b.posterior.mean(("chain", "draw"))
    sa, sb = az.mcse(idata_a, var_names=names), az.mcse(idata_b, var_names=names)
    bad = []
    for v in names:
        diff = np.abs(np.asarray(ma[v]) - np.asarray(mb[v]))
        lim = k * np.sqrt(np.asarray(sa[v]) ** 2 + np.asarray(sb[v]) ** 2)
        if not np.all(diff <= lim):
            bad.append((v, diff.max(), lim.min()))
    return bad


@pytest.mark.parametrize("name", ["eight_schools_noncentered", "seed_lognormal"])
def test_sampling_matches_nutpie_numba_backend_within_4_mcse(name):
    model = models.MODELS[name](seed=0)
    kw = dict(draws=400, tune=300, chains=2, cores=2, seed=5, progress_bar=False)
    idata_e = nutpie.sample(enutpie.compile_pymc_model(model), **kw)
    idata_n = nutpie.sample(nutpie.compile_pymc_model(model, backend="numba"), **kw)
    assert int(idata_e.sample_stats["diverging"].sum()) <= 10
    assert not _posterior_means_agree(idata_e, idata_n)


def test_with_data_swaps_shared_values_without_recompiling():
    model = models.data_regression(seed=0)
    compiled = enutpie.compile_pymc_model(model)
    assert set(compiled.shared_data) == {"x_data", "y_data"}
    x0 = compiled.initial_point_func(0)
    _, logp_before, _ = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)

    rng = np.random.default_rng(7)
    new_x, new_y = rng.normal(size=50), rng.normal(size=50)
    swapped = compiled.with_data(x_data=new_x, y_data=new_y)
    _, logp_after, grad_after = call_logp(native.logp_address, swapped.logp_program.nutpie_handle(), x0)
    # The original keeps its data.
    _, logp_again, _ = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)
    assert logp_again == logp_before and logp_after != logp_before

    with model:
        pm.set_data({"x_data": new_x, "y_data": new_y})
    want_logp, want_grad = _reference_logp(model)(x0)
    assert_close_rel(logp_after, want_logp, what="logp after with_data")
    assert_close_rel(grad_after, want_grad, what="grad after with_data")
    with pytest.raises(KeyError):
        compiled.with_data(nope=np.zeros(3))
    idata = nutpie.sample(swapped, draws=100, tune=100, chains=1, seed=1, progress_bar=False)
    assert abs(float(idata.posterior["b"].mean()) - np.polyfit(new_x, new_y, 1)[0]) < 0.5


def test_expand_fills_the_trace_with_deterministics():
    model = models.eight_schools_noncentered(seed=0)
    compiled = enutpie.compile_pymc_model(model)
    idata = nutpie.sample(compiled, draws=50, tune=50, chains=1, seed=2, progress_bar=False)
    post = idata.posterior
    theta = post["mu"].values[..., None] + post["tau"].values[..., None] * post["theta_t"].values
    np.testing.assert_allclose(post["theta"].values, theta, rtol=1e-12)
