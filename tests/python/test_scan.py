"""Scan runs natively: its inner function is a nested graph that Ember loads as
a sub-program. Each form (sit-sot, mit-sot, nit-sot, the mit-mot of a Scan's
gradient, sequences, non-sequences, untraced states, while loops, n_steps as
an input, nesting) is checked against PyTensor's Python linker, with the
gradient where one exists."""

import warnings

import numpy as np
import pytest

from native_helpers import check_logp_from_threads, require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402

import ember  # noqa: E402

native = require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")


def scan(*args, **kwargs):
    try:
        return pytensor.scan(*args, return_updates=False, **kwargs)
    except TypeError:  # PyTensor 2.x has no return_updates
        return pytensor.scan(*args, **kwargs)[0]


def compile_both(inputs, outputs):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        f = pytensor.function(inputs, outputs, mode=ember.Mode())
    fallbacks = [str(w.message) for w in rec if issubclass(w.category, ember.FallbackWarning)]
    assert not fallbacks, fallbacks
    return f, pytensor.function(inputs, outputs, mode=PY)


def assert_same(f, ref, *args, rtol=1e-12):
    got, want = f(*args), ref(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-14)


def exported_ops(inputs, outputs):
    fn = pytensor.function(inputs, outputs, mode=pytensor.compile.mode.Mode(ember.EmberLinker(load=False),
                                                                            "fast_run"))
    doc, _ = ember.export_graph(fn)
    return [n["op"] for n in doc["nodes"]], doc


@pytest.mark.covers("Scan")
def test_sit_sot_with_a_sequence_and_a_non_sequence_and_its_gradient():
    x, a = pt.dvector("x"), pt.dscalar("a")
    res = scan(lambda xt, acc, a: acc * a + xt, sequences=[x], outputs_info=[pt.zeros(())], non_sequences=[a])
    loss = pt.sum(res ** 2)
    out = [loss, *pytensor.grad(loss, [x, a])]
    ops, _ = exported_ops([x, a], out)
    assert "Scan" in ops and "PythonCallback" not in ops
    f, ref = compile_both([x, a], out)
    assert_same(f, ref, np.linspace(0.1, 1.0, 6), 0.7)
    assert_same(f, ref, np.linspace(-2.0, 1.0, 40), -0.3)  # another length: same program


def test_mit_sot_taps_and_a_nit_sot_output_with_the_gradient():
    y = pt.dvector("y")

    def step(yv, t1, t2):
        return t1 * 0.5 + t2 * 0.25 + yv, pt.exp(t1)

    s1, s2 = scan(step, sequences=[y], outputs_info=[dict(initial=pt.ones(2), taps=[-1, -2]), None])
    loss = pt.sum(s1) + pt.sum(s2 ** 2)
    f, ref = compile_both([y], [s1, s2, loss, pytensor.grad(loss, y)])
    assert_same(f, ref, np.linspace(-1, 1, 7))


def test_matrix_states_and_a_sequence_with_two_taps():
    x = pt.dmatrix("x")
    w = pt.dmatrix("w")

    def step(x_prev, x_now, h, w):
        return pt.tanh(pt.dot(h, w) + x_now - x_prev)

    h = scan(step, sequences=[dict(input=x, taps=[-1, 0])], outputs_info=[pt.zeros(3)], non_sequences=[w])
    loss = pt.sum(h ** 2)
    f, ref = compile_both([x, w], [h, loss, *pytensor.grad(loss, [x, w])])
    rng = np.random.default_rng(0)
    assert_same(f, ref, rng.normal(size=(9, 3)), rng.normal(size=(3, 3)) * 0.5)


def test_n_steps_given_as_an_input():
    n, a = pt.lscalar("n"), pt.dscalar("a")
    res = scan(lambda acc, a: acc * a + 1.0, outputs_info=[pt.ones(())], non_sequences=[a], n_steps=n)
    f, ref = compile_both([n, a], [res, pytensor.grad(pt.sum(res), a)])
    for steps in (1, 5, 12):
        assert_same(f, ref, steps, 0.9)


def test_a_while_loop_stops_at_its_condition_and_cuts_its_outputs():
    x0 = pt.dscalar("x0")

    from pytensor.scan.utils import until

    def step(x):
        nxt = x * 2.0
        return nxt, until(nxt > 100.0)

    res = scan(step, outputs_info=[x0], n_steps=50)
    f, ref = compile_both([x0], [res])
    for v in (1.0, 3.0, 200.0):
        got, want = f(v)[0], ref(v)[0]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_nested_scans_with_the_gradient():
    x = pt.dvector("x")

    def outer(xt, acc):
        inner = scan(lambda k, s: s * 0.5 + k * xt, sequences=[pt.arange(3, dtype="float64")],
                     outputs_info=[acc])
        return inner[-1]

    res = scan(outer, sequences=[x], outputs_info=[pt.zeros(())])
    loss = pt.sum(res ** 2)
    f, ref = compile_both([x], [res, loss, pytensor.grad(loss, x)])
    assert_same(f, ref, np.linspace(-1.0, 2.0, 5))


def test_a_sequence_shorter_than_n_steps_is_a_call_error_naming_the_scan():
    x, n = pt.dvector("x"), pt.lscalar("n")
    res = scan(lambda xt, acc: acc + xt, sequences=[x], outputs_info=[pt.zeros(())], n_steps=n)
    f, _ = compile_both([x, n], [res])
    with pytest.raises(ember.CallError, match=r"Scan.*sequence 0 has 3 entries, fewer than the 5 steps"):
        f(np.ones(3), 5)


def test_threads_share_a_program_with_a_scan_through_the_c_abi():
    x = pt.tensor("x", dtype="float64", shape=(5,))
    res = scan(lambda xt, acc: 0.5 * acc + pt.sin(xt), sequences=[x], outputs_info=[pt.zeros(())])
    logp = -pt.sum(res ** 2)
    out = [logp, pytensor.grad(logp, x)]
    fn = pytensor.function([x], out, mode=pytensor.compile.mode.Mode(ember.EmberLinker(load=False), "fast_run"))
    doc, payload = ember.export_graph(fn)
    prog = native.Program.from_document(doc, payload)
    ref = pytensor.function([x], out, mode=PY)
    check_logp_from_threads(native, prog, ref, [np.linspace(-1, 1, 5) * k for k in range(6)], calls=200)


def test_every_jit_mode_gives_the_same_bits():
    x, a = pt.dvector("x"), pt.dscalar("a")
    res = scan(lambda xt, acc, a: pt.log1p(pt.exp(acc * a)) + pt.cos(xt), sequences=[x],
               outputs_info=[pt.zeros(())], non_sequences=[a])
    loss = pt.sum(res ** 2)
    fn = pytensor.function([x, a], [loss, *pytensor.grad(loss, [x, a])],
                           mode=pytensor.compile.mode.Mode(ember.EmberLinker(load=False), "fast_run"))
    doc, payload = ember.export_graph(fn)
    args = (np.linspace(-1, 1, 30), np.float64(0.3))
    outs = {}
    for jit in ("off", "eager"):
        prog = native.Program.from_document(doc, payload, jit=jit)
        for _ in range(3):
            outs[jit] = [np.asarray(v).tobytes() for v in prog(*args)]
    assert outs["off"] == outs["eager"]


@pytest.mark.covers("Blockwise")
def test_blockwise_without_batch_dims_and_scalar_ops_in_inner_graphs_run_natively():
    # A Kalman filter's step: solve_triangular makes a Blockwise of
    # SolveTriangular that only fast_run removes; the gradient Scan's inner graph computes its
    # shapes with scalar ops on scalars.
    from pytensor.graph.rewriting.db import RewriteDatabaseQuery
    from pytensor.tensor.slinalg import solve_triangular

    ys = pt.dmatrix("ys")
    a = pt.dmatrix("a")
    chol = pt.linalg.cholesky(a @ a.T + pt.eye(2))

    def step(y, s):
        return s + solve_triangular(chol, y, lower=True)

    out = scan(step, sequences=[ys], outputs_info=[pt.zeros(2)])
    cost = out[-1].sum()
    outs = [out, cost, *pytensor.grad(cost, [ys, a])]
    # canonicalize alone, as ember.nutpie prepares graphs: fast_run would rewrite both away
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        f = pytensor.function([ys, a], outs, mode=ember.Mode(optimizer=RewriteDatabaseQuery(include=["canonicalize"])))
    assert not [str(w.message) for w in rec if issubclass(w.category, ember.FallbackWarning)]
    ref = pytensor.function([ys, a], outs, mode=PY)
    rng = np.random.default_rng(5)
    assert_same(f, ref, rng.normal(size=(7, 2)), rng.normal(size=(2, 2)), rtol=1e-10)
