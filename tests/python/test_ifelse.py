"""IfElse runs natively and lazily: mode EMBER with the fallback off against
PyTensor's Python implementation, and an Assert on the branch not taken does
not fire (as on PyTensor's lazy VM)."""

import numpy as np
import pytest

from native_helpers import require_native

import pytensor
import pytensor.tensor as pt  # noqa: E402
from pytensor.ifelse import ifelse  # noqa: E402
from pytensor.raise_op import Assert  # noqa: E402

import ember  # noqa: E402

require_native()

PY = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
STRICT = ember.Mode(fallback=False)


@pytest.mark.covers("IfElse")
def test_ifelse_matches_pytensor_on_both_branches_with_its_gradient():
    x = pt.dvector("x")
    out = ifelse(pt.sum(x) > 0, pt.exp(x), -x) * 3
    outs = [out, pytensor.grad(pt.sum(out ** 2), x)]
    f = pytensor.function([x], outs, mode=STRICT)
    ref = pytensor.function([x], outs, mode=PY)
    for v in (np.array([0.5, 1.0, -0.25]), -np.ones(3)):
        for got, want in zip(f(v), ref(v), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.covers("IfElse")
def test_ifelse_of_several_outputs_of_other_lengths():
    x = pt.dvector("x")
    c = pt.bscalar("c")
    a, b = ifelse(c, [x[:2], pt.sum(x)], [x[1:] * 2, pt.prod(x)])
    f = pytensor.function([c, x], [a, b], mode=STRICT)
    ref = pytensor.function([c, x], [a, b], mode=PY)
    v = np.array([1.0, 2.0, 3.0, 4.0])
    for cond in (0, 1):
        for got, want in zip(f(cond, v), ref(cond, v), strict=True):
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)


@pytest.mark.covers("IfElse")
def test_the_branch_not_taken_does_not_run():
    x = pt.dvector("x")
    guarded = Assert("else branch ran")(pt.log(x), pt.all(x > 0))
    out = ifelse(pt.any(x <= 0), -x, guarded)
    f = pytensor.function([x], out, mode=STRICT)
    np.testing.assert_array_equal(f(np.array([-1.0, 2.0])), [1.0, -2.0])
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), np.log([1.0, 2.0]), rtol=1e-15)
    # The same graph, with laziness defeated by making the branch a graph output too.
    g = pytensor.function([x], [out, guarded], mode=STRICT)
    with pytest.raises(AssertionError, match="else branch ran"):
        g(np.array([-1.0, 2.0]))


@pytest.mark.covers("LazyIfElse")
def test_lazy_ifelse_of_pytensor_3_runs_as_a_lazy_ifelse():
    if int(pytensor.__version__.split(".")[0]) < 3:
        pytest.skip("LazyIfElse is PyTensor 3's")
    from pytensor.conditional.op import LazyIfElse as lazy
    from pytensor.graph.rewriting.utils import rewrite_graph

    x = pt.dvector("x")
    guarded = Assert("else branch ran")(pt.log(x), pt.all(x > 0))
    out = rewrite_graph(ifelse(pt.any(x <= 0), -x, guarded) * 2, include=("lazy_ifelse",))
    assert any(isinstance(n.op, lazy) for n in pytensor.graph.traversal.applys_between([x], [out]))
    f = pytensor.function([x], out, mode=STRICT)
    np.testing.assert_array_equal(f(np.array([-1.0, 2.0])), [2.0, -4.0])
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), 2 * np.log([1.0, 2.0]), rtol=1e-15)
