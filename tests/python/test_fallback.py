"""The Python fallback (ember/fallback.py): ops Ember has no kernel for run
through their own Python implementation as PythonCallback nodes, compared
with PyTensor's Python linker; strict mode; the warning; threads and the C ABI."""

import json
import os
import subprocess
import warnings

import numpy as np
import pytest

from native_helpers import ROOT, check_logp_from_threads, require_native, run_threads

import pytensor
import pytensor.tensor as pt  # noqa: E402
from pytensor.graph.basic import Apply  # noqa: E402
from pytensor.graph.op import Op  # noqa: E402

import ember  # noqa: E402

native = require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")


class CumSumTwice(Op):
    """A Python-only op: 2 * cumsum(x). `bad` makes perform misbehave."""

    __props__ = ("bad",)

    def __init__(self, bad=""):
        self.bad = bad

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        if self.bad == "raise":
            raise ValueError("perform refused")
        if self.bad == "shape":
            outputs[0][0] = np.zeros(x.shape[0] + 1, dtype=x.dtype)
            return
        if self.bad == "dtype":
            outputs[0][0] = np.zeros(x.shape, dtype="complex128")
            return
        outputs[0][0] = 2 * np.cumsum(x)

    def grad(self, inputs, g):
        return [2 * pt.cumsum(g[0][::-1])[::-1]]


def fallback_warnings(record):
    return [w for w in record if issubclass(w.category, ember.FallbackWarning)]


def compile_both(inputs, outputs, mode=None):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        f = pytensor.function(inputs, outputs, mode=mode or ember.Mode())
    ref = pytensor.function(inputs, outputs, mode=PY)
    return f, ref, fallback_warnings(rec)


def program_of(f):
    return f.vm.jit_fn.program


def export_only():
    """A mode that rewrites for Ember and exports nothing itself (the tests export)."""
    return pytensor.compile.mode.Mode(ember.EmberLinker(load=False), "fast_run")


@pytest.mark.covers("PythonCallback")
def test_custom_op_runs_between_native_nodes_and_matches_py_linker():
    x = pt.dvector("x")
    op = CumSumTwice()
    y = op(pt.exp(x) + 1)
    out = [pt.sum(op(y) ** 2), pytensor.grad(pt.sum(y * x), x)]
    f, ref, w = compile_both([x], out)
    v = np.linspace(-1, 1, 7)
    for got, want in zip(f(v), ref(v), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    assert len(w) == 1 and "CumSumTwice" in str(w[0].message)  # two nodes, one op: one warning
    assert len(program_of(f).callbacks) == 2


@pytest.mark.covers("PythonCallback")
def test_one_warning_per_op_type():
    x = pt.dvector("x")
    out = CumSumTwice()(x) + pt.sort(x)
    _, _, w = compile_both([x], out, mode=ember.Mode())
    names = sorted(str(m.message).split("op ")[1].split()[0] for m in w)
    assert len(w) == len(names) and "CumSumTwice" in names


@pytest.mark.covers("Scan")
def test_a_scan_whose_inner_graph_needs_the_fallback_falls_back_as_a_whole():
    x = pt.dvector("x")
    res, _ = pytensor.scan(lambda xt, acc: acc + CumSumTwice()(xt * acc), sequences=[x],
                           outputs_info=[pt.ones(2)])
    f, ref, w = compile_both([x], [res])
    assert [str(m.message).split("op ")[1].split()[0] for m in w] == ["Scan"]
    assert [cb.op_name for cb in program_of(f).callbacks] == ["Scan"]
    v = np.linspace(0.1, 1.0, 6)
    np.testing.assert_allclose(f(v)[0], ref(v)[0], rtol=1e-12)


def test_strict_mode_and_env_give_one_error_listing_every_op(monkeypatch):
    x = pt.dvector("x")
    out = [CumSumTwice()(x), pt.argmax(CumSumTwice()(x) * 2)]
    with pytest.raises(ember.UnsupportedGraphError) as e:
        pytensor.function([x], out, mode=ember.Mode(fallback=False))
    assert "CumSumTwice" in str(e.value)
    monkeypatch.setenv("EMBER_FALLBACK", "0")
    with pytest.raises(ember.UnsupportedGraphError, match="CumSumTwice"):
        pytensor.function([x], out, mode=ember.Mode())
    monkeypatch.setenv("EMBER_FALLBACK", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)
        pytensor.function([x], out, mode=ember.Mode())


def test_wrong_shape_or_dtype_from_perform_is_a_call_error_naming_the_node():
    x = pt.tensor("x", dtype="float64", shape=(3,))  # the op's output type: shape (3,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)
        f = pytensor.function([x], CumSumTwice("shape")(x) * 2, mode=ember.Mode())
        g = pytensor.function([x], CumSumTwice("dtype")(x) * 2, mode=ember.Mode())
    with pytest.raises(ember.CallError, match=r"PythonCallback.*CumSumTwice.*shape \(4,\), declared \(3,\)"):
        f(np.ones(3))
    with pytest.raises(ember.CallError, match="dtype"):
        g(np.ones(3))


def test_exception_in_perform_is_reraised_as_itself():
    x = pt.dvector("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)
        f = pytensor.function([x], CumSumTwice("raise")(x) + 1, mode=ember.Mode())
    with pytest.raises(ValueError, match="perform refused"):
        f(np.ones(3))


def test_python_threads_share_a_program_with_a_fallback_node():
    x = pt.dvector("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)
        f = pytensor.function([x], pt.sum(CumSumTwice()(pt.exp(x)) ** 2), mode=ember.Mode())
    prog = program_of(f)
    inputs = [np.linspace(0, 1, 50) * k for k in range(8)]
    want = [np.sum((2 * np.cumsum(np.exp(v))) ** 2) for v in inputs]
    got, errors = [None] * 8, []

    def work(k):
        try:
            for _ in range(50):
                got[k] = float(prog(inputs[k])[0])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    run_threads(work, 8)
    assert not errors
    np.testing.assert_allclose(got, want, rtol=1e-13)


def _logp_graph():
    """A nutpie-shaped graph (one float64 vector in; 0-d logp and its gradient out) with a fallback op."""
    x = pt.tensor("x", dtype="float64", shape=(5,))
    logp = -pt.sum(CumSumTwice()(pt.sin(x)) ** 2)
    return x, logp, pytensor.grad(logp, x)


@pytest.mark.covers("PythonCallback")
def test_c_abi_entry_from_threads_without_the_gil():
    x, logp, grad = _logp_graph()
    fn = pytensor.function([x], [logp, grad], mode=export_only())
    callbacks = []
    doc, payload = ember.export_graph(fn, callbacks=callbacks)
    assert [n["attrs"]["op"] for n in doc["nodes"] if n["op"] == "PythonCallback"]
    prog = native.Program.from_document(doc, payload, callbacks=callbacks)
    ref = pytensor.function([x], [logp, grad], mode=PY)
    check_logp_from_threads(native, prog, ref, [np.linspace(-1, 1, 5) * k for k in range(6)], calls=100)


def test_graph_file_with_a_callback_needs_the_python_host(tmp_path):
    x = pt.dvector("x")
    fn = pytensor.function([x], CumSumTwice()(x), mode=export_only())
    path = tmp_path / "g.json"
    doc = ember.export(fn, path, fallback=True)
    [node] = [n for n in doc["nodes"] if n["op"] == "PythonCallback"]
    assert node["attrs"]["op"] == "CumSumTwice"
    with pytest.raises(ember.LoadError, match=r"op CumSumTwice.*Python host"):
        native.load(path)
    with pytest.raises(ember.UnsupportedGraphError):
        ember.export(fn, tmp_path / "strict.json")


def _cli():
    # The CLI of the build that holds the native module, else the JIT build's (scripts/test.sh builds it first).
    native_dir = os.environ.get("EMBER_NATIVE_DIR")
    candidates = [os.path.join(native_dir, "..", "..", "ember")] if native_dir else []
    for cli in candidates + [os.path.join(ROOT, "build", "jit", "ember")]:
        if os.path.isfile(cli):
            return cli
    if os.environ.get("EMBER_REQUIRE_NATIVE"):  # the project's test command builds it
        pytest.fail("no ember CLI built (build/<variant>/ember)")
    pytest.skip("no ember CLI built (build/<variant>/ember)")


def test_the_cli_says_a_graph_file_with_a_callback_needs_the_python_host(tmp_path):
    x = pt.dvector("x")
    fn = pytensor.function([x], CumSumTwice()(x), mode=export_only())
    path = tmp_path / "g.json"
    ember.export(fn, path, fallback=True)
    r = subprocess.run([_cli(), "run", str(path), "--random-inputs", "1"], capture_output=True, text=True)
    assert r.returncode != 0 and "Python host" in r.stderr + r.stdout, r.stderr + r.stdout


def test_graph_file_with_a_callback_loads_with_callbacks(tmp_path):
    x = pt.dvector("x")
    fn = pytensor.function([x], CumSumTwice()(x) + 1, mode=export_only())
    callbacks = []
    doc, payload = ember.export_graph(fn, callbacks=callbacks)
    path = tmp_path / "g.json"
    path.write_bytes(ember.dumps(doc, payload))
    prog = native.load(path, callbacks=callbacks)
    np.testing.assert_allclose(prog(np.arange(4.0))[0], 2 * np.cumsum(np.arange(4.0)) + 1)
    assert json.loads(path.read_text())["nodes"][0]["op"] == "PythonCallback"


def test_graph_of_types_ember_cannot_hold_runs_on_the_python_linker():
    z = pt.zvector("z")
    out = pt.real(z * z).sum()
    with pytest.warns(ember.FallbackWarning, match="whole graph"):
        f = pytensor.function([z], out, mode=ember.Mode())
    v = np.array([1 + 2j, 3 - 1j])
    np.testing.assert_allclose(f(v), np.real(v * v).sum())
    with pytest.raises(ember.UnsupportedGraphError, match="complex128"):
        pytensor.function([z], out, mode=ember.Mode(fallback=False))
