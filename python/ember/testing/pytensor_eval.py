"""Evaluate a (rewritten) PyTensor FunctionGraph with PyTensor's Python implementations.

Reference values for Ember's tests: every node runs `op.perform` (NumPy/SciPy),
never C or numba code. PyTensor's C `Psi` is only ~1e-9 accurate and its
Python linker hands Elemwise nodes with more than 32 operands to C (a NumPy
ufunc limit), so wide Composites are evaluated here element by element with
`Composite.impl`, and OpFromGraph nodes by recursing into their inner graph
(whose rewritten form may hold inplace ops that `perform` refuses to compile).
"""

import numpy as np


def _is_op_from_graph(op):
    return any(c.__name__ == "OpFromGraph" for c in type(op).__mro__)


def _wide_composite(node, ins):
    comp = node.op.scalar_op
    shape = np.broadcast_shapes(*(np.shape(a) for a in ins))
    bins = [np.broadcast_to(a, shape) for a in ins]
    outs = [np.empty(shape, dtype=o.type.dtype) for o in node.outputs]
    for idx in np.ndindex(*shape):
        with np.errstate(all="ignore"):
            res = comp.impl(*[b[idx] for b in bins])
        if len(outs) == 1:
            res = (res,)
        for out, r in zip(outs, res):
            out[idx] = r
    return outs


def _perform(node, ins):
    # Inplace ops may overwrite their inputs: give every op its own copies.
    ins = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in ins]
    storage = [[None] for _ in node.outputs]
    node.op.prepare_node(node, None, None, "py")
    with np.errstate(all="ignore"):
        node.op.perform(node, ins, storage)
    return [s[0] for s in storage]


def evaluate(fgraph, values):
    """Output values of fgraph for input values (a list in fgraph.inputs order)."""
    from pytensor.graph.basic import Constant
    from pytensor.tensor.elemwise import Elemwise

    env = dict(zip(fgraph.inputs, values))

    def get(v):
        return v.data if isinstance(v, Constant) else env[v]

    for node in fgraph.toposort():
        ins = [get(i) for i in node.inputs]
        op = node.op
        if _is_op_from_graph(op):
            outs = evaluate(op.fgraph, ins)
        elif isinstance(op, Elemwise) and len(node.inputs) + len(node.outputs) > 32:
            outs = _wide_composite(node, ins)
        else:
            outs = _perform(node, ins)
        for o, v in zip(node.outputs, outs):
            env[o] = np.asarray(v, dtype=o.type.dtype) if hasattr(o.type, "dtype") else v
    return [get(o) for o in fgraph.outputs]
