"""nutpie backend: sample PyMC models with nutpie, running logp+gradient on Ember.

`compile_pymc_model(model, **kwargs)` prepares the graphs exactly as nutpie's
numba backend does (nutpie's own private `_make_functions`: canonicalize +
stabilize, gradient joined into one vector, one flat `_unconstrained_point`
input) but compiles them in an export-only Ember mode, loads them into ember
Programs and hands nutpie two C function pointers with its exact signatures
(ember_logp / ember_expand of include/ember/ember.h; user_data = the ember_program handle).
nutpie's chains call them from their own threads without the GIL; nothing in
that path touches Python.

The glue uses nutpie's private API (`compile_pymc._make_functions`,
`_lib.LogpFunc`, `_lib.ExpandFunc`, `_lib.PyMcModel`, `CompiledModel`): the
tested versions are listed (TESTED_NUTPIE; ember/_nutpie_compat.py bridges
their differences) and checked by tests/python.
"""

import dataclasses
import threading
import time
import warnings
from dataclasses import dataclass
from functools import wraps
from typing import Any, Callable

import numpy as np

from ._nutpie_compat import TESTED_NUTPIE, compiled_model_kwargs, make_functions, prepare_dims_and_coords
from .options import resolve_options

try:
    from nutpie.sample import CompiledModel
except ImportError:  # nutpie missing: the module still imports, compiling fails clearly
    CompiledModel = object


def _check_nutpie():
    import nutpie

    if nutpie.__version__ not in TESTED_NUTPIE:
        warnings.warn(f"ember.nutpie is tested with nutpie {', '.join(TESTED_NUTPIE)}, "
                      f"found {nutpie.__version__} (it uses nutpie's private API)", stacklevel=3)


@dataclass(frozen=True)
class EmberCompiledModel(CompiledModel):
    """What nutpie.sample() accepts; backed by two ember Programs."""

    logp_program: Any
    expand_program: Any
    initial_point_func: Callable
    shared_data: dict
    n_expanded: int
    shape_info: Any
    logp_func: Any  # the export-only pytensor Functions (for inspection)
    expand_func: Any
    timings: dict
    _n_dim: int
    _shapes: dict
    _coords: Any
    _transform_adapt_args: dict | None = None
    _progress: Any = None  # (template, callback, rate_ms): see with_progress


    @property
    def n_dim(self):
        return self._n_dim

    @property
    def shapes(self):
        return self._shapes

    @property
    def coords(self):
        return self._coords

    def with_data(self, **updates):
        """A model with new values for shared data (pm.Data): the graphs are
        not exported or rewritten again; each Program is re-created from its
        parsed graph and gets the new values (the original model keeps its own)."""
        shared_data = dict(self.shared_data)
        for name, new_val in updates.items():
            if name not in shared_data:
                raise KeyError(f"Unknown shared variable: {name}")
            old_val = shared_data[name]
            new_val = np.array(new_val, dtype=old_val.dtype, order="C", copy=True)
            if old_val.ndim != new_val.ndim:
                raise ValueError(f"Shared variable {name} must have rank {old_val.ndim}")
            new_val.flags.writeable = False
            shared_data[name] = new_val
        progs = []
        for prog in (self.logp_program, self.expand_program):
            new = prog.clone()
            names = {s["name"] for s in new.shared}
            for name, val in shared_data.items():
                if name in names:
                    new.set_shared(name, val)
            progs.append(new)
        return dataclasses.replace(self, shared_data=shared_data, logp_program=progs[0],
                                   expand_program=progs[1])

    def with_transform_adapt(self, **kwargs):
        return dataclasses.replace(self, _transform_adapt_args=kwargs)

    def with_progress(self, template, callback, rate_ms=200):
        """Report progress through callback(text) with nutpie's template
        renderer (the variables of nutpie.sample's HTML template), in any
        terminal; ember's demo uses it for its one-line status."""
        return dataclasses.replace(self, _progress=(template, callback, rate_ms))

    def _make_sampler(self, settings, init_mean, cores, progress_type, *rest):
        # rest: (store,), or from nutpie 0.16.11 (extra_callback, extra_callback_rate, store)
        from nutpie import _lib

        if self._progress is not None:
            template, callback, rate = self._progress
            progress_type = _lib.ProgressType.template_callback(rate, template, cores, callback)
        model = self._make_model(init_mean)
        return _lib.PySampler.from_pymc(settings, cores, model, progress_type, *rest)

    def _make_model(self, init_mean):
        from nutpie import _lib

        from . import native

        expand_fn = _lib.ExpandFunc(self.n_dim, self.n_expanded, native.expand_address,
                                    self.expand_program.nutpie_handle(), self)
        logp_fn = _lib.LogpFunc(native.logp_address, self.logp_program.nutpie_handle(), self)
        var_names = self.shape_info[0]
        coords = self._coords.copy() if self._coords is not None else {}
        dim_sizes = {name: len(vals) for name, vals in coords.items()}
        dims = self.dims.copy() if self.dims is not None else {}
        variables = _lib.PyVariable.new_variables(var_names, ["float64"] * len(var_names),
                                                  self.shape_info[2], dim_sizes, dims)
        outer_kwargs = self._transform_adapt_args or {}

        def make_adapter(*args, **kwargs):
            from nutpie.transform_adapter import make_transform_adapter

            return make_transform_adapter(**outer_kwargs)(*args, **kwargs, logp_fn=None)

        return _lib.PyMcModel(logp_fn, expand_fn, variables, self.n_dim, dim_sizes, coords,
                              self.initial_point_func, make_adapter)


def _wrap_with_lock(func):
    lock = threading.Lock()

    @wraps(func)
    def wrapper(*args, **kwargs):
        with lock:
            return func(*args, **kwargs)

    return wrapper


def _load_nutpie_graph(fn, name, fallback, opts, **names):
    """Export one of nutpie's functions and load it, with fallback nodes if allowed."""
    from . import native
    from .export import export_graph
    from .fallback import fallback_enabled, warn_fallback

    callbacks = [] if fallback_enabled(fallback) else None
    doc, payload = export_graph(fn, name=name, callbacks=callbacks, **names)
    if callbacks:
        warn_fallback(callbacks, graph=f"nutpie {name}", stacklevel=4)
    return native.Program.from_document(doc, payload, source=f"<nutpie {name}>",
                                        callbacks=callbacks or (), **opts)


def compile_pymc_model(model, *, jit=None, jit_memory=None, parallel_threshold=None,
                       initial_points=None, jitter_rvs=None,
                       default_initialization_strategy="support_point", var_names=None,
                       freeze_model=False, fallback=None, **kwargs):
    """Like nutpie.compile_pymc_model(model, backend="numba"), on Ember.

    jit / jit_memory / parallel_threshold are Ember's engine options
    (ember/options.py). fallback=False makes ops without a native kernel an
    error instead of running them in Python (ember/fallback.py; unset:
    EMBER_FALLBACK, default on). Other keyword arguments are accepted for
    compatibility with nutpie's numba backend (numba.cfunc options) and ignored.
    """
    from pymc.initial_point import make_initial_point_fn
    from pymc.model.transform.optimization import freeze_dims_and_data
    from pytensor.compile.mode import Mode as PtMode
    from pytensor.graph.rewriting.db import RewriteDatabaseQuery

    from .linker import EmberLinker

    _check_nutpie()
    t0 = time.perf_counter()
    opts = resolve_options(jit=jit, jit_memory=jit_memory, parallel_threshold=parallel_threshold)
    if freeze_model:
        model = freeze_dims_and_data(model)
    if default_initialization_strategy == "support_point" and jitter_rvs is None:
        jitter_rvs = set(model.free_RVs)
    point_fn = make_initial_point_fn(model=model, overrides=initial_points,
                                     default_strategy=default_initialization_strategy,
                                     jitter_rvs=jitter_rvs, return_transformed=True)
    point_fn = _wrap_with_lock(point_fn)

    # Export-only mode: PyTensor rewrites the graph for Ember (no C/numba code
    # is generated), the Programs are loaded below with shared data marked.
    mode = PtMode(EmberLinker(opts, load=False, fallback=fallback), RewriteDatabaseQuery(include=["fast_run"]))
    (n_dim, n_expanded, logp_fn_pt, expand_fn_pt, initial_point_fn, shape_info,
     reparameterized_names) = make_functions(
        model, mode=mode, compute_grad=True, join_expanded=True, pymc_initial_point_fn=point_fn,
        var_names=var_names)
    t1 = time.perf_counter()

    shared_data = {}
    seen = set()
    for val in [*logp_fn_pt.get_shared(), *expand_fn_pt.get_shared()]:
        if val.name in shared_data and val not in seen:
            raise ValueError(f"Shared variables must have unique names: {val.name}")
        arr = np.array(val.get_value(), order="C", copy=True)
        arr.flags.writeable = False
        shared_data[val.name] = arr
        seen.add(val)

    logp_program = _load_nutpie_graph(logp_fn_pt, "logp", fallback, opts, output_names=["logp", "grad"])
    expand_program = _load_nutpie_graph(expand_fn_pt, "expand", fallback, opts)
    t2 = time.perf_counter()

    dims, coords = prepare_dims_and_coords(model, shape_info, reparameterized_names)
    return EmberCompiledModel(
        dims=dims, _coords=coords, _n_dim=n_dim,
        _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info)},
        logp_program=logp_program, expand_program=expand_program,
        initial_point_func=initial_point_fn, shared_data=shared_data, n_expanded=n_expanded,
        shape_info=shape_info, logp_func=logp_fn_pt, expand_func=expand_fn_pt,
        timings={"pytensor": t1 - t0, "export_and_load": t2 - t1, "total": t2 - t0},
        **compiled_model_kwargs(reparameterized_names))
