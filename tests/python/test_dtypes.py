"""uint16, uint32 and uint64 through mode EMBER against PyTensor's Python
linker: element-wise code on uint16/uint32 (computed in the int64 register
class and wrapped like NumPy), reductions and data movement on all three,
element-wise uint64 through the fallback."""

import warnings

import numpy as np
import pytest

from native_helpers import require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402

import ember  # noqa: E402

native = require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
STRICT = ember.Mode(fallback=False)


def check(inputs, outputs, args, mode=STRICT):
    f = pytensor.function(inputs, outputs, mode=mode)
    ref = pytensor.function(inputs, outputs, mode=PY)
    got, want = f(*args), ref(*args)
    for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want], strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w)
    return f


@pytest.mark.covers("Elemwise", "Cast")
@pytest.mark.parametrize("dt", ["uint16", "uint32"])
def test_elementwise_arithmetic_wraps_like_numpy(dt):
    info = np.iinfo(dt)
    a, b = pt.vector("a", dtype=dt), pt.vector("b", dtype=dt)
    # PyTensor's Python implementation raises on overflow: values within range there...
    va = np.array([3, 1, 7, info.max, info.max - 3, 12345], dtype=dt)
    vb = np.array([3, 0, 2, 0, 5, 17], dtype=dt) + np.array([0, 1, 0, 1, 0, 0], dtype=dt)
    outs = [a - b, a // b, a % b, pt.maximum(a, b), a > b, pt.eq(a, b), a.astype("float64") / 3,
            (a % 100).astype("int8"), (a // 3) + np.int8(-1), pt.cast(pt.as_tensor(0.5) * a, dt)]
    check([a, b], outs, [va, vb])
    # ...and wrapping where NumPy's arrays wrap.
    f = pytensor.function([a, b], [a + b, a * b, b - a], mode=STRICT)
    for got, want in zip(f(va, vb), [va + vb, va * vb, vb - va], strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.covers("Sum", "Max", "Join", "Subtensor", "AdvancedSubtensor1")
@pytest.mark.parametrize("dt", ["uint16", "uint32", "uint64"])
def test_reductions_and_data_movement(dt):
    x = pt.matrix("x", dtype=dt)
    i = pt.lvector("i")
    v = np.array([[1, 2**15 + 1, 3], [np.iinfo(dt).max, 0, 9]], dtype=dt)
    outs = [x.sum(axis=0), x.max(), x.min(axis=1), pt.join(0, x, x[::-1]), x[:, 1], x[i], x.T.flatten()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ember.FallbackWarning)  # uint64 min is ~max(~x): an Elemwise
        check([x, i], outs, [v, np.array([1, 0, 1])], mode=STRICT if dt != "uint64" else ember.Mode())


def test_uint64_elementwise_goes_through_the_fallback():
    a = pt.vector("a", dtype="uint64")
    out = a * 3 + a // 2
    v = np.array([1, 2**63 + 5, 2**64 - 1], dtype="uint64")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        check([a], out, [v], mode=ember.Mode())
    assert any(issubclass(w.category, ember.FallbackWarning) for w in rec)
    with pytest.raises(ember.UnsupportedGraphError, match="uint64"):
        pytensor.function([a], out, mode=STRICT)


def test_program_takes_and_returns_unsigned_arrays():
    for dt in ("uint16", "uint32", "uint64"):
        x = pt.vector("x", dtype=dt)
        fn = pytensor.function([x], [x[::-1], x.sum()], mode=STRICT)
        v = np.array([1, 2, np.iinfo(dt).max], dtype=dt)
        r, s = fn(v)
        assert r.dtype == dt and list(r) == list(v[::-1])
        assert s == v.sum()
