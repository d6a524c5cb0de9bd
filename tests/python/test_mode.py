"""pytensor.function(..., mode="EMBER") against PyTensor's Python implementations."""

import os
import subprocess
import sys

import numpy as np
import pytest

from native_helpers import ROOT, reference_mode, require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402

import ember  # noqa: E402  (registers the mode)

require_native()


REFERENCE = reference_mode()


def both(inputs, outputs, args, **kw):
    f_ref = pytensor.function(inputs, outputs, mode=REFERENCE, **kw)
    f_em = pytensor.function(inputs, outputs, mode="EMBER", **kw)
    return f_em(*args), f_ref(*args), f_em


def check(inputs, outputs, args, rtol=1e-13, **kw):
    got, want, f = both(inputs, outputs, args, **kw)
    if not isinstance(got, list):
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):
        assert type(g) is type(w), (type(g), type(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0)
    return f


def test_mode_is_registered_by_import():
    from pytensor.compile.mode import get_mode

    assert get_mode("EMBER") is ember.EMBER
    assert get_mode("ember") is ember.EMBER
    assert isinstance(ember.EMBER.linker, ember.EmberLinker)


def test_ember_rewrites_leave_pytensor_sparse_importable():
    # A fresh process: whether pytensor.sparse is imported yet is what matters.
    code = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, pytensor, pytensor.tensor as pt
import ember
x = pt.dvector("x")
f = pytensor.function([x], pt.sum(x ** 2) + pt.sum(pt.exp(x)), mode=ember.Mode())
assert np.isclose(f(np.zeros(3)), 3.0)
import pytensor.sparse
from pytensor.compile.mode import optdb
print(optdb.query("+specialize") is not None)
"""
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "python")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("True")


@pytest.mark.covers("Elemwise", "Composite", "Add", "Mul", "Sub", "Exp", "Log1p", "Switch", "Sigmoid", "Sqr", "GT", "Neg")
def test_elemwise_broadcasting_and_fusion():
    x, y = pt.dmatrix("x"), pt.dvector("y")
    rng = np.random.default_rng(0)
    out = pt.exp(x) * pt.log1p(y ** 2) - pt.switch(x > 0.5, x, -y) + pt.sigmoid(x * y)
    check([x, y], out, [rng.random((3, 4)), rng.random(4)])


@pytest.mark.covers("Cast", "IntDiv", "Mod", "EQ")
def test_mixed_dtypes_and_integer_ops():
    a, b = pt.lvector("a"), pt.ivector("b")
    out = [a * b + 3, a // 2, (a % 3).astype("int8"), pt.eq(a, b), a.astype("float32") / 2]
    check([a, b], out, [np.array([1, -5, 7, 10]), np.array([2, 3, -4, 5], dtype="int32")])


@pytest.mark.covers("CAReduce", "Sum", "Max", "Prod", "All", "Log", "Exp")
def test_reductions():
    x = pt.dtensor3("x")
    rng = np.random.default_rng(1)
    out = [x.sum(), x.sum(axis=1), x.max(axis=(0, 2)), x.prod(axis=0), x.mean(axis=-1),
           pt.all(x > 0.1, axis=2), pt.logsumexp(x, axis=1)]
    check([x], out, [rng.random((2, 3, 4))], rtol=1e-12)


@pytest.mark.covers("Subtensor", "IncSubtensor", "AdvancedSubtensor", "AdvancedIncSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor1")
def test_indexing_basic_advanced_and_inc():
    x, i = pt.dmatrix("x"), pt.lvector("i")
    out = [x[1], x[:, ::-2], x[i], x[i, 1:], pt.inc_subtensor(x[i, 0], 1.0), pt.set_subtensor(x[1:, 2], 0.0),
           x[x > 0.5], x[-1, -1]]
    rng = np.random.default_rng(2)
    check([x, i], out, [rng.random((4, 5)), np.array([0, 3, 3, 1])])


@pytest.mark.covers("Reshape", "Shape", "Shape_i", "Join", "Split", "DimShuffle", "MakeVector", "Alloc", "SpecifyShape")
def test_shape_ops_and_join():
    x = pt.dmatrix("x")
    out = [x.T, x.reshape((-1,)), pt.concatenate([x, 2 * x], axis=1), x.shape[0] * x, pt.stack([x[0], x[1]]),
           x.dimshuffle(1, "x", 0)]
    check([x], out, [np.arange(6.0).reshape(2, 3)])


def test_shared_variables_follow_set_value():
    w = pytensor.shared(np.array([1.0, 2.0, 3.0]), name="w")
    x = pt.dvector("x")
    f = pytensor.function([x], (x * w).sum(), mode="EMBER")
    assert f(np.ones(3)) == 6.0
    w.set_value(np.array([10.0, 20.0, 30.0, 40.0]))  # new value, new length
    assert f(np.ones(4)) == 100.0


def test_scalar_outputs_are_0d_arrays_and_gradients():
    x = pt.dvector("x")
    cost = (pt.exp(x) * x).sum()
    f = check([x], [cost, pytensor.grad(cost, x)], [np.array([0.1, -0.4, 2.0])])
    out = f(np.array([1.0]))
    assert isinstance(out[0], np.ndarray) and out[0].ndim == 0


def test_64_bit_integer_outputs_are_numpys_own_int64_and_uint64():
    x, u = pt.lvector("x"), pt.vector("u", dtype="uint64")
    f = pytensor.function([x, u], [x * 2, x.sum(), u * u], mode=ember.Mode())
    vec, total, unsigned = f(np.arange(3), np.arange(3, dtype="uint64"))
    assert vec.dtype.type is np.int64 and type(total[()]) is np.int64 and type(vec[0]) is np.int64
    assert unsigned.dtype.type is np.uint64


def test_a_split_by_a_negative_constant_compiles_and_fails_when_called():
    m = pytensor.shared(np.ones((4, 6)))
    f = pytensor.function([], pt.split(m, [5, -1], n_splits=2, axis=0), mode=ember.Mode())
    with pytest.raises(ValueError, match="Split"):
        f()


def test_squeezing_an_axis_of_unknown_length_is_checked_when_called():
    x = pt.dvector("x")
    f = pytensor.function([x], pt.squeeze(x, 0), mode=ember.Mode())
    assert f(np.array([4.0])) == 4.0
    with pytest.raises(ValueError, match="DimShuffle drops axis 0 of length 3"):
        f(np.zeros(3))


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "int16"])
def test_an_increment_of_another_dtype_is_cast_to_the_incremented_ones(dtype):
    x, i = pt.vector(dtype=dtype), pt.lvector()
    f = pytensor.function([x, i], [pt.bincount(x), pt.inc_subtensor(x[i], np.int8(-1))], mode=ember.Mode())
    v = np.array([0, 3, 3, 1, 5], dtype=dtype)
    counts, dec = f(v, np.array([1, 1, 4]))
    assert counts.tolist() == np.bincount(v).tolist() and dec.dtype == v.dtype
    assert dec.tolist() == [0, 1, 3, 1, 4]


def test_a_none_input_runs_as_pytensor_runs_it():
    default = getattr(pytensor.tensor.basic, "default", None)
    if default is None:
        pytest.skip("PyTensor 3 has no pt.default, the op that takes None")
    x, y = pt.dscalar("x"), pt.dscalar("y")
    f = pytensor.function([x, y], default(x, y) * 2, mode=ember.Mode())
    assert f(1.0, 2.0) == 2.0 and f(None, 2.0) == 4.0 and f(1.0, None) == 2.0


def test_scalar_type_functions():
    import pytensor.scalar as ps

    a, b = ps.float64("a"), ps.float64("b")
    check([a, b], [a * b + ps.exp(a)], [0.5, 2.0])


def test_an_in_place_op_on_a_mutable_input_leaves_it_overwritten_as_pytensor_does():
    from pytensor.compile.io import In
    from pytensor.scalar.basic import xor
    from pytensor.tensor.elemwise import Elemwise

    x, y = pt.vector(dtype="int8"), pt.vector(dtype="int8")
    out = Elemwise(xor, {0: 0})(x, y)
    b = np.array([0, 1, 0, 1], dtype="int8")
    f = pytensor.function([In(x, mutable=True), y], out, mode=ember.Mode(), accept_inplace=True)
    a = np.array([0, 0, 1, 1], dtype="int8")
    assert f(a, b) is a and a.tolist() == [0, 1, 1, 0]  # the input itself, overwritten
    # Fused with a second output, the Composite overwrites x with x ^ y + 1.
    seen = []
    for mode in (ember.Mode(), pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")):
        f = pytensor.function([In(x, mutable=True), y], [out, out + 1], mode=mode, accept_inplace=True)
        a = np.array([0, 0, 1, 1], dtype="int8")
        seen.append([v.tolist() for v in (a, *f(a, b))])
    assert seen[0] == seen[1]


def test_unsupported_ops_fail_in_strict_mode_with_one_error_naming_each():
    from pytensor.tensor.signal import convolve1d

    x = pt.dvector("x")
    with pytest.raises(ember.UnsupportedGraphError) as e:
        pytensor.function([x], [convolve1d(x, x), pt.unique(x.reshape((2, -1)), axis=0)],
                          mode=ember.Mode(fallback=False))
    assert "Convolve1d" in str(e.value) and "Unique" in str(e.value)


@pytest.mark.covers("SpecifyShape", "CheckAndRaise")
def test_runtime_errors_surface_as_python_exceptions():
    x = pt.dvector("x")
    f = pytensor.function([x], pt.specify_shape(x, (3,)) * 2, mode="EMBER")
    with pytest.raises(AssertionError, match="SpecifyShape"):
        f(np.ones(4))
    g = pytensor.function([x], x.reshape((2, -1)), mode="EMBER")
    with pytest.raises(ValueError, match="reshape"):
        g(np.ones(5))
    i = pt.lscalar("i")
    h = pytensor.function([x, i], x[i], mode="EMBER")
    with pytest.raises(IndexError):
        h(np.ones(3), 7)
    with pytest.raises(ember.CallError):  # all of them are CallErrors
        h(np.ones(3), 7)


def test_mode_is_a_pytensor_mode_that_survives_including_and_clone():
    from pytensor.compile.mode import Mode as PtMode

    mode = ember.Mode(jit="off")
    assert isinstance(mode, PtMode) and isinstance(ember.EMBER, ember.Mode)
    for derived in (mode.including("fast_run"), mode.excluding("fusion"), mode.clone()):
        assert isinstance(derived, ember.Mode) and isinstance(derived.linker, ember.EmberLinker)
        assert derived.linker.options == {"jit": "off"}
    x = pt.dvector("x")
    f = pytensor.function([x], pt.exp(x) + 1, mode=mode.excluding("fusion"))
    np.testing.assert_array_equal(f(np.zeros(2)), [2.0, 2.0])


def test_mode_options_are_forwarded():
    mode = ember.Mode(jit="auto", jit_memory="256M")
    x = pt.dvector("x")
    f = pytensor.function([x], x + 1, mode=mode)
    assert f.vm.jit_fn.program.options["jit_memory"] == 256 << 20
    np.testing.assert_array_equal(f(np.zeros(2)), [1.0, 1.0])
