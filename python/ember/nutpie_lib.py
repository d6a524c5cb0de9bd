"""nutpie's compiled classes behind one interface for nutpie 0.16.8 and 0.16.11.

Only nutpie's Rust-side classes are used (`_lib.LogpFunc`, `_lib.ExpandFunc`,
`_lib.PyVariable`, `_lib.PyMcModel`, `_lib.PySampler`, `_lib.ProgressType`)
and the `CompiledModel` dataclass nutpie.sample accepts. Where the versions
differ it is by inspection, not by version number:

* `PySampler.from_pymc` takes (settings, cores, model, progress_type, store)
  in 0.16.8 and adds (extra_callback, extra_callback_rate) before store in
  0.16.11; `CompiledModel._make_sampler` gets the same extra arguments, which
  are passed through as they come.
* 0.16.11's CompiledModel has a `reparameterized_names` field (transformed
  values are moved out of the posterior) and gives a transformed value its
  RV's dims; 0.16.8 has neither.
"""

import dataclasses

TESTED_NUTPIE = ("0.16.8", "0.16.11")

try:
    from nutpie.sample import CompiledModel
except ImportError:  # nutpie missing: ember.nutpie still imports, compiling fails clearly
    CompiledModel = object


def has_reparameterized_names():
    return CompiledModel is not object and any(
        f.name == "reparameterized_names" for f in dataclasses.fields(CompiledModel))


def version():
    import nutpie

    return nutpie.__version__


def logp_func(address, user_data, keep_alive):
    from nutpie import _lib

    return _lib.LogpFunc(address, user_data, keep_alive)


def expand_func(n_dim, n_expanded, address, user_data, keep_alive):
    from nutpie import _lib

    return _lib.ExpandFunc(n_dim, n_expanded, address, user_data, keep_alive)


def pymc_model(logp_fn, expand_fn, names, shapes, n_dim, coords, dims, init_func, make_adapter):
    """_lib.PyMcModel over the two function pointers; coords maps names to pd.Index."""
    from nutpie import _lib

    dim_sizes = {name: len(vals) for name, vals in coords.items()}
    variables = _lib.PyVariable.new_variables(list(names), ["float64"] * len(names),
                                              [list(s) for s in shapes], dim_sizes, dict(dims))
    return _lib.PyMcModel(logp_fn, expand_fn, variables, n_dim, dim_sizes, coords, init_func, make_adapter)


def sampler(settings, cores, model, progress_type, extra):
    """_lib.PySampler.from_pymc with the arguments nutpie.sample passed after
    progress_type (store, or extra_callback, extra_callback_rate, store)."""
    from nutpie import _lib

    return _lib.PySampler.from_pymc(settings, cores, model, progress_type, *extra)


def template_progress(rate_ms, template, cores, callback):
    from nutpie import _lib

    return _lib.ProgressType.template_callback(rate_ms, template, cores, callback)


def transform_adapter(outer_kwargs):
    def make_adapter(*args, **kwargs):
        from nutpie.transform_adapter import make_transform_adapter

        return make_transform_adapter(**(outer_kwargs or {}))(*args, **kwargs, logp_fn=None)

    return make_adapter
