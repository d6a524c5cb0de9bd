"""nutpie backend: sample PyMC models with nutpie, running logp+gradient on Ember.

    compiled = ember.nutpie.compile_pymc_model(model)
    trace = nutpie.sample(compiled)
    logp, grad = compiled.logp(x); draw = compiled.expand(x); compiled.timings

The graphs come from PyMC's public API (ember/prepare.py: model.logp(),
value variables and transforms, Deterministics, coords and dims) and the
initial point from PyMC's initial-point expression evaluated on Ember
(ember/initial_point.py); nothing compiles C or numba code. The programs,
layout and initial-point plan are cached across processes
(ember/program_cache.py): on a hit no logp derivation, rewrite, gradient or
export runs. nutpie gets two C function pointers with its exact signatures
(ember_logp / ember_expand of include/ember/ember.h; user_data = the
ember_program handle), called from its chains' threads without the GIL.
Only nutpie's compiled classes are used, through ember/nutpie_lib.py.
"""

import dataclasses
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import nutpie_lib
from .nutpie_lib import TESTED_NUTPIE, CompiledModel  # noqa: F401
from .options import resolve_options

# How the logp+gradient graph is made (ember/prepare.py). "native": Ember
# differentiates model.logp() itself (its loader's differentiation pass);
# a graph with an op it cannot differentiate falls back, whole, to
# "stabilize": PyTensor's canonicalize, stabilize and gradient, the rest in
# Ember's loader. Native prepares 3-5x faster and its programs run at a
# median 1.0x of stabilize's (docs/benchmarks.md, bench/suite/prepare_ab.py).
DEFAULT_PREPARE = "native"


def _check_nutpie():
    v = nutpie_lib.version()
    if v not in TESTED_NUTPIE:
        warnings.warn(f"ember.nutpie is tested with nutpie {', '.join(TESTED_NUTPIE)}, found {v}",
                      stacklevel=3)


@dataclass(frozen=True)
class EmberCompiledModel(CompiledModel):
    """What nutpie.sample() accepts; backed by ember Programs."""

    logp_program: Any
    expand_program: Any
    initial_point_func: Callable
    shared_data: dict
    n_expanded: int
    shape_info: Any
    layout: Any  # ember.prepare.Layout
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

    def logp(self, x):
        """(logp, gradient) at the flat point x, on Ember."""
        logp, grad = self.logp_program(np.asarray(x, dtype="float64"))
        return float(logp), grad

    def expand(self, x):
        """The draw at the flat point x: name -> array (values, untransformed
        variables, Deterministics), on Ember."""
        (flat,) = self.expand_program(np.asarray(x, dtype="float64"))
        return {name: flat[a:b].reshape(shape)
                for name, (a, b), shape in zip(self.layout.names, self.layout.slices, self.layout.shapes)}

    def with_data(self, **updates):
        """A model with new values for shared data (pm.Data): each Program is
        re-created from its parsed graph and gets the new values (nothing is
        exported or rewritten again; the original model keeps its own)."""
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

    def _make_sampler(self, settings, init_mean, cores, progress_type, *extra):
        if self._progress is not None:
            template, callback, rate = self._progress
            progress_type = nutpie_lib.template_progress(rate, template, cores, callback)
        return nutpie_lib.sampler(settings, cores, self._make_model(init_mean), progress_type, extra)

    def _make_model(self, init_mean):
        from . import native

        expand_fn = nutpie_lib.expand_func(self.n_dim, self.n_expanded, native.expand_address,
                                           self.expand_program.nutpie_handle(), self)
        logp_fn = nutpie_lib.logp_func(native.logp_address, self.logp_program.nutpie_handle(), self)
        coords = self._coords.copy() if self._coords is not None else {}
        dims = self.dims.copy() if self.dims is not None else {}
        return nutpie_lib.pymc_model(logp_fn, expand_fn, self.shape_info[0], self.shape_info[2], self.n_dim,
                                     coords, dims, self.initial_point_func,
                                     nutpie_lib.transform_adapter(self._transform_adapt_args))


def compile_pymc_model(model, *, jit=None, jit_memory=None, parallel_threshold=None,
                       initial_points=None, jitter_rvs=None,
                       default_initialization_strategy="support_point", var_names=None,
                       freeze_model=False, prepare=None, cache=None, fallback=None, **kwargs):
    """Like nutpie.compile_pymc_model(model, backend="numba"), on Ember.

    jit / jit_memory / parallel_threshold are Ember's engine options
    (ember/options.py); prepare is "native", "stabilize" or "fast_run"
    (ember/prepare.py, default DEFAULT_PREPARE); cache=False skips the program cache (default:
    on unless EMBER_PROGRAM_CACHE=0); fallback=False makes ops without a
    native kernel an error instead of running them in Python (ember/fallback.py;
    unset: EMBER_FALLBACK, default on). Other keyword arguments are accepted for
    compatibility with nutpie's numba backend (numba.cfunc options) and ignored.
    """
    from . import native, program_cache
    from .initial_point import InitialPointPlan, flat_point_function
    from .prepare import Layout

    _check_nutpie()
    t_start = time.perf_counter()
    opts = resolve_options(jit=jit, jit_memory=jit_memory, parallel_threshold=parallel_threshold)
    prepare = prepare or DEFAULT_PREPARE
    if freeze_model:
        from pymc.model.transform.optimization import freeze_dims_and_data

        model = freeze_dims_and_data(model)
    if default_initialization_strategy == "support_point" and jitter_rvs is None:
        jitter_rvs = set(model.free_RVs)
    jitter_rvs = set(jitter_rvs or ())
    timings = {"cache_hit": False}

    key = entry = None
    use_cache = program_cache.enabled() if cache is None else bool(cache)
    if use_cache:
        t0 = time.perf_counter()
        options = {"prepare": prepare, "var_names": None if var_names is None else sorted(var_names),
                   "jitter": sorted(rv.name for rv in jitter_rvs), "strategy": default_initialization_strategy,
                   "initial_points": _describe_overrides(initial_points),
                   "reparameterized_dims": nutpie_lib.has_reparameterized_names()}
        key = program_cache.model_key(model, options)
        entry = program_cache.load(key) if key is not None else None
        timings["cache_key"] = time.perf_counter() - t0

    if entry is not None:
        timings["cache_hit"] = True
        layout = Layout.from_dict(entry.manifest["layout"])
        plan = InitialPointPlan.from_dict(entry.manifest["initial_point"], entry.graph, model)
        graphs = {name: (*entry.graph(name), None) for name in ("logp", "expand")}
    else:
        layout, plan, graphs, blobs = _prepare(model, opts, initial_points, jitter_rvs,
                                               default_initialization_strategy, var_names, prepare, timings,
                                               fallback)
        # A graph with fallback nodes holds Python callables: it is not cached.
        if key is not None and not any(g[2] for g in graphs.values()):
            t0 = time.perf_counter()
            manifest = {"layout": layout.to_dict(),
                        "initial_point": plan.to_dict(lambda name, g: _blob(blobs, name, g))}
            program_cache.store(key, manifest, blobs)
            timings["cache_store"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    programs = {name: g[3] if len(g) > 3 and g[3] is not None else
                native.Program.from_document(g[0], g[1], source=f"<nutpie {name}>", callbacks=g[2] or (), **opts)
                for name, g in graphs.items()}
    logp_program, expand_program = programs["logp"], programs["expand"]
    plan.load(**opts)
    timings["load"] = timings.get("load", 0.0) + time.perf_counter() - t0

    k = len(model.free_RVs)
    initial_point_func = flat_point_function(plan, layout.names[:k], layout.shapes[:k], threading.Lock())
    shared_data = _shared_data(model, logp_program, expand_program)
    coords = _coords_as_index(layout.coords)
    extra = {"reparameterized_names": list(layout.reparameterized_names)} \
        if nutpie_lib.has_reparameterized_names() else {}
    compiled = EmberCompiledModel(
        dims=dict(layout.dims), _coords=coords, _n_dim=layout.n_dim,
        _shapes={name: tuple(shape) for name, shape in zip(layout.names, layout.shapes)},
        logp_program=logp_program, expand_program=expand_program, initial_point_func=initial_point_func,
        shared_data=shared_data, n_expanded=layout.n_expanded, shape_info=layout.shape_info, layout=layout,
        timings=timings, **extra)

    t0 = time.perf_counter()
    compiled.logp(initial_point_func(0))
    timings["first_call"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    return compiled


def _prepare(model, opts, initial_points, jitter_rvs, strategy, var_names, prepare, timings, fallback=None):
    """Layout, initial-point plan, graphs (document, payload, fallback callbacks) and the graph
    files, from PyMC."""
    from .prepare import without_traces

    with without_traces():
        return _prepare_graphs(model, opts, initial_points, jitter_rvs, strategy, var_names, prepare, timings,
                               fallback)


def _prepare_graphs(model, opts, initial_points, jitter_rvs, strategy, var_names, prepare, timings, fallback):
    from pytensor.graph.fg import FunctionGraph

    from .export import UnsupportedGraphError, dumps, export_graph
    from .fallback import FallbackWarning, as_one_op, fallback_enabled, warn_fallback
    from .initial_point import InitialPointPlan
    from .nutpie_lib import has_reparameterized_names
    from .prepare import build_layout, expand_graph, logp_graph

    t0 = time.perf_counter()
    plan = InitialPointPlan.from_model(model, overrides=initial_points, jitter_rvs=jitter_rvs,
                                       default_strategy=strategy)
    plan.load(**opts)
    layout = build_layout(model, plan(0), var_names, dims_for_reparameterized=has_reparameterized_names())
    timings["initial_point"] = time.perf_counter() - t0

    blobs, graphs = {}, {}
    if prepare == "native":
        loaded = _native_logp(model, layout, opts, timings, fallback)
        if loaded is not None:
            blobs["logp"], graphs["logp"] = loaded
        else:
            prepare = "stabilize"
    if "logp" not in graphs:
        logp_g, t = logp_graph(model, layout, prepare)
        for k, v in t.items():
            timings[k] = timings.get(k, 0.0) + v
    t0 = time.perf_counter()
    expand_g = expand_graph(model, layout, "stabilize" if prepare == "native" else prepare)
    timings["rewrites"] += time.perf_counter() - t0

    t0 = time.perf_counter()
    todo = [("expand", expand_g, None)]
    if "logp" not in graphs:
        todo.insert(0, ("logp", logp_g, ["logp", "grad"]))
    for name, g, out_names in todo:
        callbacks = [] if fallback_enabled(fallback) else None
        try:
            doc, payload = export_graph(g, name=name, output_names=out_names, callbacks=callbacks)
        except UnsupportedGraphError as e:
            if callbacks is None or not isinstance(g, FunctionGraph):
                raise
            # Values no Ember variable holds between nodes: the graph runs whole on PyTensor.
            warnings.warn(f"ember: nutpie {name}: the whole graph runs on PyTensor's Python linker: {e}",
                          FallbackWarning, stacklevel=4)
            callbacks = []
            doc, payload = export_graph(as_one_op(g), name=name, output_names=out_names, callbacks=callbacks)
        if callbacks:
            warn_fallback(callbacks, graph=f"nutpie {name}", stacklevel=4)
        blobs[name] = dumps(doc, payload, binary=True)
        graphs[name] = (doc, payload, callbacks)
    timings["export"] = timings.get("export", 0.0) + time.perf_counter() - t0
    return layout, plan, graphs, blobs


def _native_logp(model, layout, opts, timings, fallback):
    """(blob, (doc, payload, None, program)) of model.logp() differentiated by
    Ember, or None when the graph needs an op Ember cannot differentiate, or
    one without a native kernel (then the reason is in timings["gradient_fallback"])."""
    from . import native
    from .export import UnsupportedGraphError, dumps, export_graph
    from .prepare import native_logp_graph

    graph, directive, t = native_logp_graph(model, layout)
    timings.update(t)
    t0 = time.perf_counter()
    try:
        doc, payload = export_graph(graph, name="logp", output_names=["logp"])
    except UnsupportedGraphError as e:  # ops without a native kernel: PyTensor's gradient and the fallback
        timings["gradient_fallback"] = str(e)
        return None
    doc["gradient"] = directive
    timings["export"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        program = native.Program.from_document(doc, payload, source="<nutpie logp>", **opts)
    except native.LoadError as e:  # "cannot differentiate ...", or any other refusal: PyTensor's path runs
        timings["gradient_fallback"] = str(e)
        return None
    timings["load"] = time.perf_counter() - t0
    timings["gradient_path"] = "ember"
    return dumps(doc, payload, binary=True), (doc, payload, None, program)


def _blob(blobs, name, graph):
    from .export import dumps

    doc, payload = graph
    blobs[name] = dumps(doc, payload, binary=True)
    return name


def _shared_data(model, *programs):
    """name -> read-only copy of each shared input's value (for with_data)."""
    out = {}
    names = {s["name"] for p in programs for s in p.shared}
    for name in sorted(names):
        try:
            var = model[name]
        except KeyError:
            continue
        arr = np.array(var.get_value(), order="C", copy=True)
        arr.flags.writeable = False
        out[name] = arr
    return out


def _coords_as_index(coords):
    import pandas as pd

    return {name: pd.Index(vals) for name, vals in coords.items()}


def _describe_overrides(initial_points):
    if not initial_points:
        return None
    out = {}
    for k, v in initial_points.items():
        name = k if isinstance(k, str) else getattr(k, "name", str(k))
        out[name] = np.asarray(v).tolist() if not isinstance(v, str) else v
    return out
