"""Export a rewritten PyTensor FunctionGraph as an Ember graph (docs/graph-format.md).

    doc, payload = export_graph(fgraph_or_function)
    export(fgraph_or_function, "model.embg")

Works on PyTensor 2.x and 3.x: ops are recognised by class name (walking the
MRO, so PyMC's CheckParameterValue is a CheckAndRaise), and the places where
the two lines differ (Subtensor idx_list form, Composite inner graph type,
Join/Split axis) are handled by looking at the objects, not the version.
"""

import json
import struct

import numpy as np

from . import tables
from .scalar_ops import REDUCE_OPS, ember_name

FORMAT_VERSION = 1
MAGIC = b"EMBRGRPH"
DTYPES = frozenset(tables.DTYPES)
INT_DTYPES = tables.INT_DTYPES
INLINE_LIMIT = 64  # constants with more elements go to the binary payload
PAYLOAD_ALIGN = 64


class UnsupportedGraphError(ValueError):
    """The graph holds ops or types Ember cannot represent.

    `.problems` maps each distinct problem (e.g. "op Argmax") to the places it occurs.
    """

    def __init__(self, problems):
        self.problems = {}
        for what, where in problems:
            self.problems.setdefault(what, []).append(where)
        lines = []
        for what, wheres in self.problems.items():
            shown = ", ".join(wheres[:5]) + (", ..." if len(wheres) > 5 else "")
            lines.append(f"  - {what}: {len(wheres)} place(s) ({shown})")
        super().__init__(f"cannot export graph: {len(self.problems)} unsupported construct(s):\n"
                         + "\n".join(lines))


class _Unsupported(Exception):
    pass


class _Decline(Exception):
    """A handler leaves the node to the generic path (inlining an OpFromGraph)."""


def _is_constant(v):
    from pytensor.graph.basic import Constant

    return isinstance(v, Constant)


def _type_kind(t):
    return type(t).__name__


def _var_type(v):
    """(dtype, static shape) of a tensor or scalar variable."""
    from pytensor.scalar.basic import ScalarType
    from pytensor.tensor.type import TensorType

    t = v.type
    if isinstance(t, TensorType):
        # A negative static length (a Split by a negative constant) is left for the
        # run to reject, as PyTensor's own linkers do.
        dtype, shape = t.dtype, [None if d is None or d < 0 else int(d) for d in t.shape]
    elif isinstance(t, ScalarType):
        dtype, shape = t.dtype, []
    else:
        raise _Unsupported(f"variable of type {_type_kind(t)} ({t})")
    if dtype not in DTYPES:
        raise _Unsupported(f"dtype {dtype}")
    if len(shape) > 16:
        raise _Unsupported(f"{len(shape)} dims (at most 16)")
    return dtype, shape


def _scalar_value(x, dtype):
    """One number as the format writes it."""
    if dtype == "bool":
        return bool(x)
    if dtype in INT_DTYPES:
        return int(x)
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _inline_data(arr):
    dtype = arr.dtype.name
    flat = arr.ravel(order="C")
    if dtype == "bool":
        return [bool(x) for x in flat]
    if dtype in INT_DTYPES:
        return [int(x) for x in flat]
    if np.all(np.isfinite(flat)):
        return [float(x) for x in flat]
    return [_scalar_value(x, dtype) for x in flat]


def _int_literal(v):
    """The Python int of a 0-d integer constant, else None."""
    # PyTensor 3.x wraps literal slice bounds as TensorFromScalar(constant).
    while (not _is_constant(v) and v.owner is not None and len(v.owner.inputs) == 1
           and type(v.owner.op).__name__ in ("TensorFromScalar", "ScalarFromTensor")):
        v = v.owner.inputs[0]
    if not _is_constant(v):
        return None
    data = np.asarray(v.data)
    if data.ndim != 0 or data.dtype.kind not in "iu":
        return None
    return int(data)


class _Graph:
    def __init__(self, inline_limit, callbacks=None):
        self.inline_limit = inline_limit
        self.callbacks = callbacks  # a list: unsupported ops become PythonCallback nodes
        self.keep = set()  # variables a callback must return even if no node reads them
        self.variables = []
        self.ids = {}
        self.constants = []
        self.payload = bytearray()
        self.nodes = []
        self.problems = []

    # -- variables and constants ------------------------------------------------

    def var(self, v, value=None):
        """Id of variable v, registering it (and its data if it is a constant)."""
        if v in self.ids:
            return self.ids[v]
        dtype, shape = _var_type(v)
        if _is_constant(v):
            value = v.data
        if value is not None:
            arr = np.asarray(value, dtype=dtype)
            if len(arr.shape) != len(shape):
                raise _Unsupported(f"value of {v} has {arr.ndim} dims, type has {len(shape)}")
            shape = [int(d) for d in arr.shape]  # a shared value fixes the shape
        k = len(self.variables)
        self.ids[v] = k
        self.variables.append({"dtype": dtype, "shape": shape})
        if value is not None:
            self._add_constant(k, arr)
        return k

    def document(self, inputs, outputs, name=None):
        """The graph document of what was emitted, with these input entries and output ids."""
        doc = {"format": "ember-graph", "version": FORMAT_VERSION}
        if name:
            doc["name"] = name
        doc.update(variables=self.variables, inputs=inputs, outputs=outputs, constants=self.constants,
                   nodes=self.nodes)
        return doc

    def _add_constant(self, k, arr):
        arr = np.ascontiguousarray(arr)
        if arr.size <= self.inline_limit:
            self.constants.append({"var": k, "data": _inline_data(arr)})
            return
        pad = -len(self.payload) % PAYLOAD_ALIGN
        self.payload.extend(b"\0" * pad)
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        self.constants.append({"var": k, "offset": len(self.payload), "nbytes": len(raw)})
        self.payload.extend(raw)


# -- op handlers --------------------------------------------------------------
# Each takes (graph, node) and returns (ember op name, input variables, attrs).


def _simple(name, attrs_fn=None):
    def handler(g, node):
        return name, list(node.inputs), (attrs_fn(node.op) if attrs_fn else {})

    return handler


def _composite(op):
    """The format's Composite dict for a PyTensor Composite (nested ones are inlined)."""
    fg = op.fgraph  # FunctionGraph in 2.x, FrozenFunctionGraph in 3.x
    in_dtypes = []
    for v in fg.inputs:
        dtype, _ = _var_type(v)
        in_dtypes.append(dtype)
    consts, const_index, nodes = [], {}, []

    def ref_of(v, refs):
        if v in refs:
            return refs[v]
        if _is_constant(v):
            dtype, _ = _var_type(v)
            value = _scalar_value(np.asarray(v.data, dtype=dtype).item(), dtype)
            key = (dtype, repr(value))
            if key not in const_index:
                const_index[key] = len(consts)
                consts.append({"dtype": dtype, "value": value})
            return ("c", const_index[key])
        raise _Unsupported(f"Composite value {v} has no definition")

    def emit(inner_fg, refs):
        from pytensor.scalar.basic import Composite

        for node in inner_fg.toposort():
            if isinstance(node.op, Composite):
                sub = node.op.fgraph
                sub_refs = {si: ref_of(o, refs) for si, o in zip(sub.inputs, node.inputs)}
                emit(sub, sub_refs)
                for out, inner_out in zip(node.outputs, sub.outputs):
                    refs[out] = ref_of(inner_out, sub_refs)
                continue
            name = ember_name(node.op)
            if name is None:
                raise _Unsupported(f"scalar op {type(node.op).__name__}")
            if len(node.outputs) != 1:
                raise _Unsupported(f"scalar op {name} with {len(node.outputs)} outputs")
            dtype, _ = _var_type(node.outputs[0])
            nodes.append({"op": name, "inputs": [ref_of(i, refs) for i in node.inputs], "dtype": dtype})
            refs[node.outputs[0]] = ("n", len(nodes) - 1)

    refs = {v: ("i", k) for k, v in enumerate(fg.inputs)}
    emit(fg, refs)
    outputs = [ref_of(o, refs) for o in fg.outputs]

    base = {"i": 0, "c": len(in_dtypes), "n": len(in_dtypes) + len(consts)}

    def number(r):
        return base[r[0]] + r[1]

    for n in nodes:
        n["inputs"] = [number(r) for r in n["inputs"]]
    return {"op": "Composite", "inputs": in_dtypes, "constants": consts, "nodes": nodes,
            "outputs": [number(r) for r in outputs]}


def _scalar_loop(op):
    """The format's ScalarLoop dict: its body as a Composite, plus how many
    of the body's inputs are carried and whether its last output is `until`."""
    body = _composite(op)  # op.fgraph: inputs carried + constant, outputs updates (+ until)
    n_until = 1 if op.is_while else 0
    return {"op": "ScalarLoop", "carried": len(op.outputs) - n_until, "until": bool(op.is_while),
            **{k: v for k, v in body.items() if k != "op"}}


def _elemwise(g, node):
    from pytensor.scalar.basic import Composite
    from pytensor.scalar.loop import ScalarLoop

    sop = node.op.scalar_op
    # Scalar code computes integers in int64 registers, which cannot hold every uint64.
    if any(_var_type(v)[0] == "uint64" for v in [*node.inputs, *node.outputs]) or (
            hasattr(sop, "fgraph") and any(getattr(v.type, "dtype", None) == "uint64"
                                           for n in sop.fgraph.toposort() for v in [*n.inputs, *n.outputs])):
        raise _Unsupported("uint64 in element-wise code")
    if isinstance(sop, ScalarLoop):
        scalar = _scalar_loop(sop)
    elif isinstance(sop, Composite):
        scalar = _composite(sop)
    else:
        name = ember_name(sop)
        if name is None:
            raise _Unsupported(f"Elemwise scalar op {type(sop).__name__}")
        scalar = {"op": name}
    return "Elemwise", list(node.inputs), {"scalar_op": scalar}


class _AsElemwise:
    """A scalar op applied to scalars, seen as an Elemwise over 0-d tensors."""

    def __init__(self, node):
        self.op, self.inputs, self.outputs = self, node.inputs, node.outputs
        self.scalar_op = node.op


def _scalar_apply(g, node):
    """Scalar ops on ScalarType values: the shape arithmetic of a gradient Scan's
    inner graph, which only fast_run's rewrites turn into tensor ops."""
    return _elemwise(g, _AsElemwise(node))


def _careduce(g, node):
    op = node.op
    attrs = {"axis": None if op.axis is None else [int(a) for a in op.axis]}
    if getattr(op, "acc_dtype", None) is not None:
        attrs["acc_dtype"] = str(op.acc_dtype)
    name = next(c.__name__ for c in type(op).__mro__
                if c.__name__ in ("Sum", "Prod", "Max", "Min", "All", "Any", "CAReduce"))
    if name == "CAReduce":
        sname = ember_name(op.scalar_op) or type(op.scalar_op).__name__
        if sname not in REDUCE_OPS:
            raise _Unsupported(f"CAReduce with scalar op {type(op.scalar_op).__name__}")
        attrs["scalar_op"] = sname
    return name, list(node.inputs), attrs


def _dimshuffle(g, node):
    order = ["x" if a == "x" else int(a) for a in node.op.new_order]
    return "DimShuffle", list(node.inputs), {"new_order": order}


class _IndexInputs:
    """Builds a node's input list while converting index entries."""

    def __init__(self, leading):
        self.inputs = list(leading)

    def add(self, v):
        self.inputs.append(v)
        return len(self.inputs) - 1

    def scalar(self, v):
        """A slice bound / basic index: literal int, null, or {"input": k}."""
        if v is None:
            return None
        if isinstance(v, (int, np.integer)):
            return int(v)
        if _type_kind(v.type) == "NoneTypeT":
            return None
        lit = _int_literal(v)
        if lit is not None:
            return lit
        dtype, shape = _var_type(v)
        if shape != [] or dtype not in INT_DTYPES:
            raise _Unsupported(f"index {v} is not a 0-d integer")
        return {"input": self.add(v)}


def _basic_idx_list(op, index_vars, b, advanced):
    """Convert a Subtensor-family idx_list (2.x Type placeholders or 3.x positions)."""
    from pytensor.graph.type import Type

    it = iter(index_vars)

    def take(entry):
        if entry is None:
            return None
        if isinstance(entry, Type):  # 2.x: consume the next index input
            return next(it)
        if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            return index_vars[int(entry)]  # 3.x: a position among the index inputs
        raise _Unsupported(f"idx_list entry {entry!r}")

    out = []
    for entry in op.idx_list:
        if isinstance(entry, slice):
            out.append({"type": "slice", "start": b.scalar(take(entry.start)),
                        "stop": b.scalar(take(entry.stop)), "step": b.scalar(take(entry.step))})
            continue
        v = take(entry)
        if advanced:
            # NumPy treats every integer tensor (even 0-d) in an advanced index as an array index.
            out.append({"type": "array", "input": b.add(v)})
        else:
            out.append({"type": "index", "value": b.scalar(v)})
    return out


def _advanced_idx_list_2x(index_vars, b):
    """2.x AdvancedSubtensor inputs: tensors, slices (constant or MakeSlice), NoneConst."""
    out = []
    for v in index_vars:
        kind = _type_kind(v.type)
        if kind == "NoneTypeT":
            out.append({"type": "newaxis"})
        elif kind == "SliceType":
            if _is_constant(v):
                s = v.data
                parts = [s.start, s.stop, s.step]
            elif v.owner is not None and type(v.owner.op).__name__ == "MakeSlice":
                parts = list(v.owner.inputs)
            else:
                raise _Unsupported(f"slice index {v} not from a constant or MakeSlice")
            start, stop, step = (b.scalar(p) for p in parts)
            out.append({"type": "slice", "start": start, "stop": stop, "step": step})
        else:
            _var_type(v)
            out.append({"type": "array", "input": b.add(v)})
    return out


def _subtensor_family(name, n_lead, advanced):
    def handler(g, node):
        op = node.op
        b = _IndexInputs(node.inputs[:n_lead])
        index_vars = list(node.inputs[n_lead:])
        if getattr(op, "idx_list", None) is not None:
            idx = _basic_idx_list(op, index_vars, b, advanced)
        else:
            idx = _advanced_idx_list_2x(index_vars, b)
        attrs = {"idx_list": idx}
        if n_lead == 2:
            attrs["set_instead_of_inc"] = bool(op.set_instead_of_inc)
        if name == "AdvancedIncSubtensor":
            attrs["ignore_duplicates"] = bool(getattr(op, "ignore_duplicates", False))
        return name, b.inputs, attrs

    return handler


def _axis_from_input_or_prop(node, rest_from):
    """(axis attr or None, inputs) for Join/Split: axis is a property in newer PyTensor."""
    op = node.op
    if getattr(op, "axis", None) is not None:
        return {"axis": int(op.axis)}, list(node.inputs)
    axis_var = node.inputs[rest_from]
    lit = _int_literal(axis_var)
    if lit is not None:
        return {"axis": lit}, [*node.inputs[:rest_from], *node.inputs[rest_from + 1:]]
    return {}, list(node.inputs)


def _join(g, node):
    attrs, inputs = _axis_from_input_or_prop(node, 0)
    return "Join", inputs, attrs


def _split(g, node):
    attrs, inputs = _axis_from_input_or_prop(node, 1)
    attrs["len_splits"] = int(node.op.len_splits)
    return "Split", inputs, attrs


def _specify_shape(g, node):
    b = _IndexInputs(node.inputs[:1])
    shape = []
    for v in node.inputs[1:]:
        if _type_kind(v.type) == "NoneTypeT":
            shape.append(None)
        else:
            shape.append({"input": b.add(v)})
    return "SpecifyShape", b.inputs, {"shape": shape}


def _check_and_raise(g, node):
    mro = [c.__name__ for c in type(node.op).__mro__]
    name = "Assert" if "Assert" in mro else "CheckAndRaise"
    attrs = {"msg": str(getattr(node.op, "msg", ""))}
    if "CheckParameterValue" in mro:  # PyMC's: a gradient directive turns it into a -inf switch
        attrs["parameter_check"] = True
        attrs["ninf"] = bool(getattr(node.op, "can_be_replaced_by_ninf", False))
    return name, list(node.inputs), attrs


def _bool(op, attr, default):
    return bool(getattr(op, attr, default))


def _cholesky_attrs(op):
    return {"lower": _bool(op, "lower", True), "on_error": str(getattr(op, "on_error", "nan"))}


def _solve_triangular_attrs(op):
    trans = getattr(op, "trans", 0)
    return {"lower": _bool(op, "lower", False), "trans": trans if isinstance(trans, str) else int(trans),
            "unit_diagonal": _bool(op, "unit_diagonal", False), "b_ndim": int(op.b_ndim)}


def _solve_attrs(op):
    return {"assume_a": str(op.assume_a), "lower": _bool(op, "lower", False), "b_ndim": int(op.b_ndim)}


def _cholesky_solve_attrs(op):
    return {"lower": _bool(op, "lower", False), "b_ndim": int(op.b_ndim)}


def _lu_attrs(op):
    return {"permute_l": _bool(op, "permute_l", False), "p_indices": _bool(op, "p_indices", False)}


def _eigh_attrs(op):
    """lower from PyTensor 3's `lower` or 2.x's NumPy-style `UPLO`."""
    uplo = getattr(op, "UPLO", None)
    lower = uplo == "L" if isinstance(uplo, str) else _bool(op, "lower", True)
    return {"lower": lower}


def _qr_attrs(op):
    if _bool(op, "pivoting", False):
        raise _Unsupported("QR with pivoting")
    return {"mode": str(op.mode)}


def _svd_attrs(op):
    return {"full_matrices": _bool(op, "full_matrices", True), "compute_uv": _bool(op, "compute_uv", True)}


def _extract_diag_attrs(op):
    return {"offset": int(op.offset), "axis1": int(op.axis1), "axis2": int(op.axis2)}


def _cumop_attrs(op):
    return {"axis": None if op.axis is None else int(op.axis), "mode": str(op.mode)}


# Core ops a Blockwise may wrap: their attrs come from the op alone.
_CORE_ATTRS = {
    "Cholesky": _cholesky_attrs,
    "SolveTriangular": _solve_triangular_attrs,
    "Solve": _solve_attrs,
    "MatrixInverse": None,
    "Det": None,
    "SLogDet": None,
    "CholeskySolve": _cholesky_solve_attrs,
    "LUFactor": None,
    "LU": _lu_attrs,
    "PivotToPermutations": lambda op: {"inverse": _bool(op, "inverse", True)},
    "Eigh": _eigh_attrs,
    "Eigvalsh": _eigh_attrs,
    "QR": _qr_attrs,
    "SVD": _svd_attrs,
    "MatrixPinv": lambda op: {"hermitian": _bool(op, "hermitian", False)},
    "Expm": None,
    "Dot": None,
    "ExtractDiag": _extract_diag_attrs,
    "CumOp": _cumop_attrs,
}


def _blockwise_take(node):
    """Blockwise of x[idx] with one integer vector on axis 0 (batched lu_solve
    permutes rows so): the format's AdvancedSubtensor1 core."""
    core = node.op.core_op
    idx_list = getattr(core, "idx_list", None)
    sig_in = str(node.op.signature).split("->")[0]
    ok = (len(node.inputs) == 2 and idx_list in (None, (0,)) and sig_in.count("(") == 2
          and "," not in sig_in.rsplit("(", 1)[1] and node.inputs[1].type.dtype.startswith(("int", "uint")))
    if not ok:
        raise _Unsupported(f"Blockwise of {type(core).__name__} (other than x[int vector])")
    return "Blockwise", list(node.inputs), {
        "core_op": {"op": "AdvancedSubtensor1", "attrs": {}}, "signature": str(node.op.signature)}


def _blockwise(g, node):
    core = node.op.core_op
    name = type(core).__name__
    if name in ("AdvancedSubtensor", "AdvancedSubtensor1"):
        return _blockwise_take(node)
    if name not in _CORE_ATTRS:
        raise _Unsupported(f"Blockwise of {name}")
    fn = _CORE_ATTRS[name]
    return "Blockwise", list(node.inputs), {
        "core_op": {"op": name, "attrs": fn(core) if fn else {}},
        "signature": str(node.op.signature),
    }


def _batched_dot(g, node):
    """BatchedDot, what PyTensor's specialize makes of a batched matmul: a
    Blockwise of Dot over the one batch dim. BatchedDot does not broadcast
    that dim (PyTensor's own check makes the static sizes agree); the
    Blockwise would, so a call with unequal batch sizes is not an error."""
    return "Blockwise", list(node.inputs), {
        "core_op": {"op": "Dot", "attrs": {}}, "signature": "(m,k),(k,n)->(m,n)"}


def _softmax_family(name):
    """Softmax/LogSoftmax/SoftmaxGrad: one axis or all (PyTensor 3.x keeps a
    tuple; a tuple of some axes is left to the inner graph)."""

    def handler(g, node):
        axis, nd = getattr(node.op, "axis", None), node.inputs[0].type.ndim
        if isinstance(axis, (tuple, list)):
            axes = sorted({int(a) % max(nd, 1) for a in axis})
            if axes == list(range(nd)):
                axis = None
            elif len(axes) == 1:
                axis = axes[0]
            else:
                raise _Decline()
        return name, list(node.inputs), {"axis": None if axis is None else int(axis)}

    return handler


def _argmax(g, node):
    axis = node.op.axis
    return "Argmax", [node.inputs[0]], {"axis": None if axis is None else sorted(int(a) for a in axis)}


def _sort(name):
    def handler(g, node):
        op = node.op
        attrs = {"kind": str(op.kind)}
        if len(node.inputs) == 1:  # PyTensor 3.x: the axis is a property
            attrs["axis"] = int(op.axis)
        else:  # 2.x: a constant axis input, None for the flattened input
            axis = node.inputs[1]
            if _type_kind(axis.type) == "NoneTypeT":
                attrs["axis"] = None
            else:
                lit = _int_literal(axis)
                if lit is None:
                    raise _Unsupported("non-constant sort axis")
                attrs["axis"] = lit
        return name, [node.inputs[0]], attrs

    return handler


def _unique(g, node):
    op = node.op
    if op.axis is not None:
        raise _Unsupported("Unique along an axis")
    return "Unique", [node.inputs[0]], {"return_index": bool(op.return_index),
                                        "return_inverse": bool(op.return_inverse),
                                        "return_counts": bool(op.return_counts)}


def _inner_fgraph(op):
    """(inputs, outputs) of a private copy of op's inner graph (OpFromGraph, Scan)."""
    from pytensor.graph.basic import clone

    inner = getattr(op, "fgraph", None)
    if hasattr(inner, "unfreeze"):  # PyTensor 3.x: frozen nodes cannot be cloned, only rebuilt
        inner = inner.unfreeze()
        return list(inner.inputs), list(inner.outputs)
    return clone(list(op.inner_inputs), list(op.inner_outputs))


def _toposort(ins, outs):
    try:
        from pytensor.graph.traversal import io_toposort
    except ImportError:  # older PyTensor
        from pytensor.graph.basic import io_toposort
    return io_toposort(ins, outs)


def _scan(g, node):
    """Scan with its inner function as a nested graph document (attrs.inner).
    An inner op without a native kernel makes the whole Scan a fallback node."""
    info = node.op.info
    ins, outs = _inner_fgraph(node.op)
    sub = _Graph(inline_limit=np.iinfo(np.int64).max)
    doc_inputs = [{"var": sub.var(v)} for v in ins]
    _emit_nodes(sub, _toposort(ins, outs), "inner node ")
    out_ids = [sub.var(v) for v in outs]
    if sub.problems:
        raise _Unsupported("inner graph: " + "; ".join(f"{p} ({w})" for p, w in sub.problems))
    inner = sub.document(doc_inputs, out_ids)
    taps = lambda slices: [[int(t) for t in s] for s in slices]  # noqa: E731
    attrs = {"n_seqs": int(info.n_seqs), "mit_mot_in_slices": taps(info.mit_mot_in_slices),
             "mit_mot_out_slices": taps(info.mit_mot_out_slices), "mit_sot_in_slices": taps(info.mit_sot_in_slices),
             "sit_sot_in_slices": taps(info.sit_sot_in_slices), "n_nit_sot": int(info.n_nit_sot),
             "n_untraced_sit_sot": int(info.n_untraced_sit_sot), "n_non_seqs": int(info.n_non_seqs),
             "as_while": bool(info.as_while), "inner": inner}
    return "Scan", list(node.inputs), attrs


HANDLERS = {
    "Elemwise": _elemwise,
    "DimShuffle": _dimshuffle,
    "Reshape": _simple("Reshape", lambda op: {"ndim": int(op.ndim)}),
    "Shape": _simple("Shape"),
    "Shape_i": _simple("Shape_i", lambda op: {"i": int(op.i)}),
    "SpecifyShape": _specify_shape,
    "ScalarFromTensor": _simple("ScalarFromTensor"),
    "TensorFromScalar": _simple("TensorFromScalar"),
    "DeepCopyOp": _simple("DeepCopyOp"),
    "ViewOp": _simple("ViewOp"),
    "OutputGuard": _simple("OutputGuard"),
    "Unbroadcast": _simple("Unbroadcast"),
    "CheckAndRaise": _check_and_raise,
    "Alloc": _simple("Alloc"),
    "AllocEmpty": _simple("AllocEmpty", lambda op: {"dtype": str(op.dtype)}),
    "Join": _join,
    "Split": _split,
    "MakeVector": _simple("MakeVector"),
    "ARange": _simple("ARange"),
    "ExtractDiag": _simple("ExtractDiag", _extract_diag_attrs),
    "Subtensor": _subtensor_family("Subtensor", 1, False),
    "IncSubtensor": _subtensor_family("IncSubtensor", 2, False),
    "AdvancedSubtensor": _subtensor_family("AdvancedSubtensor", 1, True),
    "AdvancedIncSubtensor": _subtensor_family("AdvancedIncSubtensor", 2, True),
    "AdvancedSubtensor1": _simple("AdvancedSubtensor1"),
    "AdvancedIncSubtensor1": _simple(
        "AdvancedIncSubtensor1", lambda op: {"set_instead_of_inc": bool(op.set_instead_of_inc)}),
    "CAReduce": _careduce,
    "CumOp": _simple("CumOp", _cumop_attrs),
    "Dot": _simple("Dot"),
    "Cholesky": _simple("Cholesky", _cholesky_attrs),
    "SolveTriangular": _simple("SolveTriangular", _solve_triangular_attrs),
    "Solve": _simple("Solve", _solve_attrs),
    "MatrixInverse": _simple("MatrixInverse"),
    "Det": _simple("Det"),
    "SLogDet": _simple("SLogDet"),
    "CholeskySolve": _simple("CholeskySolve", _cholesky_solve_attrs),
    "LUFactor": _simple("LUFactor"),
    "LU": _simple("LU", _lu_attrs),
    "PivotToPermutations": _simple("PivotToPermutations", _CORE_ATTRS["PivotToPermutations"]),
    "Eigh": _simple("Eigh", _eigh_attrs),
    "Eigvalsh": _simple("Eigvalsh", _eigh_attrs),
    "QR": _simple("QR", _qr_attrs),
    "SVD": _simple("SVD", _svd_attrs),
    "MatrixPinv": _simple("MatrixPinv", _CORE_ATTRS["MatrixPinv"]),
    "Expm": _simple("Expm"),
    "Blockwise": _blockwise,
    "BatchedDot": _batched_dot,
    "Softmax": _softmax_family("Softmax"),
    "LogSoftmax": _softmax_family("LogSoftmax"),
    "SoftmaxGrad": _softmax_family("SoftmaxGrad"),
    "Argmax": _argmax,
    "SortOp": _sort("SortOp"),
    "ArgSortOp": _sort("ArgSortOp"),
    "Repeat": _simple("Repeat", lambda op: {"axis": int(op.axis)}),
    "SearchsortedOp": _simple("SearchsortedOp", lambda op: {"side": str(op.side)}),
    "Unique": _unique,
    "Nonzero": _simple("Nonzero"),
    "RavelMultiIndex": _simple("RavelMultiIndex", lambda op: {"mode": str(op.mode), "order": str(op.order)}),
    "UnravelIndex": _simple("UnravelIndex", lambda op: {"order": str(op.order)}),
    "Bartlett": _simple("Bartlett"),
    "Eye": _simple("Eye"),
    "FillDiagonal": _simple("FillDiagonal"),
    "FillDiagonalOffset": _simple("FillDiagonalOffset"),
    "BlockDiagonal": _simple("BlockDiagonal"),
    "KroneckerProduct": _simple("KroneckerProduct"),
    "PosDefMatrix": _simple("MatrixIsPositiveDefinite"),  # PyMC's op (LKJCorr)
    "IfElse": _simple("IfElse", lambda op: {"n_outs": int(op.n_outs)}),
    "Scan": _scan,
    "ScalarOp": _scalar_apply,
}


def _handler_for(op):
    for cls in type(op).__mro__:
        h = HANDLERS.get(cls.__name__)
        if h is not None:
            return h
    return None


def supported_ops():
    """Names of PyTensor op classes (and their subclasses) the exporter handles."""
    return sorted(HANDLERS)


# -- driver ---------------------------------------------------------------------


def _is_op_from_graph(op):
    return any(c.__name__ == "OpFromGraph" for c in type(op).__mro__)


def _emit_inner(g, op, outer_inputs, where):
    """Emit the inner graph of op (an OpFromGraph) on outer_inputs; its inner outputs."""
    # A private copy per application: one op instance (and inner graph) may be applied twice.
    ins, outs = _inner_fgraph(op)
    for inner, outer in zip(ins, outer_inputs, strict=True):
        g.ids[inner] = g.var(outer)
    _emit_nodes(g, _toposort(ins, outs), f"{where} inner node ")
    return outs


def _inline_op_from_graph(g, node, where):
    """Emit an OpFromGraph's inner graph (e.g. AllocDiag) in place of the node."""
    outs = _emit_inner(g, node.op, node.inputs, f"{where} ({type(node.op).__name__})")
    for out, inner in zip(node.outputs, outs, strict=True):
        g.ids[out] = g.var(inner)


def _lazy_ifelse(g, node, where):
    """PyTensor 3's LazyIfElse (branches as OpFromGraphs): both inner graphs, then an IfElse,
    which Ember runs lazily."""
    cond, *xs = node.inputs
    then = _emit_inner(g, node.op.true_branch, xs, f"{where} (LazyIfElse then)")
    other = _emit_inner(g, node.op.false_branch, xs, f"{where} (LazyIfElse else)")
    g.nodes.append({"op": "IfElse", "inputs": [g.var(v) for v in (cond, *then, *other)],
                    "outputs": [g.var(o) for o in node.outputs], "attrs": {"n_outs": len(node.outputs)}})


class _CoreNode:
    """A Blockwise node without batch dims, seen as its core op's node."""

    def __init__(self, node):
        self.op, self.inputs, self.outputs = node.op.core_op, node.inputs, node.outputs


def _unbatched(node):
    """A Blockwise without batch dims is its core op. PyTensor drops such Blockwises in
    fast_run's specialize, never inside a Scan's inner graph (a Kalman filter's ARange,
    AllocDiag and CholeskySolve)."""
    op = node.op
    if type(op).__name__ != "Blockwise" or op.batch_ndim(node) != 0:
        return node
    core = op.core_op
    return _CoreNode(node) if _handler_for(core) is not None or _is_op_from_graph(core) else node


def _emit_nodes(g, nodes, where_prefix):
    read = {i for n in nodes for i in n.inputs}
    for k, apply in enumerate(nodes):
        node = _unbatched(apply)
        op = node.op
        where = f"{where_prefix}{k}"
        if type(op).__name__ == "MakeSlice":
            continue  # folded into the AdvancedSubtensor that uses it
        handler = _handler_for(op)
        result = None
        if handler is not None:
            try:
                result = handler(g, node)
            except _Decline:
                handler = None
            except _Unsupported as e:
                result = e
        if handler is None and type(op).__name__ == "LazyIfElse":
            _lazy_ifelse(g, node, where)
            continue
        if handler is None and _is_op_from_graph(op):
            try:
                _inline_op_from_graph(g, node, where)
            except Exception as e:  # noqa: BLE001 (any failure to inline may fall back)
                if not (isinstance(e, _Unsupported) or g.callbacks is not None):
                    raise
                if not _fallback(g, apply, where, read):
                    g.problems.append((f"{type(op).__name__}: {e}", where))
            continue
        if handler is None:
            if not _fallback(g, apply, where, read):
                g.problems.append((f"op {type(op).__name__}", f"{where} {op}"))
            continue
        try:
            if isinstance(result, _Unsupported):
                raise result
            ename, node_inputs, attrs = result
            entry = {"op": ename, "inputs": [g.var(i) for i in node_inputs],
                     "outputs": [g.var(o) for o in node.outputs]}
        except _Unsupported as e:
            if not _fallback(g, apply, where, read):
                g.problems.append((f"{type(op).__name__}: {e}", where))
            continue
        if attrs:
            entry["attrs"] = attrs
        g.nodes.append(entry)


def _representable(v):
    try:
        _var_type(v)
        return True
    except _Unsupported:
        return False


def _fallback(g, node, where, read):
    """Emit node as a PythonCallback (ember/fallback.py) when the graph allows
    it and its engine-facing variables have types Ember carries: constants
    are bound in the callback, outputs nothing reads are dropped. False if not."""
    from pytensor.graph.basic import Constant

    from .fallback import NodeCallback

    if g.callbacks is None:
        return False
    fed = [p for p, v in enumerate(node.inputs) if not isinstance(v, Constant)]
    keep = [p for p, v in enumerate(node.outputs) if v in read or v in g.keep or _representable(v)]
    if not all(_representable(node.inputs[p]) for p in fed):
        return False
    if not all(_representable(node.outputs[p]) for p in keep):
        return False
    entry = {"op": "PythonCallback", "inputs": [g.var(node.inputs[p]) for p in fed],
             "outputs": [g.var(node.outputs[p]) for p in keep],
             "attrs": {"op": type(node.op).__name__, "callback": len(g.callbacks), "text": str(node.op)}}
    g.callbacks.append(NodeCallback(node, fed, keep))
    g.nodes.append(entry)
    return True


def _unpack(obj):
    """(fgraph, inputs, outputs, shared flags, shared values, problems) of a Function or FunctionGraph."""
    from pytensor.compile.sharedvalue import SharedVariable

    maker = getattr(obj, "maker", None)
    if maker is not None:  # a compiled pytensor Function
        fg = maker.fgraph
        problems = [("updates (not supported)", f"input {i.variable}")
                    for i in maker.inputs if getattr(i, "update", None) is not None]
        n_out = len(maker.outputs)
        shared = [bool(getattr(i, "shared", False)) for i in maker.inputs]
        values = [s.data if sh else None for s, sh in zip(obj.input_storage, shared)]
        return fg, list(fg.inputs), list(fg.outputs[:n_out]), shared, values, problems
    if hasattr(obj, "toposort") and hasattr(obj, "inputs") and hasattr(obj, "outputs"):
        shared = [isinstance(v, SharedVariable) for v in obj.inputs]
        values = [v.get_value(borrow=True) if sh else None for v, sh in zip(obj.inputs, shared)]
        return obj, list(obj.inputs), list(obj.outputs), shared, values, []
    raise TypeError(f"expected a pytensor Function or FunctionGraph, got {type(obj).__name__}")


def _unique_names(names, prefix):
    seen, out = set(), []
    for k, n in enumerate(names):
        n = n or f"{prefix}{k}"
        base, j = n, 1
        while n in seen:
            n, j = f"{base}_{j}", j + 1
        seen.add(n)
        out.append(n)
    return out


def export_graph(obj, *, name=None, input_names=None, output_names=None, inline_limit=INLINE_LIMIT,
                 callbacks=None):
    """Convert a compiled pytensor Function or a (rewritten) FunctionGraph.

    Returns (document dict, payload bytes). Raises UnsupportedGraphError listing
    every op or type that cannot be exported. With `callbacks` (a list), ops
    without a native kernel become PythonCallback nodes instead and their
    callables (ember.fallback.NodeCallback) are appended to it, in the
    numbering the nodes' `callback` attribute uses.
    """
    fg, inputs, outputs, shared, values, problems = _unpack(obj)
    g = _Graph(inline_limit, callbacks)
    g.keep.update(outputs)
    g.problems.extend(problems)

    in_names = _unique_names(input_names or [v.name for v in inputs], "input")
    doc_inputs = []
    for k, v in enumerate(inputs):
        try:
            vid = g.var(v, value=values[k] if shared[k] else None)
        except _Unsupported as e:
            g.problems.append((str(e), f"input {k} ({v.name})"))
            continue
        g.variables[vid]["name"] = in_names[k]
        entry = {"var": vid}
        if shared[k]:
            entry["shared"] = True
        doc_inputs.append(entry)

    _emit_nodes(g, fg.toposort(), "node ")

    out_names = _unique_names(output_names or [None] * len(outputs), "output")
    out_ids = []
    for k, v in enumerate(outputs):
        try:
            vid = g.var(v)
        except _Unsupported as e:
            g.problems.append((str(e), f"output {k}"))
            continue
        out_ids.append(vid)
        if output_names and "name" not in g.variables[vid]:
            g.variables[vid]["name"] = out_names[k]

    if g.problems:
        raise UnsupportedGraphError(g.problems)
    return g.document(doc_inputs, out_ids, name), bytes(g.payload)


def dumps(doc, payload=b"", binary=None):
    """The file bytes: plain JSON when there is no payload (unless binary=True)."""
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
    if binary is None:
        binary = len(payload) > 0
    if not binary:
        return text
    head = MAGIC + struct.pack("<Q", len(text)) + text
    head += b"\0" * (-len(head) % PAYLOAD_ALIGN)
    return head + payload


def loads(data):
    """(doc, payload) from file bytes, either form."""
    if data[:8] == MAGIC:
        (n,) = struct.unpack("<Q", data[8:16])
        doc = json.loads(data[16:16 + n])
        start = 16 + n + (-(16 + n) % PAYLOAD_ALIGN)
        return doc, bytes(data[start:])
    return json.loads(data), b""


def export(obj, path, *, binary=None, fallback=False, **kwargs):
    """Write obj (a pytensor Function or FunctionGraph) to path; returns the document.

    fallback=True writes unsupported ops as PythonCallback nodes; such a file
    loads only where ember's Python package supplies the callbacks."""
    if fallback:
        kwargs.setdefault("callbacks", [])
    doc, payload = export_graph(obj, **kwargs)
    with open(path, "wb") as f:
        f.write(dumps(doc, payload, binary))
    return doc
