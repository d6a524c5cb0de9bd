"""PyTensor's ScalarLoop (gradients of gammainc, gammaincc, betainc) in mode EMBER
against PyTensor's Python implementations, and its export."""

import numpy as np
import pytest

from native_helpers import reference_mode, require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402

import ember  # noqa: E402  (registers the mode)
from ember.testing.validate import check as check_graph  # noqa: E402

require_native()
REFERENCE = reference_mode()

# (k, x) over both gammainc_grad series and gammaincc_grad's branches.
K = np.array([0.5, 1.0, 2.5, 5.0, 10.0, 0.3, 3.0, 7.5, 1.5, 0.05, 4.0, 11.0, 30.0])
X = np.array([0.1, 1.0, 2.0, 7.0, 3.0, 20.0, 40.0, 9.0, 0.0, 0.5, 16.0, 31.0, 12.0])


def _loops(f):
    return [n for n in f.maker.fgraph.toposort()
            if type(getattr(n.op, "scalar_op", None)).__name__ in ("ScalarLoop", "Grad2F1Loop")]


def _compare(inputs, out, args, rtol):
    f_ref = pytensor.function(inputs, out, mode=REFERENCE)
    f_em = pytensor.function(inputs, out, mode="EMBER")
    assert _loops(f_em), "the graph has no ScalarLoop to test"
    got, want = f_em(*args), f_ref(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300)
    return f_em


@pytest.mark.covers("ScalarLoop", "GammaInc")
def test_gammainc_grad_wrt_k_matches_pytensor():
    k, x = pt.dvector("k"), pt.dvector("x")
    _compare([k, x], pt.grad(pt.gammainc(k, x).sum(), k), [K, X], rtol=1e-7)


def test_gammaincc_grad_wrt_k_matches_pytensor():
    k, x = pt.dvector("k"), pt.dvector("x")
    _compare([k, x], pt.grad(pt.gammaincc(k, x).sum(), k), [K[:8], X[:8]], rtol=1e-7)


def test_gammainc_grad_float32_matches_pytensor():
    k, x = pt.fvector("k"), pt.fvector("x")
    _compare([k, x], pt.grad(pt.gammainc(k, x).sum(), k),
             [K.astype("float32"), X.astype("float32")], rtol=1e-4)


@pytest.mark.covers("ScalarLoop", "BetaInc")
def test_betainc_grad_matches_pytensor():
    a, b, x = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    av = np.array([1.0, 2.0, 2.0, 0.5, 10.0, 5.0, 1.5, 30.0])
    bv = np.array([1.0, 3.0, 3.0, 0.5, 2.0, 20.0, 7.0, 30.0])
    xv = np.array([0.5, 0.2, 0.8, 0.3, 0.9, 0.1, 0.6, 0.45])
    _compare([a, b, x], pt.grad(pt.betainc(a, b, x).sum(), a), [av, bv, xv], rtol=1e-7)
    _compare([a, b, x], pt.grad(pt.betainc(a, b, x).sum(), b), [av, bv, xv], rtol=1e-7)


def test_hyp2f1_grad_matches_pytensor():
    a, b, c, z = (pt.dvector(n) for n in "abcz")
    args = [np.array([1.0, 2.5, 0.5, 3.0]), np.array([2.0, 1.5, 1.0, 0.7]),
            np.array([3.0, 4.0, 2.5, 5.0]), np.array([0.3, -0.5, 0.9, 0.1])]
    _compare([a, b, c, z], pt.grad(pt.hyp2f1(a, b, c, z).sum(), a), args, rtol=1e-9)


def test_scalar_loop_exports_as_its_own_entry():
    k, x = pt.dvector("k"), pt.dvector("x")
    f = pytensor.function([k, x], pt.grad(pt.gammainc(k, x).sum(), k), mode=REFERENCE)
    doc, payload = ember.export_graph(f)
    check_graph(doc, payload)
    loops = [n["attrs"]["scalar_op"] for n in doc["nodes"]
             if n["op"] == "Elemwise" and n["attrs"]["scalar_op"]["op"] == "ScalarLoop"]
    assert len(loops) == len(_loops(f))
    for so, node in zip(loops, _loops(f), strict=True):
        op = node.op.scalar_op
        assert so["until"] == op.is_while
        assert so["carried"] + so["until"] == len(node.outputs)
        assert len(so["inputs"]) == len(node.inputs) - 1  # n_steps is no body input


def test_censored_gamma_model_logp_and_gradient_match_pytensor():
    import pymc as pm
    from pymc import pytensorf
    data = np.array([0.5, 1.2, 3.0, 3.0, 0.2, 3.0, 2.2])
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 2.0)
        beta = pm.HalfNormal("beta", 2.0)
        pm.Censored("y", pm.Gamma.dist(alpha=alpha, beta=beta), lower=None, upper=3.0, observed=data)
    logp = model.logp()
    grads = pytensorf.gradient(logp, model.value_vars)
    point = model.initial_point()
    args = [point[v.name] for v in model.value_vars]
    f_ref = pytensor.function(model.value_vars, [logp, grads], mode=REFERENCE)
    f_em = pytensor.function(model.value_vars, [logp, grads], mode="EMBER")
    assert _loops(f_em)
    for pt_args in (args, [a + 0.7 for a in args], [a - 0.4 for a in args]):
        got, want = f_em(*pt_args), f_ref(*pt_args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-7)


def test_beta_logcdf_model_gradient_matches_pytensor():
    import pymc as pm
    from pymc import pytensorf
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 2.0)
        beta = pm.HalfNormal("beta", 2.0)
        pm.Potential("cdf", pm.logcdf(pm.Beta.dist(alpha, beta), np.array([0.2, 0.5, 0.9])).sum())
    logp = model.logp()
    grads = pytensorf.gradient(logp, model.value_vars)
    f_ref = pytensor.function(model.value_vars, [logp, grads], mode=REFERENCE)
    f_em = pytensor.function(model.value_vars, [logp, grads], mode="EMBER")
    assert _loops(f_em)
    for v in (0.3, -0.5, 1.2):
        args = [np.array(v), np.array(v)]
        got, want = f_em(*args), f_ref(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-7)


def test_scalar_loop_fixture_graphs_match_schema():
    import json
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "data" / "scalar_loop" / "grads.json"
    cases = json.loads(path.read_text())["cases"]
    assert cases
    for c in cases:
        check_graph(c["graph"])
        assert any(n["attrs"].get("scalar_op", {}).get("op") == "ScalarLoop" for n in c["graph"]["nodes"])


def test_gradients_over_many_blocks_equal_per_element_calls_bitwise():
    # 3000 elements: the loop runs them as blocks of packed lanes with
    # different trip counts; each element alone must give the same bits, and
    # every 10th must agree with PyTensor's Python implementations (slow for all).
    rng = np.random.default_rng(7)
    n = 3000
    k, x = pt.dvector("k"), pt.dvector("x")
    a, b, y = pt.dvector("a"), pt.dvector("b"), pt.dvector("y")
    cases = [
        ([k, x], pt.grad(pt.gammainc(k, x).sum(), k), [rng.uniform(0.1, 20, n), rng.uniform(0.01, 40, n)], 1e-3),
        ([k, x], pt.grad(pt.gammaincc(k, x).sum(), k), [rng.uniform(0.1, 20, n), rng.uniform(0.01, 40, n)], 1e-3),
        ([a, b, y], pt.grad(pt.betainc(a, b, y).sum(), a),
         [rng.uniform(0.5, 30, n), rng.uniform(0.5, 30, n), rng.uniform(0.01, 0.99, n)], 1e-7),
    ]
    for inputs, out, args, rtol in cases:
        f_em = _compare(inputs, out, [v[::10] for v in args], rtol)
        got = f_em(*args)
        for i in list(range(0, n, 97)) + [255, 256, 511, 512, n - 1]:
            one = f_em(*[v[i:i + 1] for v in args])
            assert one.view(np.uint64)[0] == got[i:i + 1].view(np.uint64)[0], (i, one[0], got[i])
