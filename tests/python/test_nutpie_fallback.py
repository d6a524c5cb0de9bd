"""A PyMC model with an op Ember has no kernel for (a Python Op in a Potential)
through ember.nutpie: the op runs on the Python fallback inside nutpie's chain
threads (which call the C ABI without the GIL), the rest natively; logp and
gradient match PyTensor's Python linker; 4 chains sample; such a graph is not
put in the program cache."""

import warnings

import numpy as np
import pytest

from native_helpers import call_logp, nutpie_point, require_native

import pymc as pm
import nutpie
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pytensor.graph.basic import Apply  # noqa: E402
from pytensor.graph.op import Op  # noqa: E402

import ember  # noqa: E402
import ember.nutpie as en  # noqa: E402

native = require_native()


class SquaredNorm(Op):
    """sum(x**2) in Python: an op without a native kernel."""

    __props__ = ()

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.asarray(np.sum(inputs[0] ** 2), dtype="float64")

    def grad(self, inputs, g):
        return [2 * inputs[0] * g[0]]


def custom_op_model():
    y = np.random.default_rng(3).normal(1.0, 1.0, 50)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 3, shape=3)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu.sum(), sigma, observed=y)
        pm.Potential("ridge", -0.5 * SquaredNorm()(mu))
    return m


@pytest.mark.covers("PythonCallback")
def test_custom_op_model_logp_matches_and_four_chains_sample():
    model = custom_op_model()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        compiled = en.compile_pymc_model(model)
    fb = [w for w in rec if issubclass(w.category, ember.FallbackWarning)]
    assert len(fb) == 1 and "SquaredNorm" in str(fb[0].message)
    assert {cb.op_name for cb in compiled.logp_program.callbacks} == {"SquaredNorm"}

    logp = model.compile_logp(jacobian=True, mode=pytensor.compile.mode.Mode(linker="py", optimizer="fast_run"))
    x0 = np.asarray(compiled.initial_point_func(0), dtype="float64")
    rc, lp, grad = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)
    assert rc == 0 and np.all(np.isfinite(grad))
    np.testing.assert_allclose(lp, logp(nutpie_point(model, x0)), rtol=1e-10)

    idata = nutpie.sample(compiled, draws=100, tune=100, chains=4, cores=4, progress_bar=False, seed=2)
    post = idata.posterior
    assert post.sizes["chain"] == 4 and post.sizes["draw"] == 100
    assert np.all(np.isfinite(post["sigma"].values))
    assert compiled.logp_program.nutpie_calls() > 400


def test_a_graph_with_fallback_nodes_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)
        first = en.compile_pymc_model(custom_op_model())
        second = en.compile_pymc_model(custom_op_model())
    assert first.logp_program.callbacks and second.logp_program.callbacks
    assert not first.timings["cache_hit"] and not second.timings["cache_hit"]
    assert "cache_store" not in first.timings
    assert not list(tmp_path.glob("programs/*.embp"))


def test_a_model_through_expm_compiles_and_matches_pytensor():
    """pt.linalg.expm runs natively and Ember differentiates it (ExpmGrad),
    so no op falls back, on either stack (PyTensor 2.38's own gradient of
    Expm would hold complex values, through Eig). The logp and gradient are
    PyTensor's, and the model samples."""
    with pm.Model() as model:
        a = pm.Normal("a", 0, 0.3, shape=(2, 2))
        pm.Normal("y", pt.linalg.expm(a).sum(), 1.0, observed=1.5)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        compiled = en.compile_pymc_model(model, cache=False)  # a cached program carries no gradient_path
    assert not any(issubclass(w.category, ember.FallbackWarning) for w in rec)
    assert compiled.timings.get("gradient_path") == "ember", compiled.timings.get("gradient_fallback")

    mode = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
    logp = model.compile_logp(jacobian=True, mode=mode)
    dlogp = model.compile_dlogp(jacobian=True, mode=mode)
    x0 = np.asarray(compiled.initial_point_func(0), dtype="float64") + 0.1
    rc, lp, grad = call_logp(native.logp_address, compiled.logp_program.nutpie_handle(), x0)
    assert rc == 0
    point = nutpie_point(model, x0)
    np.testing.assert_allclose(lp, logp(point), rtol=1e-10)
    np.testing.assert_allclose(grad, dlogp(point), rtol=1e-8, atol=1e-12)

    idata = nutpie.sample(compiled, draws=50, tune=50, chains=2, cores=2, progress_bar=False, seed=1)
    assert np.all(np.isfinite(idata.posterior["a"].values))
