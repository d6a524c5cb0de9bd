"""A PyMC model with a Scan (GARCH11) through ember.nutpie: the Scan runs on
the Python fallback inside nutpie's chain threads (which call the C ABI
without the GIL), the rest natively; logp and gradient match PyTensor's
Python linker; 4 chains sample."""

import warnings

import numpy as np
import pytest

from native_helpers import call_logp, require_native

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
def test_garch11_logp_matches_and_four_chains_sample():
    model = garch_model()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        compiled = en.compile_pymc_model(model)
    fb = [w for w in rec if issubclass(w.category, ember.FallbackWarning)]
    assert len(fb) == 1 and "Scan" in str(fb[0].message)  # the logp graph's Scans: one warning
    assert {cb.op_name for cb in compiled.logp_program.callbacks} == {"Scan"}

    logp = model.compile_logp(jacobian=True, mode=pytensor.compile.mode.Mode(linker="py", optimizer="fast_run"))
    ip = model.initial_point()
    x0 = np.asarray(compiled.initial_point_func(0), dtype="float64")
    rc, lp, grad = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)
    assert rc == 0 and np.all(np.isfinite(grad))
    point, k = {}, 0  # nutpie's flat point: the value variables in order
    for v in model.value_vars:
        shape = np.shape(ip[v.name])
        n = int(np.prod(shape))
        point[v.name] = x0[k:k + n].reshape(shape)
        k += n
    assert k == len(x0)
    np.testing.assert_allclose(lp, logp(point), rtol=1e-10)

    idata = nutpie.sample(compiled, draws=100, tune=100, chains=4, cores=4, progress_bar=False, seed=2)
    post = idata.posterior
    assert post.sizes["chain"] == 4 and post.sizes["draw"] == 100
    assert np.all(np.isfinite(post["beta_1"].values))
    assert compiled.logp_program.nutpie_calls() > 400


def test_a_graph_with_fallback_nodes_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)
        first = en.compile_pymc_model(garch_model())
        second = en.compile_pymc_model(garch_model())
    assert first.logp_program.callbacks and second.logp_program.callbacks
    assert not first.timings["cache_hit"] and not second.timings["cache_hit"]
    assert "cache_store" not in first.timings
    assert not list(tmp_path.glob("programs/*.embp"))
