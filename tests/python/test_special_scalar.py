"""Special scalar ops of the math library that PyTensor computes through
scipy.special (PolyGamma): mode EMBER with the fallback off against
PyTensor's Python implementations, on ordinary values, poles, infinities,
NaN, integer inputs and float32, and the gradient graphs that use them."""

import numpy as np
import pytest

from native_helpers import reference_mode, require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402

import ember  # noqa: E402

require_native()

STRICT = ember.Mode(fallback=False)


def check(inputs, outputs, args, rtol=1e-13, atol=0.0):
    f = pytensor.function(inputs, outputs, mode=STRICT)
    ref = pytensor.function(inputs, outputs, mode=reference_mode())
    got, want = f(*args), ref(*args)
    if not isinstance(got, list):
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        # Same infinities, signed zeros and NaNs; finite values within rtol.
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        fin = np.isfinite(w)
        np.testing.assert_array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)])
        np.testing.assert_array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))
        np.testing.assert_allclose(g[fin], w[fin], rtol=rtol, atol=atol)
    return f


@pytest.mark.covers("PolyGamma")
def test_polygamma_orders_poles_and_special_values():
    n, x = pt.lvector("n"), pt.dvector("x")
    xs = np.array([0.3, 1.0, 2.5, 7.25, 31.0, 1e-6, 1e6, 1e12, -0.5, -1.7, -12.3, 0.0, -0.0, -3.0,
                   np.inf, -np.inf, np.nan, 1e300])
    for order in (0, 1, 2, 3, 4, 7, 15, 40, 171, -1):
        ns = np.full(xs.shape, order, dtype=np.int64)
        # x < 0: a difference of terms (SciPy sums them from x upwards): a few ulps of them.
        check([n, x], pt.polygamma(n, x), [ns, xs], rtol=1e-12)


@pytest.mark.covers("PolyGamma")
def test_polygamma_integer_and_float32_inputs_and_broadcast_order():
    n, k = pt.bscalar("n"), pt.ivector("k")
    check([n, k], pt.polygamma(n, k), [np.int8(2), np.array([1, 2, 5, 100, 0, -2], dtype=np.int32)])
    m, y = pt.iscalar("m"), pt.fvector("y")
    vals = np.array([0.25, 1.5, 3.0, 40.0, -0.5, 0.0], dtype=np.float32)
    check([m, y], pt.polygamma(m, y), [np.int32(1), vals], rtol=1e-6)
    # n as the varying input, x fixed.
    v = pt.lvector("v")
    check([v], pt.polygamma(v, 0.75), [np.arange(0, 30, dtype=np.int64)])


@pytest.mark.covers("PolyGamma", "Psi", "TriGamma")
def test_polygamma_gradient_and_digamma_trigamma_gradients():
    x = pt.dvector("x")
    xs = np.array([0.2, 1.3, 4.0, 25.0, 300.0])
    # d/dx trigamma = polygamma(2, x); d/dx polygamma(3, x) = polygamma(4, x).
    check([x], pytensor.grad(pt.sum(pt.tri_gamma(x)), x), [xs])
    check([x], pytensor.grad(pt.sum(pt.polygamma(3, x) * x), x), [xs])
    check([x], pytensor.grad(pytensor.grad(pt.sum(pt.gammaln(x)), x).sum(), x), [xs])
