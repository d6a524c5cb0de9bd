"""The parts of nutpie's private API ember uses, the same on every tested version.

0.16.11 added `reparameterized_names`: a seventh value from `_make_functions`,
an argument of `_prepare_dims_and_coords` and a field of `CompiledModel`.
"""

TESTED_NUTPIE = ("0.16.8", "0.16.11")


def make_functions(model, **kwargs):
    """nutpie.compile_pymc._make_functions(model, **kwargs) as seven values:
    (n_dim, n_expanded, logp_fn, expand_fn, initial_point_fn, shape_info,
    reparameterized_names); the last is None where nutpie does not return it."""
    from nutpie.compile_pymc import _make_functions

    out = tuple(_make_functions(model, **kwargs))
    return out + (None,) if len(out) == 6 else out


def prepare_dims_and_coords(model, shape_info, reparameterized_names):
    from nutpie.compile_pymc import _prepare_dims_and_coords

    if reparameterized_names is None:
        return _prepare_dims_and_coords(model, shape_info)
    return _prepare_dims_and_coords(model, shape_info, reparameterized_names)


def compiled_model_kwargs(reparameterized_names):
    """Keyword arguments for a CompiledModel that only newer nutpie has."""
    return {} if reparameterized_names is None else {"reparameterized_names": reparameterized_names}
