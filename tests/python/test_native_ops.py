"""Native kernels for ops PyMC models hit (Softmax family, Argmax, Sort,
Eye, FillDiagonal, BlockDiagonal, KroneckerProduct, MatrixIsPositiveDefinite,
prod's MulWithoutZeros, BatchedDot): mode EMBER with the fallback off (so the
graph is all native) against PyTensor's Python implementations, values and
bad input."""

import numpy as np
import pytest

from native_helpers import check_outputs, require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402

import ember  # noqa: E402

require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
STRICT = ember.Mode(fallback=False)
rng = np.random.default_rng(7)


def check(inputs, outputs, args, rtol=1e-13, atol=0.0):
    return check_outputs(STRICT, PY, inputs, outputs, args,
                         lambda g, w: np.testing.assert_allclose(g, w, rtol=rtol, atol=atol))


@pytest.mark.covers("Softmax", "LogSoftmax", "SoftmaxGrad")
def test_softmax_logsoftmax_and_gradients_each_axis():
    x = pt.dtensor3("x")
    v = rng.normal(size=(2, 3, 4)) * 5
    for axis in (None, 0, 1, -1):
        sm = pt.special.softmax(x, axis=axis)
        lsm = pt.special.log_softmax(x, axis=axis)
        w = pt.constant(rng.normal(size=(2, 3, 4)))
        loss = pt.sum(sm * w) + pt.sum(lsm * w)
        check([x], [sm, lsm, pytensor.grad(loss, x)], [v], rtol=1e-12, atol=1e-15)


@pytest.mark.covers("Softmax", "LogSoftmax")
def test_softmax_extremes_and_float32():
    x = pt.dmatrix("x")
    v = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0], [np.nan, 1.0, 2.0]])
    check([x], [pt.special.softmax(x, axis=1), pt.special.log_softmax(x, axis=1)], [v], atol=1e-300)
    y = pt.fmatrix("y")
    check([y], pt.special.softmax(y, axis=0), [rng.normal(size=(3, 5)).astype("float32")], rtol=2e-6)


@pytest.mark.covers("Argmax")
def test_argmax_axes_nan_and_empty():
    x = pt.dtensor3("x")
    v = rng.normal(size=(3, 4, 5))
    v[1, 2, 3] = np.nan
    outs = [pt.argmax(x), pt.argmax(x, axis=1), pt.argmax(x, axis=(0, 2)), pt.argmax(x, axis=-1)]
    check([x], outs, [v])
    i = pt.lmatrix("i")
    check([i], pt.argmax(i, axis=0), [rng.integers(-5, 5, size=(4, 3))])
    f = pytensor.function([x], pt.argmax(x, axis=1), mode=STRICT)
    with pytest.raises(ValueError, match="empty"):
        f(np.zeros((2, 0, 3)))


@pytest.mark.covers("SortOp", "ArgSortOp")
def test_sort_and_argsort_each_axis_with_nans():
    x = pt.dmatrix("x")
    v = rng.permutation(20).reshape(4, 5).astype("float64")
    v[0, 1] = np.nan
    outs = [pt.sort(x), pt.sort(x, axis=0), pt.sort(x, axis=None), pt.argsort(x), pt.argsort(x, axis=0),
            pt.argsort(x, axis=None)]
    check([x], outs, [v])
    ties = np.array([[3.0, 1.0, 3.0, 1.0, 2.0]])
    check([x], pt.argsort(x, kind="stable"), [ties])
    s = pt.lvector("s")
    check([s], [pt.sort(s), pt.argsort(s)], [rng.integers(-9, 9, size=7) * 10 + np.arange(7)])
    g = pytensor.grad(pt.sum(pt.sort(x, axis=1) * pt.arange(5)), x)
    check([x], g, [rng.permutation(20).reshape(4, 5).astype("float64")])


@pytest.mark.covers("Eye", "ARange")
def test_eye_and_tri():
    n, m, k = pt.lscalar("n"), pt.lscalar("m"), pt.lscalar("k")
    for args in ((3, 4, 0), (4, 3, 1), (3, 3, -2), (2, 5, 7), (0, 3, 0)):
        check([n, m, k], [pt.eye(n, m, k), pt.eye(n, m, k, dtype="int32")], list(args))
    check([n, m, k], pt.tri(n, m, k), [4, 3, 1])
    f = pytensor.function([n, m, k], pt.eye(n, m, k), mode=STRICT)
    with pytest.raises(ValueError, match="negative"):
        f(-1, 2, 0)


@pytest.mark.covers("FillDiagonal", "FillDiagonalOffset")
def test_fill_diagonal_and_offset():
    a = pt.dmatrix("a")
    c = pt.dscalar("c")
    o = pt.lscalar("o")
    for shape in ((3, 3), (5, 3), (3, 5)):
        v = rng.normal(size=shape)
        check([a, c], pt.fill_diagonal(a, c), [v, 7.0])
        for off in (-4, -1, 0, 2, 6):
            check([a, c, o], pt.fill_diagonal_offset(a, c, o), [v, 7.0, off])
    t = pt.dtensor3("t")
    check([t, c], pt.fill_diagonal(t, c), [rng.normal(size=(3, 3, 3)), -1.0])
    f = pytensor.function([t, c], pt.fill_diagonal(t, c), mode=STRICT)
    with pytest.raises(ValueError, match="equal length"):
        f(np.zeros((2, 3, 3)), 1.0)


@pytest.mark.covers("BlockDiagonal", "KroneckerProduct")
def test_block_diagonal_and_kron():
    from pytensor.tensor.linalg import block_diag

    a, b, c = pt.dmatrix("a"), pt.dmatrix("b"), pt.lmatrix("c")
    args = [rng.normal(size=(2, 3)), rng.normal(size=(1, 1)), rng.integers(0, 5, size=(3, 2))]
    check([a, b, c], block_diag(a, b, c), args)
    check([a, b], pt.linalg.kron(a, b), args[:2])
    v = pt.dvector("v")
    check([a, v], pt.linalg.kron(a, v), [args[0], rng.normal(size=4)])


@pytest.mark.covers("PosDefMatrix")
def test_matrix_is_positive_definite():
    import pymc as pm
    try:
        from pymc.distributions.multivariate import matrix_pos_def
    except ImportError:
        pytest.skip("this PyMC has no matrix_pos_def")
    a = pt.dmatrix("a")
    spd = np.array([[2.0, 0.5], [0.5, 1.0]])
    for v in (spd, -spd, np.array([[1.0, 2.0], [2.0, 1.0]]), np.eye(3), np.zeros((0, 0))):
        check([a], matrix_pos_def(a), [v])
    nan = np.full((2, 2), np.nan)
    if type(matrix_pos_def(a).owner.op).__name__ == "PosDefMatrix":  # PyMC 5: scipy's check_finite
        f = pytensor.function([a], matrix_pos_def(a), mode=STRICT)
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(nan)
    else:  # PyMC 6: a graph over cholesky, False for NaN
        check([a], matrix_pos_def(a), [nan])
    del pm


@pytest.mark.covers("CAReduce", "MulWithoutZeros")
def test_prod_gradient_uses_mul_without_zeros():
    x = pt.dmatrix("x")
    v = rng.normal(size=(3, 4))
    v[0, 1] = 0.0
    v[2, :] = 0.0
    check([x], [pt.prod(x, axis=1, no_zeros_in_input=False), pytensor.grad(pt.sum(pt.prod(x, axis=1)), x)], [v])
    from pytensor.tensor.elemwise import CAReduce
    from pytensor.tensor.math import mul_without_zeros

    check([x], [CAReduce(mul_without_zeros, axis=(1,))(x), CAReduce(mul_without_zeros, axis=None)(x)], [v])
    check([x], CAReduce(mul_without_zeros, axis=(0,))(x), [np.zeros((0, 3))])


@pytest.mark.covers("BatchedDot")
def test_batched_dot_values_gradient_and_what_specialize_makes_of_matmul():
    x, y = pt.dtensor3("x"), pt.dtensor3("y")
    a, b = rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 5, 2))
    try:
        from pytensor.tensor.blas import BatchedDot
    except ImportError:  # PyTensor 3.x keeps it in a subpackage
        from pytensor.tensor.blas.batched import BatchedDot
    out = BatchedDot()(x, y)
    check([x, y], [out, pt.grad((out ** 2).sum(), [x, y])[0]], [a, b], rtol=1e-12, atol=1e-12)
    # A matmul with a batch dim: fast_run's specialize turns it into BatchedDot.
    z = pt.matmul(x, y)
    f = check([x, y], [z], [a, b], rtol=1e-12, atol=1e-12)
    ref = pytensor.function([x, y], z, mode=PY)
    ops = {type(n.op).__name__ for n in ref.maker.fgraph.toposort()}
    assert "BatchedDot" in ops, ops
    np.testing.assert_allclose(f(a, b)[0], a @ b, rtol=1e-12, atol=1e-12)
    # Empty batch and size-1 dims.
    check([x, y], [out], [np.zeros((0, 3, 5)), np.zeros((0, 5, 2))])
    check([x, y], [out], [rng.normal(size=(2, 1, 5)), rng.normal(size=(2, 5, 1))], rtol=1e-12, atol=1e-12)
