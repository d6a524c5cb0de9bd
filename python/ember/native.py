"""The native engine (ember._core) and the options it is loaded with.

`ember._core` is built by `pip install .` at the repository root. For a
development build (`cmake -DEMBER_BUILD_PYTHON=ON`), point EMBER_NATIVE_DIR at
`<build>/python/ember` (the directory holding `_core*.so`).

Engine options: see ember/options.py.
"""

import json
import os

import numpy as np

from ._built import import_built
from .options import parse_memory, resolve_options  # noqa: F401

def _load_core():
    return import_built(
        "_core",
        "ember's native module is missing: run `pip install .` at the repository root, or set "
        "EMBER_NATIVE_DIR to <build>/python/ember of a CMake build with -DEMBER_BUILD_PYTHON=ON")


_core = _load_core()
CallError = _core.CallError
LoadError = _core.LoadError


# A failed call raises the Python exception PyTensor's own backends raise
# for the same fault, still a CallError: assertions (SpecifyShape,
# CheckAndRaise/Assert) -> AssertionError, out-of-bounds indices and
# mismatched boolean masks -> IndexError (as NumPy), other shape/value faults -> ValueError.
class CallAssertionError(CallError, AssertionError):
    pass


class CallIndexError(CallError, IndexError):
    pass


class CallValueError(CallError, ValueError):
    pass


class CallLinAlgError(CallError, np.linalg.LinAlgError):
    pass


_ASSERT_OPS = ("(SpecifyShape)", "(CheckAndRaise)", "(Assert)")
# What the linear-algebra kernels report where NumPy/SciPy raise LinAlgError.
_LINALG_FAULTS = ("matrix is singular", "singular matrix", "not positive definite", "did not converge")
_RAISED_AS = {}  # exception class -> its CallError subclass


def _call_error_as(exc_type):
    """A CallError that is also exc_type, or None where the two cannot be combined."""
    if exc_type not in _RAISED_AS:
        try:
            _RAISED_AS[exc_type] = type(f"Call{exc_type.__name__}", (CallError, exc_type), {})
        except TypeError:  # e.g. an exception class with another instance layout
            _RAISED_AS[exc_type] = None
    return _RAISED_AS[exc_type]


def translate_call_error(e, raised_by=None):
    """raised_by: {a CheckAndRaise's message: the exception type its op raises}."""
    from .fallback import take_error

    orig = take_error(e)  # a fallback node's own exception, as PyTensor would raise it
    if orig is not None:
        return orig
    msg = str(e)
    if "(CheckAndRaise)" in msg and raised_by:
        exc = next((t for text, t in raised_by.items() if text and text in msg), None)
        cls = _call_error_as(exc) if isinstance(exc, type) and exc is not AssertionError else None
        if cls is not None:
            return cls(msg)
    if any(op in msg for op in _ASSERT_OPS):
        return CallAssertionError(msg)
    if any(f in msg for f in _LINALG_FAULTS):
        return CallLinAlgError(msg)
    if "out of bounds" in msg or "boolean index did not match" in msg:
        return CallIndexError(msg)
    return CallValueError(msg)
logp_address = _core.logp_address
expand_address = _core.expand_address
jit_available = _core.jit_available


class Program:
    """A loaded graph. Call it with arrays (converted to the declared dtypes;
    inputs are not copied when they already have that dtype); it returns a
    list of NumPy arrays, 0-d for scalars. Safe to call from many threads."""

    def __init__(self, core_program, callbacks=()):
        self._p = core_program
        self._arg_dtypes = [np.dtype(a["dtype"]) for a in core_program.args]
        self.callbacks = list(callbacks)  # the PythonCallback nodes' callables (ember.fallback)

    @classmethod
    def load(cls, path, *, callbacks=(), **options):
        return cls(_core.Program.load(os.fspath(path), resolve_options(**options), list(callbacks)),
                   callbacks)

    @classmethod
    def from_document(cls, doc, payload=b"", *, source="<memory>", callbacks=(), **options):
        """callbacks: the callables of the document's PythonCallback nodes, by
        their `callback` number (export_graph(..., callbacks=list) fills it)."""
        text = doc if isinstance(doc, str) else json.dumps(doc, separators=(",", ":"), allow_nan=False)
        return cls(_core.Program.from_json(text, bytes(payload), resolve_options(**options), source,
                                           list(callbacks)), callbacks)

    def __call__(self, *args):
        if len(args) != len(self._arg_dtypes):
            raise TypeError(f"{self._p.source}: expected {len(self._arg_dtypes)} arguments, got {len(args)}")
        arrays = [np.asarray(a, dtype=dt) for a, dt in zip(args, self._arg_dtypes)]
        try:
            return self._p(*arrays)
        except CallError as e:
            raise translate_call_error(e) from None

    def set_shared(self, name, value):
        info = {s["name"]: s for s in self._p.shared}
        if name not in info:
            raise KeyError(f"{self._p.source}: no shared input named {name!r}")
        self._p.set_shared(name, np.asarray(value, dtype=info[name]["dtype"]))

    def clone(self):
        """A new Program from the same parsed graph (own shared values, no re-export)."""
        return Program(self._p.clone(), self.callbacks)

    def nutpie_handle(self):
        """user_data for logp_address / expand_address (valid while self lives)."""
        return self._p.nutpie_handle()

    def nutpie_calls(self):
        """How many times the logp entry point ran on this Program's handle."""
        return self._p.nutpie_calls()

    args = property(lambda self: self._p.args)
    shared = property(lambda self: self._p.shared)
    outputs = property(lambda self: self._p.outputs)
    options = property(lambda self: self._p.options)
    num_nodes = property(lambda self: self._p.num_nodes)

    def __repr__(self):
        return f"<ember.Program {self._p.source}: {len(self.args)} args, {len(self.outputs)} outputs>"


def load(path, **options):
    return Program.load(path, **options)


def compile_function(fn_or_fgraph, *, fallback=None, **options):
    """Export a compiled pytensor Function (or FunctionGraph) and load it
    (fallback: ember.fallback; default EMBER_FALLBACK, on)."""
    from .export import export_graph
    from .fallback import fallback_enabled, warn_fallback

    callbacks = [] if fallback_enabled(fallback) else None
    doc, payload = export_graph(fn_or_fgraph, callbacks=callbacks)
    if callbacks:
        warn_fallback(callbacks)
    return Program.from_document(doc, payload, callbacks=callbacks or (), **options)


def jit_stats():
    """The compile service's counters: budget_bytes, peak_bytes,
    resident_code_bytes, compiles, ..., per tier "skipped_budget", "notes"
    (a tier the budget cannot hold) and per-Composite "tier" (0 = interpreter)."""
    return json.loads(_core.jit_stats())


def last_error():
    """The last error of the calling thread's logp/expand call (C ABI)."""
    return _core.last_error()
