"""PyTensor backend: `pytensor.function(..., mode="EMBER")` runs on Ember.

EmberLinker is a JITLinker: the rewritten FunctionGraph is exported
(ember.export_graph) and loaded into an ember Program once, when the function
is compiled; each call passes the input storage (shared variables included,
as ordinary arguments) to the Program.

Ops Ember has no kernel for run through their own Python implementation
(ember/fallback.py) with a FallbackWarning; with fallback=False (or
EMBER_FALLBACK=0) compiling fails instead with one ember.UnsupportedGraphError
naming every unsupported op and where it occurs (see docs/python.md).
"""

import sys
import warnings
from copy import copy

import numpy as np
from pytensor.compile.mode import Mode as _PtMode
from pytensor.compile.mode import register_linker, register_mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.link.basic import JITLinker

from .export import UnsupportedGraphError, export_graph
from .fallback import FallbackWarning, fallback_enabled, warn_fallback
from .options import resolve_options

# Same exclusions as PyTensor's NUMBA mode, without its numba-only rewrites:
# C-only ops, BLAS ops (Gemv/Gemm/Ger), CAReduce-with-Composite fusion.
# local_usmm (sparse BLAS) is C-only too, but PyTensor 2.x does not tag it
# cxx_only, and its pattern reads config.blas__ldflags, which runs g++. It is
# named only once registered (PyTensor 2.x imports pytensor.sparse with
# pytensor): excluding an unknown name leaves an empty tag in PyTensor's
# rewrite database, and pytensor.sparse's later import then fails.
INCOMPATIBLE_REWRITES = ("cxx_only", "BlasOpt", "local_careduce_fusion", "scan_save_mem_prealloc") + \
    (("local_usmm",) if "pytensor.sparse" in sys.modules else ())


def _unshare(doc, fgraph):
    """Make shared inputs ordinary arguments: PyTensor passes their current
    value with every call, so the export's default values are dropped."""
    shared_vars = set()
    for k, entry in enumerate(doc["inputs"]):
        if entry.pop("shared", False):
            shared_vars.add(entry["var"])
            t = fgraph.inputs[k].type
            doc["variables"][entry["var"]]["shape"] = [None if d is None else int(d)
                                                       for d in getattr(t, "shape", ())]
    if shared_vars:
        doc["constants"] = [c for c in doc["constants"] if c["var"] not in shared_vars]
    return doc


def _destroyed_inputs(fgraph):
    """[(output, input, is the input returned)] for outputs an op computes in
    place of a function input (its destroy_map): PyTensor leaves that input
    array overwritten and returns it (or a copy of it). Ember computes into
    its own buffers, so a call copies such outputs back."""
    pos = {v: i for i, v in enumerate(fgraph.inputs)}
    found = []
    for k, v in enumerate(fgraph.outputs):
        copied = False
        while v.owner is not None and type(v.owner.op).__name__ in ("DeepCopyOp", "OutputGuard", "ViewOp"):
            copied |= type(v.owner.op).__name__ == "DeepCopyOp"
            v = v.owner.inputs[0]
        node = v.owner
        if node is None:
            continue
        destroyed = (getattr(node.op, "destroy_map", None) or {}).get(node.outputs.index(v))
        if destroyed and node.inputs[destroyed[0]] in pos:
            found.append((k, pos[node.inputs[destroyed[0]]], not copied))
    return found


class _PythonGraph:
    """A graph Ember cannot hold at all, run by PyTensor's PerformLinker."""

    def __init__(self, fgraph):
        self.fgraph = fgraph

    def function(self):
        from pytensor.link.basic import PerformLinker

        thunk, ins, outs = PerformLinker().accept(self.fgraph).make_thunk()

        def run(*inputs):
            for c, v in zip(ins, inputs):
                c.storage[0] = v
            thunk()
            return [np.array(c.storage[0]) if isinstance(c.storage[0], np.ndarray) else c.storage[0]
                    for c in outs]

        run.program = None
        return run


class EmberLinker(JITLinker):
    """Runs a whole FunctionGraph as one ember Program."""

    required_rewrites = ("minimum_compile",)
    incompatible_rewrites = INCOMPATIBLE_REWRITES

    def __init__(self, options=None, *, load=True, fallback=None, allow_gc=None, schedule=None):
        super().__init__(allow_gc=allow_gc, schedule=schedule)
        self.options = dict(options or {})
        self.load = load  # False: export only (ember.nutpie loads the graph itself)
        self.fallback = fallback  # None: EMBER_FALLBACK (default on)

    def accept(self, fgraph, no_recycling=None, profile=None):
        if self.fgraph is not None and self.fgraph is not fgraph:
            new = copy(self)
            new.fgraph = None
            return new.accept(fgraph, no_recycling, profile)
        return super().accept(fgraph, no_recycling, profile)

    def fgraph_convert(self, fgraph, order, input_storage, output_storage, storage_map, **kwargs):
        callbacks = [] if fallback_enabled(self.fallback) else None
        try:
            doc, payload = export_graph(fgraph, callbacks=callbacks)
        except UnsupportedGraphError as e:
            if callbacks is None:
                raise
            # Types no Ember variable can hold (complex, float16, ...) between
            # nodes: the whole graph runs on PyTensor's Python linker.
            warnings.warn(f"ember: the whole graph runs on PyTensor's Python linker: {e}", FallbackWarning,
                          stacklevel=2)
            return _PythonGraph(fgraph), fgraph
        doc = _unshare(doc, fgraph)
        if not self.load:
            return None, fgraph
        from .native import Program

        if callbacks:
            warn_fallback(callbacks, stacklevel=2)
        return Program.from_document(doc, payload, callbacks=callbacks or (), **self.options), fgraph

    def jit_compile(self, converted):
        from pytensor.scalar.basic import ScalarType

        program, fgraph = converted
        if isinstance(program, _PythonGraph):
            return program.function()
        if program is None:
            def not_loaded(*inputs):
                raise RuntimeError("this function was compiled for export only (EmberLinker(load=False))")
            return not_loaded
        from .native import CallError, translate_call_error

        core = program._p
        dtypes = [np.dtype(a["dtype"]) for a in core.args]
        scalar_out = [isinstance(v.type, ScalarType) for v in fgraph.outputs]

        in_place = _destroyed_inputs(fgraph)
        raised_by = {str(n.op.msg): n.op.exc_type for n in fgraph.apply_nodes
                     if isinstance(getattr(n.op, "exc_type", None), type) and hasattr(n.op, "msg")}

        python_run = []  # PyTensor's Python implementation, made on first need

        def run(*inputs):
            if any(x is None for x in inputs):
                # None is a value PyTensor's ops may test for (pt.default); no
                # Ember buffer holds it, so such a call runs the Python graph.
                if not python_run:
                    python_run.append(_PythonGraph(fgraph).function())
                return python_run[0](*inputs)
            try:
                outs = core(*[np.asarray(x, dtype=dt) for x, dt in zip(inputs, dtypes)])
            except CallError as e:
                raise translate_call_error(e, raised_by) from None
            for k, i, same in in_place:
                a = inputs[i]
                if isinstance(a, np.ndarray) and a.shape == outs[k].shape and a.flags.writeable:
                    np.copyto(a, outs[k], casting="unsafe")
                    if same:
                        outs[k] = a
            if any(scalar_out):
                outs = [o[()] if s else o for o, s in zip(outs, scalar_out)]
            return outs

        run.program = program
        return run

    def create_thunk_inputs(self, storage_map):
        return [storage_map[n] for n in self.fgraph.inputs]


class Mode(_PtMode):
    """A PyTensor Mode running on Ember with the given engine options
    (unset ones from EMBER_JIT / EMBER_JIT_MEMORY) and PyTensor's fast_run
    rewrites unless `optimizer` says otherwise. fallback=False makes ops
    without a native kernel an error instead of running them in Python
    (unset: EMBER_FALLBACK, default on)."""

    def __init__(self, jit=None, jit_memory=None, parallel_threshold=None, *, optimizer=None,
                 linker=None, db=None, fallback=None):
        # PyTensor's clone/including/excluding rebuild a mode as type(self)(linker=..., optimizer=...).
        if linker is None:
            linker = EmberLinker(resolve_options(jit=jit, jit_memory=jit_memory,
                                                 parallel_threshold=parallel_threshold), fallback=fallback)
        elif jit is not None or jit_memory is not None or parallel_threshold is not None or fallback is not None:
            raise TypeError("ember.Mode: give engine options or a linker, not both")
        if optimizer is None:
            optimizer = RewriteDatabaseQuery(include=["fast_run"])
        super().__init__(linker=linker, optimizer=optimizer, db=db)


EMBER = Mode()


def _register():
    from pytensor.compile import mode as _mode

    if "ember" not in _mode.predefined_linkers:
        register_linker("ember", EmberLinker())
    if "EMBER" not in _mode.predefined_modes:
        register_mode("EMBER", EMBER)


_register()
