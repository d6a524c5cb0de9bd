"""Shared helpers for the tests of ember's native module (skips when it is not built)."""

import ctypes
import os
import threading

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.path.join(ROOT, "tests", "data", "models")


def reference_mode():
    """The tests' reference: PyTensor's Python implementations (NumPy/SciPy)
    after fast_run's rewrites but without fusion (NumPy ufuncs take at most
    32 operands). No C compiler is needed (PyTensor 2.x's default compiles
    C), and unlike numba (3.x's default, with fastmath) it keeps PyTensor's
    ops and returns NumPy scalars for ScalarType outputs."""
    from pytensor.compile.mode import Mode

    return Mode(linker="py", optimizer="fast_run").excluding("fusion")


def require_native():
    try:
        from ember import native
    except ImportError as e:
        if os.environ.get("EMBER_REQUIRE_NATIVE"):  # the project's test command builds it
            raise
        pytest.skip(f"ember._core not built: {e}", allow_module_level=True)
    return native


def check_outputs(mode, ref_mode, inputs, outputs, args, compare, op=None):
    """Compiles outputs with mode and ref_mode, calls both with args and
    checks each output's dtype and shape, then compare(got, want). With op,
    also that an op of that class survived the rewrites (so its kernel ran)."""
    import pytensor

    f = pytensor.function(inputs, outputs, mode=mode)
    if op is not None:
        assert any(type(n.op).__name__ == op for n in f.maker.fgraph.toposort()), op
    ref = pytensor.function(inputs, outputs, mode=ref_mode)
    got, want = f(*args), ref(*args)
    if not isinstance(got, list):
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        compare(g, w)
    return f


LOGP_SIG = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_double),
                            ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double), ctypes.c_void_p)
EXPAND_SIG = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_double),
                              ctypes.POINTER(ctypes.c_double), ctypes.c_void_p)
_DP = ctypes.POINTER(ctypes.c_double)


def call_logp(address, user_data, x, dim=None):
    """(return code, logp, grad) through a nutpie-style logp pointer."""
    x = np.ascontiguousarray(x, dtype="float64")
    grad = np.full(x.size, np.nan)
    logp = ctypes.c_double(np.nan)
    rc = LOGP_SIG(address)(x.size if dim is None else dim, x.ctypes.data_as(_DP), grad.ctypes.data_as(_DP),
                           ctypes.byref(logp), user_data)
    return rc, logp.value, grad


def call_expand(address, user_data, x, n_expanded):
    x = np.ascontiguousarray(x, dtype="float64")
    out = np.full(n_expanded, np.nan)
    rc = EXPAND_SIG(address)(x.size, n_expanded, x.ctypes.data_as(_DP), out.ctypes.data_as(_DP), user_data)
    return rc, out


def num(v):
    """A values.json number ("nan"/"inf"/"-inf" strings included)."""
    return np.asarray(v if not isinstance(v, str) else float(v), dtype="float64") if not isinstance(v, list) \
        else np.array([float(e) if isinstance(e, str) else e for e in v], dtype="float64")


def assert_close_rel(actual, expected, rtol=1e-10, what=""):
    """Each element to rtol relative, with an absolute floor of rtol x the vector's scale."""
    actual, expected = np.asarray(actual, dtype="float64"), np.asarray(expected, dtype="float64")
    assert actual.shape == expected.shape, what
    same_nonfinite = ~np.isfinite(expected) & (actual == expected)
    scale = max(1.0, float(np.max(np.abs(expected[np.isfinite(expected)]), initial=0.0)))
    err = np.abs(actual - expected)
    ok = same_nonfinite | (err <= rtol * np.maximum(np.abs(expected), 1e-3 * scale))
    assert ok.all(), f"{what}: max error {np.max(np.where(ok, 0, err))} at {np.argwhere(~ok)[:5].ravel()}"


def run_threads(work, n):
    """Runs work(0) ... work(n - 1) on n threads at once and waits for all."""
    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def check_logp_from_threads(native, prog, ref, points, calls):
    """Thread k calls prog's nutpie logp pointer `calls` times at points[k] (ctypes
    drops the GIL, so they run at once); each last result must equal ref(points[k])."""
    handle = prog.nutpie_handle()
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(calls):
                rc, lp, g = call_logp(native.logp_address, handle, points[k])
                assert rc == 0
            results[k] = (lp, g)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    run_threads(work, len(points))
    assert not errors
    for k, (lp, g) in results.items():
        want_lp, want_g = ref(points[k])
        np.testing.assert_allclose(lp, want_lp, rtol=1e-13)
        np.testing.assert_allclose(g, want_g, rtol=1e-13)


def nutpie_point(model, x0):
    """nutpie's flat point x0 as {value variable name: array}, in the model's order."""
    ip = model.initial_point()
    point, k = {}, 0
    for v in model.value_vars:
        shape = np.shape(ip[v.name])
        n = int(np.prod(shape))
        point[v.name] = x0[k:k + n].reshape(shape)
        k += n
    assert k == len(x0)
    return point
