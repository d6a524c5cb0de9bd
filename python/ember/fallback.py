"""The Python fallback: PyTensor ops Ember has no kernel for run as
`PythonCallback` nodes (docs/graph-format.md) through the op's own Python
implementation (`op.make_thunk(..., impl="py")`, i.e. `perform`).

The engine calls a callback with read-only NumPy views of the node's inputs
and copies what it returns into its own buffers, checking dtype and shape.
The callback takes the GIL (engine threads, nutpie's chains included, call
without it) and a lock per op, because an op's Python state (e.g. Scan's
inner function and its storage) is not re-entrant and NumPy may release the
GIL inside it. Everything else in the graph stays native and parallel.

`fallback=False` (ember.Mode, ember.nutpie) or EMBER_FALLBACK=0 turns this
off: unsupported ops are then one UnsupportedGraphError listing them all.
"""

import os
import threading
import warnings
import weakref
from contextlib import contextmanager

import numpy as np


class FallbackWarning(UserWarning):
    """Some ops of a graph run through PyTensor's Python implementation."""


_FALSE = ("0", "false", "off", "no")
_TRUE = ("1", "true", "on", "yes")


_inner_lock = threading.RLock()


@contextmanager
def python_inner_functions():
    """PyTensor 3 links the inner functions of Scan and OpFromGraph with its
    shared "vm"/"cvm" linkers, whatever the outer mode: with g++ on the machine
    they compile C thunks (24 g++ runs for an LKJ prior's draw; 44 s for a
    fallback Kalman-filter Scan), and the VM imports its C loop, which builds
    it. Their C thunks and the compiler are off meanwhile (global state: one
    thread at a time)."""
    from pytensor import config
    from pytensor.compile.mode import predefined_linkers

    with _inner_lock:
        saved = [(lk, lk.c_thunks) for lk in predefined_linkers.values()
                 if isinstance(getattr(lk, "c_thunks", None), bool)]
        try:
            for lk, _ in saved:
                lk.c_thunks = False
            with config.change_flags(cxx=""):
                yield
        finally:
            for lk, c in saved:
                lk.c_thunks = c


def fallback_enabled(fallback=None):
    """The effective setting: the argument if given, else EMBER_FALLBACK (default on)."""
    if fallback is not None:
        return bool(fallback)
    env = os.environ.get("EMBER_FALLBACK")
    if env is None or env.strip() == "":
        return True
    v = env.strip().lower()
    if v in _FALSE:
        return False
    if v in _TRUE:
        return True
    raise ValueError(f"EMBER_FALLBACK must be 0 or 1, not {env!r}")


# One lock per op instance, shared by every node and Program that applies it.
_locks = weakref.WeakKeyDictionary()
_locks_by_id = {}
_locks_guard = threading.Lock()


def _op_lock(op):
    with _locks_guard:
        try:
            lock = _locks.get(op)
            if lock is None:
                lock = _locks[op] = threading.Lock()
            return lock
        except TypeError:  # not weak-referenceable or not hashable
            entry = _locks_by_id.get(id(op))
            if entry is None or entry[0] is not op:
                entry = _locks_by_id[id(op)] = (op, threading.Lock())
            return entry[1]


# The original exception of the last failed callback, per thread, so the
# Python front ends can re-raise it instead of the engine's CallError.
_failed = threading.local()


def take_error(call_error):
    """The exception a callback raised, if call_error (a CallError) came from it."""
    exc, text = getattr(_failed, "exc", None), getattr(_failed, "text", None)
    _failed.exc = _failed.text = None
    if exc is not None and text and text in str(call_error):
        try:
            exc.add_note(f"(in ember's Python fallback: {call_error})")
        except AttributeError:
            pass
        return exc
    return None


class NodeCallback:
    """Runs one PyTensor Apply node's Python implementation.

    `fed`: positions of node.inputs the engine passes, in order (the others
    are constants, bound here). `keep`: positions of node.outputs returned.
    """

    def __init__(self, node, fed, keep):
        from pytensor.graph.basic import Constant

        self.node, self.fed, self.keep = node, list(fed), list(keep)
        self.op_name = type(node.op).__name__
        self.lock = _op_lock(node.op)
        self._dtypes = [np.dtype(node.outputs[k].type.dtype) for k in self.keep]
        destroyed = set()
        for ins in getattr(node.op, "destroy_map", {}).values():
            destroyed.update(ins)
        self._copy = [p in destroyed for p in self.fed]
        self._storage = {v: [None] for v in [*node.inputs, *node.outputs]}
        self._compute = {v: [True] for v in node.inputs}
        self._compute.update({v: [False] for v in node.outputs})
        self._consts = []
        for v in node.inputs:
            if isinstance(v, Constant):
                self._storage[v][0] = v.data
                self._consts.append(v)
        self._in_cells = [self._storage[node.inputs[p]] for p in self.fed]
        self._out_cells = [self._storage[o] for o in node.outputs]
        self._thunk = None

    def _make_thunk(self):
        with python_inner_functions():
            return self.node.op.make_thunk(self.node, self._storage, self._compute, [], impl="py")

    def __call__(self, *arrays):
        try:
            with self.lock:
                if self._thunk is None:
                    self._thunk = self._make_thunk()
                for cell, a, copy in zip(self._in_cells, arrays, self._copy):
                    cell[0] = np.array(a) if copy else a
                for cell in self._out_cells:
                    cell[0] = None
                for o in self.node.outputs:
                    self._compute[o][0] = False
                try:
                    self._thunk()
                    out = [self._out_cells[k][0] for k in self.keep]
                finally:
                    for cell in self._in_cells:  # no view of engine memory outlives the call
                        cell[0] = None
            return [self._convert(r, dt) for r, dt in zip(out, self._dtypes)]
        except Exception as e:
            text = f"{type(e).__name__}: {e}"
            _failed.exc, _failed.text = e, text
            raise RuntimeError(text) from None

    @staticmethod
    def _convert(r, dt):
        a = np.asarray(r)
        if a.dtype != dt and np.can_cast(a.dtype, dt, "same_kind" if a.ndim == 0 else "safe"):
            a = a.astype(dt)
        return a  # any other mismatch: the engine names the node and both dtypes

    def __repr__(self):
        return f"<ember fallback {self.node.op}>"


def warn_fallback(callbacks, graph="graph", stacklevel=3):
    """One FallbackWarning per op type running through the fallback."""
    counts = {}
    for cb in callbacks:
        counts[cb.op_name] = counts.get(cb.op_name, 0) + 1
    for name, n in counts.items():
        warnings.warn(
            f"ember: {graph}: op {name} has no native kernel; {n} node(s) run PyTensor's Python "
            "implementation (GIL held, one call at a time per op). fallback=False or "
            "EMBER_FALLBACK=0 makes this an error.", FallbackWarning, stacklevel=stacklevel)


def as_one_op(fgraph):
    """fgraph as a FunctionGraph of one node that runs all of it on PyTensor's
    PerformLinker: for a graph whose values between nodes have types no Ember
    variable holds (complex, as in expm's gradient on PyTensor 2.38). Its
    inputs and outputs are fgraph's, so the node is an ordinary Python
    fallback and the rest of Ember (layout, initial point) is unchanged."""
    from pytensor.graph.basic import Apply
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.op import Op

    class WholeGraph(Op):
        def __init__(self, inner):
            self.inner = inner
            self._run = None

        def make_node(self, *inputs):
            return Apply(self, list(inputs), [o.type() for o in self.inner.outputs])

        def perform(self, node, inputs, outputs):
            if self._run is None:  # under the fallback's lock per op
                from .linker import _PythonGraph

                self._run = _PythonGraph(self.inner).function()
            for o, v in zip(outputs, self._run(*inputs)):
                o[0] = v

    op = WholeGraph(fgraph.clone())
    return FunctionGraph(fgraph.inputs, op.make_node(*fgraph.inputs).outputs, clone=True)
