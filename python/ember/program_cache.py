"""Prepared programs of a pm.Model, cached on disk across processes.

The key hashes the model's own graph, without deriving its logp: every free
and observed RV, Deterministic and Potential with the graph of its inputs
(op types and properties, constants' bytes, shared data's values, inner
graphs of Composites and OpFromGraphs), value variables, transforms, initial
value strategies, coords and dims, check_bounds; the compile options that
change the programs; the versions of PyMC, PyTensor, Ember and the sources
of Ember's front end.

An entry is one file `<dir>/programs/<key>.embp` holding the logp+grad,
expand and initial-point graphs (ember graph files) and a JSON manifest (layout,
initial-point plan). `<dir>` is EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember,
else ~/.cache/ember, as for the JIT's object cache (jit/disk_cache.cpp).
Writers write a temporary file and os.replace it into place, so readers see
a whole entry or none; a checksum guards against corrupt or truncated files,
which are removed and rebuilt; the folder is trimmed by last use to
EMBER_PROGRAM_CACHE_MAX (default 512M). EMBER_PROGRAM_CACHE=0 turns it off.
"""

import hashlib
import json
import os
import struct
import tempfile
import time
import types

import numpy as np

FORMAT = "ember-programs-1"
MAGIC = b"EMBPROG1"
_HEAD = struct.Struct("<8sQQ32s")  # magic, manifest bytes, blob bytes, sha256(manifest + blobs)
DEFAULT_MAX_BYTES = 512 << 20
_SOURCES = ("prepare.py", "initial_point.py", "export.py", "scalar_ops.py", "program_cache.py", "linker.py")


def cache_dir():
    d = os.environ.get("EMBER_CACHE_DIR") or (
        os.path.join(os.environ["XDG_CACHE_HOME"], "ember") if os.environ.get("XDG_CACHE_HOME") else
        os.path.join(os.path.expanduser("~"), ".cache", "ember"))
    return os.path.join(d, "programs")


def enabled():
    return os.environ.get("EMBER_PROGRAM_CACHE", "1").lower() not in ("0", "off", "false", "no")


def _max_bytes():
    from .options import parse_memory

    v = os.environ.get("EMBER_PROGRAM_CACHE_MAX")
    return parse_memory(v) if v else DEFAULT_MAX_BYTES


# -- the key ------------------------------------------------------------------------


class _Hasher:
    """A stable description of graphs and the objects in ops' properties."""

    def __init__(self):
        self.h = hashlib.sha256()
        self.ids = {}  # variable -> its index in the walk
        self.refs = 0  # variable references hashed so far
        self.op_digests = {}  # id(op) -> (op, digest) of ops whose hash refers to no variable

    def add(self, *parts):
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode()
            self.h.update(struct.pack("<Q", len(b)))
            self.h.update(b)

    def obj(self, x, depth=0):
        from pytensor.graph.basic import Variable
        from pytensor.graph.op import Op
        from pytensor.graph.type import Type

        if depth > 20:
            raise ValueError("program cache: object nested too deeply to hash")
        if x is None or isinstance(x, (bool, int, float, str, bytes, complex)):
            self.add(type(x).__name__, repr(x))
        elif isinstance(x, (np.ndarray, np.generic)):
            a = np.ascontiguousarray(x)
            self.add("nd", a.dtype.str, a.shape, hashlib.sha256(a.tobytes()).hexdigest() if a.dtype != object
                     else repr(a.tolist()))
        elif isinstance(x, (tuple, list)):
            self.add(type(x).__name__, len(x))
            for e in x:
                self.obj(e, depth + 1)
        elif isinstance(x, (dict,)) or type(x).__name__ == "frozendict":
            items = sorted(x.items(), key=lambda kv: repr(kv[0]))
            self.add("dict", len(items))
            for k, v in items:
                self.obj(k, depth + 1)
                self.obj(v, depth + 1)
        elif isinstance(x, slice):
            self.add("slice")
            self.obj((x.start, x.stop, x.step), depth + 1)
        elif isinstance(x, Type):
            self.add("type", str(x), getattr(x, "dtype", ""), getattr(x, "shape", ""))
        elif isinstance(x, Variable):
            self.var_ref(x)
        elif isinstance(x, Op):
            self.op(x, depth)
        elif isinstance(x, types.FunctionType):  # e.g. a transform's bounds function
            code = x.__code__
            self.add("function", x.__module__, x.__qualname__, code.co_code)
            self.obj([c for c in code.co_consts if not isinstance(c, types.CodeType)], depth + 1)
            self.obj([c.cell_contents for c in x.__closure__ or ()], depth + 1)
        elif isinstance(x, type) or callable(x) and hasattr(x, "__qualname__"):
            self.add("named", getattr(x, "__module__", ""), x.__qualname__)
        elif hasattr(x, "__dict__"):
            self.add("object", type(x).__module__, type(x).__qualname__)
            self.obj({k: v for k, v in vars(x).items() if not k.startswith("_")}, depth + 1)
        else:
            self.add("repr", type(x).__qualname__, repr(x))

    def op(self, op, depth):
        # Many nodes share one Op (and a Composite's inner graph is long):
        # an op's description is hashed once, into its own digest, and
        # reused while it refers to no variable of the walk.
        hit = self.op_digests.get(id(op))
        if hit is not None and hit[0] is op:
            self.add("op", hit[1])
            return
        outer, refs = self.h, self.refs
        self.h = hashlib.sha256()
        try:
            self._op(op, depth)
            digest = self.h.digest()
        finally:
            self.h = outer
        self.add("op", digest)
        if self.refs == refs:
            self.op_digests[id(op)] = (op, digest)

    def _op(self, op, depth):
        self.add("op", type(op).__module__, type(op).__qualname__)
        from pytensor.graph.basic import Variable

        props = getattr(op, "__props__", None)
        if props is not None:  # Composite's inputs/outputs are its inner graph, hashed below
            values = {p: getattr(op, p) for p in props}
            self.obj({p: v for p, v in values.items()
                      if not isinstance(v, Variable) and not (isinstance(v, (list, tuple)) and v
                                                              and isinstance(v[0], Variable))}, depth + 1)
        inner = getattr(op, "fgraph", None)
        if inner is not None and hasattr(inner, "outputs"):
            self.inner_graph(list(inner.inputs), list(inner.outputs))
        elif hasattr(op, "inner_outputs"):
            self.inner_graph(list(op.inner_inputs), list(op.inner_outputs))
        elif props is None:
            self.obj({k: v for k, v in vars(op).items() if not k.startswith("_")}, depth + 1)

    def inner_graph(self, inputs, outputs):
        # Its own numbering: what it refers to is inside it (its references
        # do not count as the outer walk's).
        saved, self.ids = self.ids, {v: k for k, v in enumerate(inputs)}
        refs = self.refs
        self.add("inner", len(inputs))
        for v in inputs:
            self.obj(v.type)
        self.graph(outputs)
        self.ids, self.refs = saved, refs

    def var_ref(self, v):
        self.refs += 1
        if v not in self.ids:
            self.root(v)
        self.add("ref", self.ids[v])

    def root(self, v):
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.graph.basic import Constant

        k = len(self.ids)
        self.ids[v] = k
        if isinstance(v, Constant):
            self.add("const")
            self.obj(v.type)
            self.obj(v.data)
        elif isinstance(v, SharedVariable):
            self.add("shared", v.name)
            self.obj(v.type)
            value = v.get_value(borrow=True)
            if isinstance(value, np.ndarray):  # data; a generator's state does not change a program
                self.obj(value)
        else:
            self.add("input", v.name)
            self.obj(v.type)

    def graph(self, outputs):
        try:
            from pytensor.graph.traversal import io_toposort
        except ImportError:  # PyTensor 2.x before the traversal module
            from pytensor.graph.basic import io_toposort

        roots = []
        seen = set()
        stack = list(outputs)
        while stack:  # the graph's roots, for io_toposort
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v.owner is None:
                roots.append(v)
            else:
                stack.extend(v.owner.inputs)
        for node in io_toposort(roots, list(outputs)):
            if all(o in self.ids for o in node.outputs):
                continue
            self.add("node")
            self.op(node.op, 0)
            for i in node.inputs:
                self.var_ref(i)
            for o in node.outputs:
                self.ids[o] = len(self.ids)
                self.obj(o.type)
        for o in outputs:
            self.var_ref(o)


def _versions():
    import pymc
    import pytensor

    from . import native

    here = os.path.dirname(os.path.abspath(__file__))
    src = hashlib.sha256()
    for name in _SOURCES:
        with open(os.path.join(here, name), "rb") as f:
            src.update(f.read())
    return {"format": FORMAT, "pymc": pymc.__version__, "pytensor": pytensor.__version__,
            "ember": str(native._core.version), "ember_sources": src.hexdigest()[:16]}


def model_key(model, options):
    """Hex key of a pm.Model and the compile options (a JSON-able dict), or
    None when something in the model cannot be described (no caching then)."""
    try:
        return _model_key(model, options)
    except (ValueError, TypeError, RecursionError):
        return None


def _model_key(model, options):
    h = _Hasher()
    h.add("versions", json.dumps(_versions(), sort_keys=True))
    h.add("options", json.dumps(options, sort_keys=True, default=str))
    free, observed = list(model.free_RVs), list(model.observed_RVs)
    det, pot = list(model.deterministics), list(model.potentials)
    values = [model.rvs_to_values[rv] for rv in free + observed]
    h.add("counts", len(free), len(observed), len(det), len(pot))
    h.graph([*free, *observed, *det, *pot, *values])
    for group, rvs in (("free", free), ("observed", observed)):
        for rv in rvs:
            h.add(group, rv.name, model.rvs_to_values[rv].name)
            h.obj(model.rvs_to_transforms.get(rv))
    for rv in free:
        h.add("initval")
        h.obj(model.rvs_to_initial_values.get(rv))
    for v in det + pot:
        h.add("named", v.name)
    h.add("check_bounds", bool(model.check_bounds))
    h.obj({k: (None if v is None else list(v)) for k, v in model.coords.items()})
    for name in model.coords:
        h.add("dim", name)
        if model.dim_lengths.get(name) is not None:
            h.graph([model.dim_lengths[name]])
    h.obj({k: tuple(v) for k, v in model.named_vars_to_dims.items()})
    return h.h.hexdigest()[:40]


# -- entries ------------------------------------------------------------------------


class Entry:
    """A cache entry: its manifest and graph files by name."""

    def __init__(self, manifest, blobs):
        self.manifest = manifest
        self.blobs = blobs  # name -> ember graph file bytes

    def graph(self, name):
        """(JSON text, payload) of one graph, for Program.from_document."""
        from .export import MAGIC as GRAPH_MAGIC

        data = self.blobs[name]
        if data[:8] != GRAPH_MAGIC:
            return data.decode(), b""
        (n,) = struct.unpack("<Q", data[8:16])
        start = 16 + n + (-(16 + n) % 64)
        return data[16:16 + n].decode(), data[start:]


def _path(key, directory=None):
    return os.path.join(directory or cache_dir(), key + ".embp")


def load(key, directory=None):
    """The entry for key, or None (missing, corrupt, truncated, or of another version)."""
    path = _path(key, directory)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    try:
        magic, n_manifest, n_blobs, digest = _HEAD.unpack_from(raw)
        body = raw[_HEAD.size:]
        if magic != MAGIC or len(body) != n_manifest + n_blobs or hashlib.sha256(body).digest() != digest:
            raise ValueError("corrupt")
        manifest = json.loads(body[:n_manifest])
        if manifest.get("key") != key or manifest.get("versions") != _versions():
            raise ValueError("stale")
        blobs, base = {}, n_manifest
        for name, (off, size) in manifest["blobs"].items():
            blobs[name] = body[base + off:base + off + size]
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError):
        _remove(path)
        return None
    try:
        os.utime(path)  # last use, for trimming
    except OSError:
        pass
    return Entry(manifest, blobs)


def store(key, manifest, blobs, directory=None):
    """Write an entry atomically; False when the folder cannot be written."""
    directory = directory or cache_dir()
    manifest = dict(manifest, key=key, versions=_versions(), blobs={})
    parts, off = [], 0
    for name, data in blobs.items():
        manifest["blobs"][name] = [off, len(data)]
        parts.append(data)
        off += len(data)
    try:
        body = json.dumps(manifest, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError):  # e.g. coords JSON cannot hold: not cached
        return False
    n_manifest = len(body)
    body += b"".join(parts)
    head = _HEAD.pack(MAGIC, n_manifest, off, hashlib.sha256(body).digest())
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=key + ".", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(head)
                f.write(body)
            os.replace(tmp, _path(key, directory))
        except BaseException:
            _remove(tmp)
            raise
    except OSError:
        return False
    trim(directory)
    return True


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def trim(directory=None, max_bytes=None):
    """Remove the least recently used entries past the size cap, and
    temporary files left by writers that died (older than an hour)."""
    directory = directory or cache_dir()
    max_bytes = _max_bytes() if max_bytes is None else max_bytes
    now, files, total = time.time(), [], 0
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        p = os.path.join(directory, name)
        try:
            st = os.stat(p)
        except OSError:
            continue
        if name.endswith(".tmp"):
            if now - st.st_mtime > 3600:
                _remove(p)
            continue
        if name.endswith(".embp"):
            files.append((st.st_mtime, st.st_size, p))
            total += st.st_size
    if total <= max_bytes:
        return
    for _, size, p in sorted(files):
        if total <= max_bytes * 9 // 10:
            break
        _remove(p)
        total -= size
