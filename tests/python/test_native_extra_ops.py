"""Native kernels for PyTensor's extra_ops (Repeat, SearchsortedOp, Unique,
Nonzero, RavelMultiIndex, UnravelIndex, Bartlett): mode EMBER with the
fallback off against PyTensor's Python implementations, bit for bit and
dtype for dtype, and bad input as a call error."""

import numpy as np
import pytest

from native_helpers import check_outputs, require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402
from pytensor.tensor import extra_ops  # noqa: E402

import ember  # noqa: E402

require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
STRICT = ember.Mode(fallback=False)
rng = np.random.default_rng(11)


def check(inputs, outputs, args, op=None):
    return check_outputs(STRICT, PY, inputs, outputs, args, np.testing.assert_array_equal, op=op)


@pytest.mark.covers("Repeat")
def test_repeat_each_axis_broadcast_count_and_empty():
    x = pt.dtensor3("x")
    r = pt.lvector("r")
    v = rng.normal(size=(2, 3, 4))
    for axis in (0, 1, 2, -1):
        n = v.shape[axis]
        check([x, r], pt.repeat(x, r, axis=axis), [v, rng.integers(0, 3, size=n)], "Repeat")
    check([x, r], pt.repeat(x, r, axis=1), [v, np.array([2])], "Repeat")  # one count for every slice
    check([x, r], pt.repeat(x, r, axis=1), [v, np.zeros(3, "int64")], "Repeat")
    check([x, r], pt.repeat(x, r, axis=0), [np.zeros((0, 3, 4)), np.zeros(0, "int64")], "Repeat")
    check([x, r], pt.repeat(x.transpose(2, 0, 1), r, axis=2), [v, np.array([1, 0, 3])], "Repeat")
    i = pt.imatrix("i")
    r8 = pt.bvector("r8")
    check([i, r8], pt.repeat(i, r8, axis=1), [rng.integers(-9, 9, size=(3, 2)).astype("int32"),
                                              np.array([3, 1], "int8")], "Repeat")
    b = pt.vector("b", dtype="bool")
    check([b, r], pt.repeat(b, r, axis=0), [np.array([True, False]), np.array([2, 3])], "Repeat")


@pytest.mark.covers("Repeat")
def test_repeat_negative_or_mismatched_counts_fail_naming_the_node():
    x = pt.dmatrix("x")
    r = pt.lvector("r")
    f = pytensor.function([x, r], pt.repeat(x, r, axis=1), mode=STRICT)
    with pytest.raises(ValueError, match="Repeat.*negative"):
        f(np.ones((2, 3)), np.array([1, -1, 2]))
    with pytest.raises(ValueError, match="Repeat.*broadcast"):
        f(np.ones((2, 3)), np.array([1, 2]))


@pytest.mark.covers("SearchsortedOp")
def test_searchsorted_sides_dtypes_nans_and_sorter():
    x = pt.dvector("x")
    v = pt.dmatrix("v")
    xs = np.array([-1.0, 0.0, 0.0, 2.5, 2.5, 2.5, 7.0, np.nan])
    vs = np.array([[-5.0, 0.0, 2.5, np.nan], [7.0, 8.0, 0.1, -1.0]])
    for side in ("left", "right"):
        check([x, v], pt.searchsorted(x, v, side=side), [xs, vs], "SearchsortedOp")
    s = pt.lvector("s")
    shuffled = xs[rng.permutation(8)]
    order = np.argsort(shuffled, kind="stable")
    for side in ("left", "right"):
        check([x, v, s], pt.searchsorted(x, v, side=side, sorter=s), [shuffled, vs, order], "SearchsortedOp")
    i = pt.lvector("i")
    f32 = pt.fscalar("f")
    check([i, f32], pt.searchsorted(i, f32), [np.array([1, 3, 3, 9]), np.float32(3.0)], "SearchsortedOp")
    u = pt.vector("u", dtype="uint64")
    j = pt.lvector("j")
    big = np.array([0, 2**53, 2**53 + 1, 2**63], dtype="uint64")  # the uint64/int64 mix compares as float64
    check([u, j], pt.searchsorted(u, j, side="right"), [big, np.array([2**53 + 1, -1, 5])], "SearchsortedOp")
    check([x, v], pt.searchsorted(x, v), [np.zeros(0), vs], "SearchsortedOp")
    check([x, v], pt.searchsorted(x, v), [xs, np.zeros((0, 3))], "SearchsortedOp")


@pytest.mark.covers("SearchsortedOp")
def test_searchsorted_bad_sorter_fails_naming_the_node():
    x = pt.dvector("x")
    s = pt.lvector("s")
    f = pytensor.function([x, s], pt.searchsorted(x, pt.constant(np.array([1.0, 9.0])), sorter=s), mode=STRICT)
    with pytest.raises(ValueError, match="SearchsortedOp.*sorter"):
        f(np.arange(3.0), np.array([0, 1]))
    with pytest.raises(ValueError, match="SearchsortedOp.*out of range"):
        f(np.arange(3.0), np.array([0, 1, 7]))


@pytest.mark.covers("Unique")
def test_unique_every_return_combination_with_nans_and_empty():
    x = pt.dmatrix("x")
    v = rng.integers(0, 5, size=(4, 6)).astype("float64")
    v[1, 2] = v[3, 0] = np.nan
    v[0, 0] = -0.0
    for ri in (False, True):
        for rv in (False, True):
            for rc in (False, True):
                out = pt.unique(x, return_index=ri, return_inverse=rv, return_counts=rc)
                check([x], out, [v], "Unique")
                check([x], out, [np.zeros((0, 2))], "Unique")
    i = pt.ltensor3("i")
    check([i], pt.unique(i, return_index=True, return_inverse=True, return_counts=True),
          [rng.integers(-3, 3, size=(2, 3, 4))], "Unique")
    s = pt.lscalar("s")
    check([s], pt.unique(s, return_counts=True), [np.int64(4)], "Unique")


@pytest.mark.covers("Unique")
def test_unique_along_an_axis_runs_through_the_fallback():
    x = pt.dmatrix("x")
    with pytest.warns(ember.FallbackWarning, match="Unique"):
        f = pytensor.function([x], pt.unique(x, axis=0), mode=ember.Mode())
    v = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 5.0]])
    np.testing.assert_array_equal(f(v), np.unique(v, axis=0))


@pytest.mark.covers("Nonzero")
def test_nonzero_and_flatnonzero_each_rank():
    x = pt.dtensor3("x")
    v = rng.integers(0, 3, size=(3, 4, 2)).astype("float64")
    v[0, 0, 0] = np.nan
    v[1, 1, 1] = -0.0
    check([x], pt.nonzero(x), [v], "Nonzero")
    check([x], pt.nonzero(x), [np.zeros((3, 0, 2))], "Nonzero")
    check([x], pt.flatnonzero(x), [v], "Nonzero")
    b = pt.vector("b", dtype="bool")
    check([b], pt.nonzero(b), [np.array([True, False, True])], "Nonzero")
    check([x], pt.nonzero(x.transpose(2, 0, 1)), [v], "Nonzero")


@pytest.mark.covers("RavelMultiIndex")
def test_ravel_multi_index_modes_orders_and_broadcast():
    i, j = pt.lvector("i"), pt.lvector("j")
    dims = pt.lvector("dims")
    iv, jv = np.array([0, 1, 2, 1]), np.array([3, 0, 2, 1])
    for order in ("C", "F"):
        check([i, j, dims], pt.ravel_multi_index((i, j), dims, order=order), [iv, jv, np.array([3, 4])],
              "RavelMultiIndex")
    for mode in ("wrap", "clip"):
        check([i, j, dims], pt.ravel_multi_index((i, j), dims, mode=mode),
              [np.array([-1, 5, 2, 0]), np.array([9, -7, 0, 3]), np.array([3, 4])], "RavelMultiIndex")
    m = pt.lmatrix("m")
    check([m, j, dims], pt.ravel_multi_index((m, j), dims), [np.array([[0], [2]]), jv, np.array([3, 4])],
          "RavelMultiIndex")


@pytest.mark.covers("RavelMultiIndex")
def test_ravel_multi_index_bad_coordinates_fail_naming_the_node():
    i, j = pt.lvector("i"), pt.lvector("j")
    dims = pt.lvector("dims")
    f = pytensor.function([i, j, dims], pt.ravel_multi_index((i, j), dims), mode=STRICT)
    with pytest.raises(ValueError, match="RavelMultiIndex.*invalid entry"):
        f(np.array([0, 3]), np.array([0, 0]), np.array([3, 4]))
    with pytest.raises(ValueError, match="RavelMultiIndex.*dims has 3"):
        f(np.array([0]), np.array([0]), np.array([3, 4, 5]))


@pytest.mark.covers("UnravelIndex")
def test_unravel_index_orders_ranks_and_bounds():
    i = pt.lmatrix("i")
    dims = pt.constant(np.array([3, 4, 2]))
    v = rng.integers(0, 24, size=(2, 5))
    for order in ("C", "F"):
        check([i], list(pt.unravel_index(i, dims, order=order)), [v], "UnravelIndex")
    s = pt.iscalar("s")
    check([s], list(pt.unravel_index(s, dims)), [np.int32(17)], "UnravelIndex")
    f = pytensor.function([i], list(pt.unravel_index(i, dims)), mode=STRICT)
    with pytest.raises(ValueError, match="UnravelIndex.*out of range"):
        f(np.array([[0, 24]]))
    with pytest.raises(ValueError, match="UnravelIndex.*out of range"):
        f(np.array([[-1]]))


@pytest.mark.covers("Bartlett")
def test_bartlett_every_small_size():
    m = pt.lscalar("m")
    f = None
    for n in (-2, 0, 1, 2, 3, 7, 8, 51):
        f = check([m], extra_ops.bartlett(m), [np.int64(n)], "Bartlett")
    assert f is not None
