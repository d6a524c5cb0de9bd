"""ember._core: loading, calling with NumPy arrays, the nutpie entry points,
and the exported model suite against PyTensor's values (1e-10 relative)."""

import glob
import json
import os

import numpy as np
import pytest

from native_helpers import MODELS_DIR, assert_close_rel, call_expand, call_logp, num, require_native, run_threads

SUITE = sorted(os.path.basename(p)[: -len(".values.json")]
               for p in glob.glob(os.path.join(MODELS_DIR, "*.values.json")))


def test_the_model_suite_is_all_there():
    # The parametrized tests below would pass on an empty glob.
    assert len(SUITE) == 12, SUITE


@pytest.fixture(scope="module")
def native():
    return require_native()


def _suite(name):
    with open(os.path.join(MODELS_DIR, f"{name}.values.json")) as f:
        vals = json.load(f)
    return vals, os.path.join(MODELS_DIR, vals["graph"])


@pytest.mark.parametrize("name", SUITE)
def test_suite_model_logp_and_grad_match_pytensor_through_call_and_c_abi(native, name):
    vals, path = _suite(name)
    prog = native.load(path)
    handle = prog.nutpie_handle()
    assert len(vals["points"]) == 10
    for k, x in enumerate(vals["points"]):
        x = np.asarray(x, dtype="float64")
        logp, grad = prog(x)
        assert logp.shape == () and grad.shape == (vals["n_dim"],)
        assert_close_rel(logp, num(vals["logp"][k]), what=f"{name} logp at point {k}")
        assert_close_rel(grad, num(vals["grad"][k]), what=f"{name} grad at point {k}")
        rc, lp, g = call_logp(native.logp_address, handle, x)
        want_rc = 4 if not np.isfinite(logp) else 3 if not np.all(np.isfinite(grad)) else 0
        assert rc == want_rc, f"{name} point {k}: C ABI status {rc}, want {want_rc}"
        # The C entry point gives the same bits as the direct call.
        assert np.array_equal(lp, logp, equal_nan=True) and np.array_equal(g, grad, equal_nan=True)


def test_concurrent_logp_calls_from_8_threads_are_bit_identical(native):
    vals, path = _suite("seed_gamma")
    prog = native.load(path)
    handle = prog.nutpie_handle()
    points = [np.asarray(p, dtype="float64") for p in vals["points"]]
    ref = [call_logp(native.logp_address, handle, x) for x in points]
    bad = []

    def worker(t):
        for rep in range(40):
            k = (t + rep) % len(points)
            rc, lp, g = call_logp(native.logp_address, handle, points[k])
            if rc != ref[k][0] or lp != ref[k][1] or not np.array_equal(g, ref[k][2]):
                bad.append((t, rep, k))

    run_threads(worker, 8)
    assert not bad
    assert prog.nutpie_calls() == 10 + 8 * 40


def test_logp_return_codes(native):
    vals, path = _suite("eight_schools_centered")
    prog = native.load(path)
    handle = prog.nutpie_handle()
    n = vals["n_dim"]
    rc, _, _ = call_logp(native.logp_address, handle, np.zeros(n), dim=n + 1)
    assert rc == -1 and "dim" in native.last_error()
    x = np.zeros(n)
    x[0] = np.inf  # non-finite logp or gradient: recoverable, nutpie rejects the point
    rc, lp, _ = call_logp(native.logp_address, handle, x)
    assert rc == 4 and lp == -np.inf  # a non-finite logp: 4, before a non-finite gradient's 3
    rc, _, _ = call_logp(native.logp_address, None, x)
    assert rc == -2


def test_expand_entry_point_concatenates_outputs(native):
    # The suite's logp graphs double as expand graphs: outputs (logp, grad) flattened.
    vals, path = _suite("radon")
    prog = native.load(path)
    x = np.asarray(vals["points"][0])
    logp, grad = prog(x)
    rc, out = call_expand(native.expand_address, prog.nutpie_handle(), x, 1 + x.size)
    assert rc == 0 and out[0] == logp and np.array_equal(out[1:], grad)
    rc, _ = call_expand(native.expand_address, prog.nutpie_handle(), x, x.size)
    assert rc == -1


def test_call_checks_arguments_and_converts_dtypes(native):
    vals, path = _suite("eight_schools_centered")
    prog = native.load(path)
    assert prog.args[0]["dtype"] == "float64" and prog.args[0]["shape"] == (vals["n_dim"],)
    assert [o["shape"] for o in prog.outputs] == [(), (vals["n_dim"],)]
    x = np.asarray(vals["points"][0])
    a = prog(x)
    b = prog(list(x))  # converted
    assert np.array_equal(a[1], b[1])
    with pytest.raises(native.CallError, match="static shape"):
        prog(np.zeros(vals["n_dim"] + 1))
    with pytest.raises(TypeError):
        prog()


def test_strided_input_views_match_contiguous_copies(native):
    import pytensor
    import pytensor.tensor as pt

    import ember

    x = pt.dmatrix("x")
    f = pytensor.function([x], [pt.exp(x).sum(axis=0), x[1:, ::2] * 2.0], mode="EMBER")
    prog = f.vm.jit_fn.program
    base = np.arange(24.0).reshape(4, 6) / 7.0
    for view in (base.T, base[::2, ::-1], base[:, 1:4]):
        got = prog(view)
        want = prog(np.ascontiguousarray(view))
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
    assert isinstance(prog, ember.Program)


def test_load_errors_name_the_problem(native, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "ember-graph", "version": 99}')
    with pytest.raises(native.LoadError, match="version"):
        native.load(str(bad))
    with pytest.raises(native.LoadError, match="JSON"):
        native.Program.from_document("{not json", b"")


def test_options_are_validated_and_read_from_environment(native, monkeypatch):
    from ember.options import parse_memory, resolve_options

    assert parse_memory("512M") == 512 << 20 and parse_memory("2G") == 2 << 30 and parse_memory(1000) == 1000
    with pytest.raises(ValueError):
        parse_memory("lots")
    with pytest.raises(ValueError, match="jit"):
        resolve_options(jit="sometimes")
    monkeypatch.setenv("EMBER_JIT", "eager")
    monkeypatch.setenv("EMBER_JIT_MEMORY", "1G")
    assert resolve_options() == {"jit": "eager", "jit_memory": 1 << 30}
    assert resolve_options(jit="off")["jit"] == "off"
    _, path = _suite("eight_schools_centered")
    prog = native.load(path, jit="off", jit_memory="64M")
    assert prog.options["jit"] == "off" and prog.options["jit_memory"] == 64 << 20
    assert prog.options["jit_active"] is False
    prog = native.load(path, jit="auto", jit_memory="256M")  # the engine's defaults again
    assert prog.options["jit"] == "auto" and prog.options["jit_memory"] == 256 << 20
    assert prog.options["jit_active"] is bool(native.jit_available)
    stats = native.jit_stats()
    assert stats["budget_bytes"] >= 0 and isinstance(stats["composites"], list)


def test_jit_stats_report_tiers_skipped_for_a_budget_too_small(native):
    # A fresh process: the compile service and its counters are per process.
    vals, path = _suite("seed_lognormal")
    code = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from ember import native
x = np.asarray(json.loads(sys.argv[3]), dtype="float64")
small = native.load(sys.argv[2], jit="eager", jit_memory="4K")
got = small(x)
stats = native.jit_stats()
off = native.load(sys.argv[2], jit="off")(x)
print(json.dumps({"stats": stats, "jit": bool(native.jit_available),
                  "same": all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, off, strict=True))}))
"""
    import subprocess
    import sys

    from native_helpers import ROOT

    out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python"), path, json.dumps(vals["points"][0])],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    stats = res["stats"]
    assert res["same"]
    assert [t["tier"] for t in stats["tiers"]] == [1, 2]
    for t in stats["tiers"]:
        assert set(t) >= {"attempted", "compiled", "skipped_budget", "rejected_slower", "evicted", "failed"}
    assert stats["failures"] == 0 and stats["over_budget"] == 0
    assert stats["peak_bytes"] <= stats["budget_bytes"]
    if res["jit"]:
        assert stats["skipped_budget"] > 0 and sum(t["skipped_budget"] for t in stats["tiers"]) > 0
        assert stats["notes"], stats
    else:
        assert stats["compiles"] == 0
