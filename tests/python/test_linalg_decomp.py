"""Native decompositions (CholeskySolve, LUFactor, LU, PivotToPermutations,
Eigh, Eigvalsh, QR, SVD), each as a plain node and under Blockwise, in mode
EMBER with the fallback off against PyTensor's Python implementations.

Eigenvectors and singular vectors may differ from LAPACK's by a sign per
column (pair); they are compared up to that sign and checked by
reconstruction and orthogonality. Gradient graphs, which are sign-invariant
when the cost is, must match PyTensor's within 1e-10."""

import importlib
import warnings

import numpy as np
import pytest
import scipy.linalg

from native_helpers import require_native

import pytensor
import pytensor.tensor.slinalg  # noqa: E402,F401
import pytensor.tensor as pt  # noqa: E402
from pytensor.tensor.blockwise import Blockwise  # noqa: E402

import ember  # noqa: E402

require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
STRICT = ember.Mode(fallback=False)
LOOSE = ember.Mode()  # for gradients that need ops Ember lacks (2.x's EighGrad)
rng = np.random.default_rng(11)


def op_class(name):
    for mod in ("pytensor.tensor.linalg", "pytensor.tensor.slinalg", "pytensor.tensor.nlinalg"):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        c = getattr(m, name, None)
        if isinstance(c, type):
            return c
    raise LookupError(name)


def core_ops(f):
    """Names of the ops of a compiled function, Blockwise as Blockwise[core]."""
    out = set()
    for n in f.maker.fgraph.toposort():
        name = type(n.op).__name__
        if name == "Blockwise":
            name = f"Blockwise[{type(n.op.core_op).__name__}]"
        out.add(name)
    return out


def run(inputs, outputs, args, mode=STRICT):
    f = pytensor.function(inputs, outputs, mode=mode)
    ref = pytensor.function(inputs, outputs, mode=PY)
    got, want = f(*args), ref(*args)
    if not isinstance(got, list):
        got, want = [got], [want]
    got, want = [np.asarray(g) for g in got], [np.asarray(w) for w in want]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    return f, got, want


def check(inputs, outputs, args, rtol=1e-12, atol=1e-13, mode=STRICT):
    f, got, want = run(inputs, outputs, args, mode)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return f


def same_up_to_column_sign(a, b, atol=1e-10):
    """a and b (..., m, k) equal after flipping a's columns to b's signs."""
    s = np.sign(np.sum(a * b, axis=-2, keepdims=True))
    np.testing.assert_allclose(a * s, b, atol=atol)


def spd(n, batch=()):
    x = rng.normal(size=(*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


# ---- CholeskySolve ----------------------------------------------------------------


@pytest.mark.covers("CholeskySolve", "Blockwise")
def test_cho_solve_plain_batched_and_gradient():
    CS = op_class("CholeskySolve")
    c, b, B = pt.dmatrix("c"), pt.dvector("b"), pt.dmatrix("B")
    A = spd(4)
    for lower in (True, False):
        C = np.linalg.cholesky(A) if lower else np.linalg.cholesky(A).T
        f = check([c, b, B], [CS(lower=lower, b_ndim=1)(c, b), CS(lower=lower, b_ndim=2)(c, B)],
                  [C, rng.normal(size=4), rng.normal(size=(4, 3))])
        assert "CholeskySolve" in core_ops(f)
    c3, B3 = pt.dtensor3("c3"), pt.dtensor3("B3")
    C3 = np.linalg.cholesky(spd(4, (2,)))
    f = check([c3, B3, B], [pt.linalg.cho_solve((c3, True), B3, b_ndim=2), pt.linalg.cho_solve((c3, True), B, b_ndim=1)],
              [C3, rng.normal(size=(2, 4, 2)), rng.normal(size=(2, 4))])
    assert "Blockwise[CholeskySolve]" in core_ops(f)
    # float32 factors and right-hand sides stay float32
    c32, b32 = pt.fmatrix("c32"), pt.fvector("b32")
    check([c32, b32], CS(lower=True, b_ndim=1)(c32, b32),
          [np.linalg.cholesky(A).astype("float32"), rng.normal(size=4).astype("float32")], rtol=2e-5, atol=1e-6)
    # a zero on the factor's diagonal: potrs divides by it (no error)
    Z = np.linalg.cholesky(A)
    Z[2, 2] = 0.0
    f, got, want = run([c, b], CS(lower=True, b_ndim=1)(c, b), [Z, rng.normal(size=4)])
    np.testing.assert_array_equal(np.isfinite(got[0]), np.isfinite(want[0]))
    try:
        cost = pt.sum(CS(lower=True, b_ndim=2)(c, B) * np.arange(12.0).reshape(4, 3))
        grads = pytensor.grad(cost, [c, B])
    except NotImplementedError:  # PyTensor 2.x has no CholeskySolve gradient
        return
    check([c, B], grads, [np.linalg.cholesky(A), rng.normal(size=(4, 3))], rtol=1e-10, atol=1e-10)


# ---- LU family ----------------------------------------------------------------------


@pytest.mark.covers("LUFactor", "PivotToPermutations", "Blockwise")
def test_lu_factor_and_lu_solve():
    a, b, B = pt.dmatrix("a"), pt.dvector("b"), pt.dmatrix("B")
    M = rng.normal(size=(6, 6))
    LU, piv = pt.linalg.lu_factor(a)
    f = check([a], [LU, piv], [M], rtol=1e-12, atol=1e-14)
    assert {"LUFactor", "Blockwise[LUFactor]"} & core_ops(f)
    for trans in (False, True):
        x = pt.linalg.lu_solve((LU, piv), b, trans=trans, b_ndim=1)
        X = pt.linalg.lu_solve((LU, piv), B, trans=trans, b_ndim=2)
        f = check([a, b, B], [x, X], [M, rng.normal(size=6), rng.normal(size=(6, 2))], rtol=1e-11, atol=1e-12)
        assert any("PivotToPermutations" in n for n in core_ops(f))
    # a singular matrix: getrf's info > 0 makes the factor NaN, the pivots stay
    S = M.copy()
    S[:, 3] = S[:, 1]
    S[:, 1] = 0.0
    f, got, want = run([a], [LU, piv], [S])
    assert np.isnan(got[0]).all() and np.isnan(want[0]).all()
    np.testing.assert_array_equal(got[1], want[1])
    # batched factor
    a3 = pt.dtensor3("a3")
    f = check([a3], list(pt.linalg.lu_factor(a3)), [rng.normal(size=(3, 5, 5))], rtol=1e-12, atol=1e-14)
    assert "Blockwise[LUFactor]" in core_ops(f)
    # batched solves: the pivots permute each b by a Blockwise of x[idx]
    B3 = pt.dtensor3("B3")
    LU3, piv3 = pt.linalg.lu_factor(a3)
    for trans in (False, True):
        outs = [pt.linalg.lu_solve((LU3, piv3), B, trans=trans, b_ndim=1),
                pt.linalg.lu_solve((LU3, piv3), B3, trans=trans, b_ndim=2)]
        # trans=True also sorts the permutation back: a Blockwise of ArgSortOp, not native
        f = check([a3, B, B3], outs, [rng.normal(size=(3, 4, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4, 2))],
                  rtol=1e-11, atol=1e-12, mode=LOOSE if trans else STRICT)
        assert "Blockwise[LUFactor]" in core_ops(f)
    # gradient of a solve through the factorization
    cost = pt.sum(pt.linalg.lu_solve((LU, piv), B, b_ndim=2) * np.arange(12.0).reshape(6, 2))
    check([a, B], pytensor.grad(cost, [a, B]), [M, rng.normal(size=(6, 2))], rtol=1e-10, atol=1e-10)


@pytest.mark.covers("PivotToPermutations", "Blockwise")
def test_pivot_to_permutations_plain_batched_and_bad_pivots():
    P = op_class("PivotToPermutations")
    p = pt.ivector("p")
    piv = np.array([3, 3, 4, 4, 4], dtype="int32")
    check([p], [P(inverse=True)(p), P(inverse=False)(p)], [piv])
    p2 = pt.imatrix("p2")
    f = check([p2], [Blockwise(P(inverse=True))(p2), Blockwise(P(inverse=False))(p2)],
              [np.array([[3, 3, 4, 4, 4], [0, 2, 2, 4, 4]], dtype="int32")])
    assert "Blockwise[PivotToPermutations]" in core_ops(f)
    f = pytensor.function([p], P(inverse=True)(p), mode=STRICT)
    with pytest.raises((ValueError, IndexError), match="out of bounds"):
        f(np.array([0, 7, 2], dtype="int32"))


@pytest.mark.covers("LU", "Blockwise")
def test_lu_outputs_batched_gradient_and_non_finite():
    LUop = op_class("LU")
    a = pt.dmatrix("a")
    M = rng.normal(size=(5, 5))
    for kw in ({}, {"p_indices": True}, {"permute_l": True}):
        f = check([a], LUop(**kw)(a), [M], rtol=1e-12, atol=1e-14)
        assert "LU" in core_ops(f)
        a3 = pt.dtensor3("a3")
        f = check([a3], Blockwise(LUop(**kw))(a3), [rng.normal(size=(2, 4, 4))], rtol=1e-12, atol=1e-14)
        assert "Blockwise[LU]" in core_ops(f)
    p, L, U = LUop()(a)
    cost = pt.sum(L * np.arange(25.0).reshape(5, 5)) + pt.sum(U ** 2)
    check([a], pytensor.grad(cost, a), [M], rtol=1e-10, atol=1e-10)
    f = pytensor.function([a], LUop()(a), mode=STRICT)
    bad = M.copy()
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="infs or NaNs"):
        f(bad)


# ---- Eigh, Eigvalsh -------------------------------------------------------------------


def eigvalsh(op, a, b=None):
    if b is not None:
        return op(a, b)
    try:
        return op(a)
    except TypeError:  # PyTensor 2.x: b is a required input, NoneConst for none
        from pytensor.tensor.type_other import NoneConst

        return op(a, NoneConst)


def _eigh_op(lower):
    Eigh = op_class("Eigh")
    try:
        return Eigh(lower=lower)
    except TypeError:  # PyTensor 2.x: NumPy's UPLO
        return Eigh(UPLO="L" if lower else "U")


@pytest.mark.covers("Eigh", "Blockwise")
def test_eigh_values_vectors_up_to_sign_and_batched():
    a = pt.dmatrix("a")
    X = rng.normal(size=(6, 6))  # not symmetric: only one triangle is read
    for lower in (True, False):
        f, got, want = run([a], _eigh_op(lower)(a), [X])
        assert "Eigh" in core_ops(f)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-13)
        assert np.all(np.diff(got[0]) >= 0)
        same_up_to_column_sign(got[1], want[1])
        S = np.tril(X) + np.tril(X, -1).T if lower else np.triu(X) + np.triu(X, 1).T
        np.testing.assert_allclose(got[1] @ np.diag(got[0]) @ got[1].T, S, atol=1e-12)
        np.testing.assert_allclose(got[1].T @ got[1], np.eye(6), atol=1e-13)
    a3 = pt.dtensor3("a3")
    f, got, want = run([a3], Blockwise(_eigh_op(True), signature="(m,m)->(m),(m,m)")(a3), [spd(4, (3,))])
    assert "Blockwise[Eigh]" in core_ops(f)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    same_up_to_column_sign(got[1], want[1])
    a32 = pt.fmatrix("a32")
    f, got, want = run([a32], _eigh_op(True)(a32), [spd(4).astype("float32")])
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5)
    same_up_to_column_sign(got[1], want[1], atol=1e-4)
    f = pytensor.function([a], _eigh_op(True)(a), mode=STRICT)
    with pytest.raises(ValueError, match="infs or NaNs"):
        f(np.full((3, 3), np.nan))


@pytest.mark.covers("Eigh")
def test_eigh_gradients_of_sign_invariant_costs():
    a = pt.dmatrix("a")
    A = spd(5)
    w, v = _eigh_op(True)(a)
    W = rng.normal(size=(5, 5))
    costs = [pt.sum(pt.log(w)), pt.sum((v ** 2) * W), pt.sum((v @ pt.diag(w) @ v.T) * W)]
    check([a], [pytensor.grad(c, a) for c in costs], [A], rtol=1e-10, atol=1e-10, mode=LOOSE)


@pytest.mark.covers("Eigh", "Eigvalsh")
def test_generalized_eigenproblem():
    Eigvalsh = op_class("Eigvalsh")
    a, b = pt.dmatrix("a"), pt.dmatrix("b")
    X, Bm = rng.normal(size=(5, 5)), spd(5)
    check([a, b], Eigvalsh(lower=True)(a, b), [X + X.T, Bm], rtol=1e-11, atol=1e-12)
    check([a, b], Eigvalsh(lower=False)(a, b), [X, Bm], rtol=1e-11, atol=1e-12)
    f = pytensor.function([a, b], Eigvalsh(lower=True)(a, b), mode=STRICT)
    with pytest.raises(ValueError, match="not positive definite"):
        f(X, -Bm)
    try:
        node = op_class("Eigh")()(a, b)
    except (TypeError, AssertionError):  # PyTensor 2.x: Eigh takes one matrix
        return
    f, got, want = run([a, b], node, [X + X.T, Bm])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-11, atol=1e-12)
    same_up_to_column_sign(got[1], want[1], atol=1e-9)
    np.testing.assert_allclose(got[1].T @ Bm @ got[1], np.eye(5), atol=1e-12)


@pytest.mark.covers("Eigvalsh", "Blockwise")
def test_eigvalsh_plain_batched_and_gradient():
    Eigvalsh = op_class("Eigvalsh")
    a = pt.dmatrix("a")
    X = rng.normal(size=(6, 6))
    for lower in (True, False):
        f = check([a], eigvalsh(Eigvalsh(lower=lower), a), [X])
        assert "Eigvalsh" in core_ops(f)
    cost = pt.sum(pt.log(eigvalsh(Eigvalsh(lower=True), a)))
    try:
        grad = pytensor.grad(cost, a)
    except ValueError:  # PyTensor 2.x: Eigvalsh.grad unpacks (a, b) from one input
        grad = None
    if grad is not None:
        check([a], grad, [spd(6)], rtol=1e-10, atol=1e-10, mode=LOOSE)
    a3 = pt.dtensor3("a3")
    try:
        w3 = Blockwise(Eigvalsh(lower=True), signature="(m,m)->(m)")(a3)
    except TypeError:  # PyTensor 2.x's Eigvalsh cannot be batched without b
        return
    f = check([a3], w3, [spd(3, (4,))])
    assert "Blockwise[Eigvalsh]" in core_ops(f)


# ---- QR --------------------------------------------------------------------------------


@pytest.mark.covers("QR", "Blockwise")
def test_qr_modes_match_lapack_signs_included():
    QR = op_class("QR")
    a, a3 = pt.dmatrix("a"), pt.dtensor3("a3")
    for shape in ((5, 3), (3, 5), (4, 4)):
        X = rng.normal(size=shape)
        for mode in ("full", "economic", "r", "raw"):
            f = check([a], QR(mode=mode)(a), [X], rtol=1e-11, atol=1e-12)
            assert "QR" in core_ops(f)
        for mode in ("full", "economic", "r"):
            f = check([a3], Blockwise(QR(mode=mode))(a3), [rng.normal(size=(2, *shape))], rtol=1e-11, atol=1e-12)
            assert "Blockwise[QR]" in core_ops(f)
    a32 = pt.fmatrix("a32")
    check([a32], QR(mode="economic")(a32), [rng.normal(size=(5, 3)).astype("float32")], rtol=1e-4, atol=1e-5)


@pytest.mark.covers("QR")
def test_qr_gradients():
    QR = op_class("QR")
    a = pt.tensor("a", shape=(5, 3), dtype="float64")  # static: PyTensor 3.3's gradient needs an IfElse otherwise
    X = rng.normal(size=(5, 3))
    q, r = QR(mode="economic")(a)
    W = rng.normal(size=(5, 3))
    costs = [pt.sum(pt.log(pt.abs(pt.diag(r)))), pt.sum((q @ r) * W), pt.sum(q * W)]
    try:
        grads = [pytensor.grad(c, a) for c in costs]
    except NotImplementedError:
        pytest.skip("this PyTensor has no QR gradient")
    check([a], grads, [X], rtol=1e-10, atol=1e-10, mode=LOOSE)


# ---- SVD -------------------------------------------------------------------------------


@pytest.mark.covers("SVD", "Blockwise")
def test_svd_values_vectors_up_to_sign_and_batched():
    SVD = op_class("SVD")
    a, a3 = pt.dmatrix("a"), pt.dtensor3("a3")
    for shape in ((5, 3), (3, 5), (4, 4)):
        X = rng.normal(size=shape)
        k = min(shape)
        f = check([a], SVD(compute_uv=False)(a), [X])
        assert "SVD" in core_ops(f)
        for full in (True, False):
            f, got, want = run([a], SVD(full_matrices=full)(a), [X])
            U, s, Vt = got
            np.testing.assert_allclose(s, want[1], rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(U[:, :k] * s @ Vt[:k], X, atol=1e-12)
            np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-12)
            np.testing.assert_allclose(Vt @ Vt.T, np.eye(Vt.shape[0]), atol=1e-12)
            # the pairs (u_i, v_i) agree with LAPACK's up to one sign each
            sgn = np.sign(np.sum(U[:, :k] * want[0][:, :k], axis=0))
            np.testing.assert_allclose(U[:, :k] * sgn, want[0][:, :k], atol=1e-10)
            np.testing.assert_allclose(Vt[:k] * sgn[:, None], want[2][:k], atol=1e-10)
        f, got, want = run([a3], Blockwise(SVD(full_matrices=False))(a3), [rng.normal(size=(3, *shape))])
        assert "Blockwise[SVD]" in core_ops(f)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.einsum("bik,bk,bkj->bij", *got), np.einsum("bik,bk,bkj->bij", *want), atol=1e-12)
    f = pytensor.function([a], SVD()(a), mode=STRICT)
    with pytest.raises(ValueError, match="did not converge"):
        f(np.full((3, 2), np.nan))


@pytest.mark.covers("SVD")
def test_svd_gradients_of_sign_invariant_costs():
    SVD = op_class("SVD")
    a = pt.dmatrix("a")
    X = rng.normal(size=(5, 3))
    W = rng.normal(size=(5, 3))
    u, s, vt = SVD(full_matrices=False)(a)
    costs = [pt.sum(SVD(compute_uv=False)(a)), pt.sum(pt.log(s)), pt.sum(((u * s) @ vt) * W)]
    check([a], [pytensor.grad(c, a) for c in costs], [X], rtol=1e-10, atol=1e-10, mode=LOOSE)


# ---- MatrixPinv -----------------------------------------------------------------------


@pytest.mark.covers("MatrixPinv", "Blockwise")
def test_pinv_plain_hermitian_batched_rank_deficient_and_gradient():
    Pinv = op_class("MatrixPinv")
    a, a3 = pt.dmatrix("a"), pt.dtensor3("a3")
    for shape in ((5, 3), (3, 5), (4, 4)):
        f = check([a], Pinv(hermitian=False)(a), [rng.normal(size=shape)], rtol=1e-11, atol=1e-12)
        assert "MatrixPinv" in core_ops(f)
    low = rng.normal(size=(5, 2)) @ rng.normal(size=(2, 4))  # rank 2
    check([a], Pinv(hermitian=False)(a), [low], rtol=1e-9, atol=1e-11)
    check([a], Pinv(hermitian=True)(a), [spd(4) - 6 * np.eye(4)], rtol=1e-11, atol=1e-12)
    f = check([a3], Blockwise(Pinv(hermitian=False))(a3), [rng.normal(size=(2, 4, 3))], rtol=1e-11, atol=1e-12)
    assert "Blockwise[MatrixPinv]" in core_ops(f)
    W = rng.normal(size=(3, 5))
    check([a], pytensor.grad(pt.sum(Pinv(hermitian=False)(a) * W), a), [rng.normal(size=(5, 3))],
          rtol=1e-10, atol=1e-10, mode=LOOSE)


@pytest.mark.covers("Expm", "Blockwise")
def test_expm_plain_batched_nonfinite_and_gradient():
    a, a3 = pt.dmatrix("a"), pt.dtensor3("a3")
    for n in (1, 3, 6):
        f = check([a], pt.linalg.expm(a), [rng.normal(size=(n, n))], rtol=1e-12, atol=1e-13)
        assert core_ops(f) & {"Expm", "Blockwise[Expm]"}
    # A nilpotent matrix (exactly I + N) and a large norm (many squarings).
    check([a], pt.linalg.expm(a), [np.array([[0.0, 1.0], [0.0, 0.0]])])
    check([a], pt.linalg.expm(a), [np.array([[-40.0, 3.0], [1.0, -20.0]])], rtol=1e-10, atol=1e-300)
    check([a3], pt.linalg.expm(a3), [rng.normal(size=(2, 3, 3))])
    f = pytensor.function([a], pt.linalg.expm(a), mode=STRICT)
    assert np.isnan(f(np.array([[np.inf, 0.0], [0.0, 1.0]]))).all()
    # The gradient: PyTensor 3's block-matrix Expm, or 2.x's eigendecomposition
    # (complex, run by PyTensor); against central differences of scipy's expm.
    W = rng.normal(size=(4, 4))
    x = rng.normal(size=(4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fg = pytensor.function([a], pytensor.grad(pt.sum(pt.linalg.expm(a) * W), a), mode=LOOSE)
    eps, num = 1e-6, np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            e = np.zeros((4, 4))
            e[i, j] = eps
            num[i, j] = (np.sum(scipy.linalg.expm(x + e) * W) - np.sum(scipy.linalg.expm(x - e) * W)) / (2 * eps)
    np.testing.assert_allclose(fg(x), num, rtol=1e-7, atol=1e-7)


@pytest.mark.covers("ExpmGrad")
def test_ember_differentiates_expm_by_its_frechet_derivative():
    pm = pytest.importorskip("pymc")
    enutpie = pytest.importorskip("ember.nutpie")
    W = rng.normal(size=(3, 3))
    with pm.Model() as model:
        k = pm.Normal("k", 0, 1, shape=(3, 3))
        pm.Potential("p", pt.sum(pt.linalg.expm(0.5 * k) * W))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = enutpie.compile_pymc_model(model, prepare="native", cache=False)
    assert c.timings.get("gradient_path") == "ember", c.timings.get("gradient_fallback")
    x = rng.normal(size=9)
    lp, g = c.logp(x)

    def logp(v):
        return -0.5 * np.sum(v**2) - 9 * 0.5 * np.log(2 * np.pi) + np.sum(scipy.linalg.expm(0.5 * v.reshape(3, 3)) * W)

    eps = 1e-6
    num = [(logp(x + eps * e) - logp(x - eps * e)) / (2 * eps) for e in np.eye(9)]
    np.testing.assert_allclose(lp, logp(x), rtol=1e-12)
    np.testing.assert_allclose(g, num, rtol=1e-7, atol=1e-7)


def test_singular_and_indefinite_matrices_raise_linalg_error_as_numpy_does():
    a = pt.dmatrix("a")
    singular = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        pytensor.function([a], pt.linalg.inv(a), mode=ember.Mode())(singular)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # PyTensor 3's note on on_error
            f = pytensor.function([a], pt.linalg.cholesky(a, on_error="raise"), mode=ember.Mode())
        f(np.array([[1.0, 0.2], [0.2, -2.0]]))


def test_a_solve_with_a_statically_non_square_matrix_fails_only_when_it_runs():
    a = pt.tensor("a", shape=(3, 2))
    b = pt.dvector("b")
    x = pytensor.tensor.slinalg.solve_triangular(a, b, lower=True)
    f = pytensor.function([a, b], x, mode=ember.Mode())
    with pytest.raises(ValueError, match="square"):
        f(np.ones((3, 2)), np.ones(3))
