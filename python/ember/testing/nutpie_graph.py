"""nutpie's logp+grad function for a PyMC model, built by nutpie itself.

nutpie's numba path (`_compile_pymc_model_numba`) calls the private
`nutpie.compile_pymc._make_functions(model, mode="NUMBA", compute_grad=True,
join_expanded=True, ...)`: logp is rewritten with canonicalize+stabilize,
differentiated, the gradients joined into one vector, and the value variables
replaced by slices of one flat input `_unconstrained_point`; then it is
compiled with `pymc.pytensorf.compile` in NUMBA mode. Calling the same
function gives exactly the graph nutpie runs (its `.maker.fgraph`). The API is
private, so the nutpie versions are pinned (python/requirements-*.txt) and
bridged by ember._nutpie_compat.
"""

from dataclasses import dataclass

import numpy as np

from .._nutpie_compat import TESTED_NUTPIE, make_functions


@dataclass
class NutpieLogp:
    fn: object  # compiled pytensor Function: flat point -> (logp, grad)
    n_dim: int
    names: list  # value variable names, in the flat vector's order
    slices: list
    shapes: list
    initial_point: object  # seed -> flat initial point (nutpie's jittered start)


def nutpie_logp(model, *, jitter=True):
    import nutpie
    from pymc.initial_point import make_initial_point_fn

    if nutpie.__version__ not in TESTED_NUTPIE:
        import warnings

        warnings.warn(f"nutpie {nutpie.__version__} untested (graph preparation is private API)")
    point_fn = make_initial_point_fn(
        model=model, default_strategy="support_point",
        jitter_rvs=set(model.free_RVs) if jitter else set(), return_transformed=True)
    n_dim, _, logp_fn, _, initial_point_fn, (names, slices, shapes), _ = make_functions(
        model, mode="NUMBA", compute_grad=True, join_expanded=True, pymc_initial_point_fn=point_fn)
    k = len(model.free_RVs)  # the rest describe the expand function's extra outputs
    return NutpieLogp(logp_fn, n_dim, list(names[:k]), list(slices[:k]), [tuple(s) for s in shapes[:k]],
                      lambda seed: np.asarray(initial_point_fn(seed), dtype="float64"))
