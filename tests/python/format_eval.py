"""A slow NumPy/SciPy evaluator of Ember graph documents, for tests only.

It reads docs/graph-format.md's semantics independently of the exporter, so
running an exported graph here and comparing with PyTensor's values checks
that the exporter's translation (index lists, Composite numbering, Join axis,
...) means what PyTensor computed.
"""

import functools

import numpy as np
import scipy.linalg
import scipy.special as sp

from ember.tables import SCALAR_OPS

KINDS = {name: kind for name, (_, kind) in SCALAR_OPS.items()}


def _softplus(x):
    return np.logaddexp(0.0, x)


def _log1mexp(x):
    return np.where(x < -np.log(2.0), np.log1p(-np.exp(x)), np.log(-np.expm1(x)))


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _invert(x):
    return np.logical_not(x) if x.dtype == bool else np.invert(x)


@functools.cache
def _shape_derivative(name):
    """PyTensor's gradient of gammainc / betainc in a shape parameter (Ember's
    GammaIncDa, BetaIncDa, BetaIncDb), compiled once."""
    import pytensor
    import pytensor.tensor as pt

    ins = [pt.dvector() for _ in range(2 if name == "GammaIncDa" else 3)]
    if name == "GammaIncDa":
        out = pt.grad(pt.gammainc(*ins).sum(), ins[0])
    else:
        out = pt.grad(pt.betainc(*ins).sum(), ins[0 if name == "BetaIncDa" else 1])
    f = pytensor.function(ins, out)

    def apply(*args):
        b = np.broadcast_arrays(*[np.asarray(a, dtype="float64") for a in args])
        return f(*[np.ravel(a) for a in b]).reshape(b[0].shape)
    return apply


SCALAR = {
    "Identity": lambda x: x, "Neg": np.negative, "Abs": np.abs, "Sign": np.sign,
    "Add": lambda *a: functools.reduce(np.add, a), "Mul": lambda *a: functools.reduce(np.multiply, a),
    "Sub": np.subtract, "TrueDiv": np.true_divide, "IntDiv": np.floor_divide, "Mod": np.mod,
    "Pow": np.power, "Sqr": lambda x: x * x, "Sqrt": np.sqrt, "Reciprocal": lambda x: 1.0 / x,
    "Exp": np.exp, "Exp2": np.exp2, "Expm1": np.expm1, "Log": np.log, "Log2": np.log2,
    "Log10": np.log10, "Log1p": np.log1p, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan,
    "ArcSin": np.arcsin, "ArcCos": np.arccos, "ArcTan": np.arctan, "ArcTan2": np.arctan2,
    "Sinh": np.sinh, "Cosh": np.cosh, "Tanh": np.tanh, "ArcSinh": np.arcsinh, "ArcCosh": np.arccosh,
    "ArcTanh": np.arctanh, "Sigmoid": sp.expit, "Softplus": _softplus, "Log1mexp": _log1mexp,
    "Erf": sp.erf, "Erfc": sp.erfc, "Erfcx": sp.erfcx, "Erfinv": sp.erfinv, "Erfcinv": sp.erfcinv,
    "Gamma": sp.gamma, "GammaLn": sp.gammaln, "Psi": sp.digamma, "TriGamma": lambda x: sp.polygamma(1, x),
    "PolyGamma": sp.polygamma,
    "GammaInc": sp.gammainc, "GammaIncC": sp.gammaincc, "I0": sp.i0, "I1": sp.i1, "I0e": sp.i0e,
    "I1e": sp.i1e, "J0": sp.j0, "J1": sp.j1, "BetaInc": sp.betainc,
    "GammaIncDa": lambda *a: _shape_derivative("GammaIncDa")(*a),
    "BetaIncDa": lambda *a: _shape_derivative("BetaIncDa")(*a),
    "BetaIncDb": lambda *a: _shape_derivative("BetaIncDb")(*a), "XlogX": lambda x: sp.xlogy(x, x),
    "XlogY0": sp.xlogy, "Floor": np.floor, "Ceil": np.ceil, "Trunc": np.trunc,
    "RoundHalfToEven": np.round, "RoundHalfAwayFromZero": _round_half_away,
    "ScalarMaximum": np.maximum, "ScalarMinimum": np.minimum, "Clip": np.clip,
    "Second": lambda a, b: np.broadcast_to(b, np.broadcast(a, b).shape),
    "LT": np.less, "GT": np.greater, "LE": np.less_equal, "GE": np.greater_equal, "EQ": np.equal,
    "NEQ": np.not_equal, "AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor,
    "Invert": _invert, "IsNan": np.isnan, "IsInf": np.isinf,
}


def scalar_apply(name, args, dtype):
    kind = KINDS[name]
    dt = np.dtype(dtype)
    if name == "Cast":
        return np.asarray(args[0]).astype(dt)
    if kind == "Switch":
        return np.where(np.asarray(args[0]).astype(bool), np.asarray(args[1]).astype(dt),
                        np.asarray(args[2]).astype(dt))
    if kind in ("Same", "Float", "Bitwise"):
        args = [np.asarray(a).astype(dt) for a in args]
    with np.errstate(all="ignore"):
        return np.asarray(SCALAR[name](*args)).astype(dt)


def composite_apply(c, args, out_dtypes):
    values = [np.asarray(a).astype(d) for a, d in zip(args, c["inputs"])]
    values += [np.asarray(_number(k["value"]), dtype=k["dtype"]) for k in c.get("constants", [])]
    for n in c["nodes"]:
        values.append(scalar_apply(n["op"], [values[i] for i in n["inputs"]], n["dtype"]))
    shape = np.broadcast_shapes(*(np.shape(a) for a in args)) if args else ()
    return [np.broadcast_to(values[o], shape).astype(d) for o, d in zip(c["outputs"], out_dtypes)]


def _number(v):
    return {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(v, v) if isinstance(v, str) else v


def _scalar_ref(s, ins):
    if s is None or isinstance(s, int):
        return s
    return int(ins[s["input"]])


def _index(idx_list, ins):
    out = []
    for e in idx_list:
        t = e["type"]
        if t == "slice":
            out.append(slice(_scalar_ref(e["start"], ins), _scalar_ref(e["stop"], ins), _scalar_ref(e["step"], ins)))
        elif t == "index":
            out.append(_scalar_ref(e["value"], ins))
        elif t == "array":
            out.append(np.asarray(ins[e["input"]]))
        else:
            out.append(None)
    return tuple(out)


def _dimshuffle(x, order):
    kept = [i for i in order if i != "x"]
    dropped = [i for i in range(x.ndim) if i not in kept]
    x = x.reshape([d for i, d in enumerate(x.shape) if i not in dropped])
    rank = {a: r for r, a in enumerate(sorted(kept))}
    x = x.transpose([rank[a] for a in kept])
    shape, it = [], iter(x.shape)
    for i in order:
        shape.append(1 if i == "x" else next(it))
    return x.reshape(shape)


def _axis(a, ndim):
    if a is None:
        return None
    # A 0-d input takes axis 0 or -1 as PyTensor does: nothing is reduced.
    return () if ndim == 0 and len(a) == 1 and a[0] in (0, -1) else tuple(a)


def _cholesky(A, attrs):
    try:
        return scipy.linalg.cholesky(A, lower=attrs.get("lower", True))
    except np.linalg.LinAlgError:
        if attrs.get("on_error", "nan") == "raise":
            raise
        return np.full_like(A, np.nan)


def _decomposition(op, a, ins):
    """The decompositions (and cho_solve), by SciPy; None if op is none of them."""
    x = ins[0]
    if op == "CholeskySolve":
        return [scipy.linalg.cho_solve((x, a.get("lower", False)), ins[1])]
    if op == "LUFactor":
        return list(scipy.linalg.lu_factor(x))
    if op == "LU":
        return list(scipy.linalg.lu(x, permute_l=a.get("permute_l", False), p_indices=a.get("p_indices", False)))
    if op == "PivotToPermutations":
        p = np.arange(len(x))
        for i, j in enumerate(x):
            p[i], p[j] = p[j], p[i]
        return [p if a.get("inverse", True) else np.argsort(p)]
    lower = a.get("lower", True)
    if op == "Eigh":
        return list(scipy.linalg.eigh(x, ins[1] if len(ins) > 1 else None, lower=lower))
    if op == "Eigvalsh":
        return [scipy.linalg.eigvalsh(x, ins[1] if len(ins) > 1 else None, lower=lower)]
    if op == "QR":
        mode = a.get("mode", "full")
        if mode == "raw":
            (h, tau), r = scipy.linalg.qr(x, mode="raw")
            return [h, tau, r]
        out = scipy.linalg.qr(x, mode=mode)
        return list(out) if isinstance(out, tuple) else [out]
    if op == "MatrixPinv":
        return [np.linalg.pinv(x, hermitian=a.get("hermitian", False))]
    if op == "SVD":
        out = np.linalg.svd(x, a.get("full_matrices", True), a.get("compute_uv", True))
        return list(out) if a.get("compute_uv", True) else [out]
    return None


def _inc(x, y, idx, attrs, accumulate):
    out = np.array(x, copy=True)
    if attrs["set_instead_of_inc"]:
        out[idx] = y
    elif accumulate:
        np.add.at(out, idx, y)
    else:
        out[idx] += y
    return out


def tensor_apply(n, ins, out_dtypes):
    op, a = n["op"], n.get("attrs", {})
    x = ins[0] if ins else None
    if op == "Elemwise":
        s = a["scalar_op"]
        if s["op"] == "Composite":
            return composite_apply(s, ins, out_dtypes)
        return [scalar_apply(s["op"], ins, out_dtypes[0])]
    if op == "DimShuffle":
        return [_dimshuffle(x, a["new_order"])]
    if op == "Reshape":
        return [x.reshape([int(d) for d in ins[1]])]
    if op == "Shape":
        return [np.array(x.shape, dtype="int64")]
    if op == "Shape_i":
        return [np.array(x.shape[a["i"]], dtype="int64")]
    if op in ("SpecifyShape", "ScalarFromTensor", "TensorFromScalar", "DeepCopyOp", "ViewOp",
              "OutputGuard", "Unbroadcast"):
        return [x]
    if op in ("CheckAndRaise", "Assert"):
        if not all(np.all(c) for c in ins[1:]):
            raise AssertionError(a.get("msg", ""))
        return [x]
    if op == "Alloc":
        return [np.broadcast_to(x, [int(d) for d in ins[1:]]).copy()]
    if op == "AllocEmpty":
        return [np.zeros([int(d) for d in ins], dtype=a["dtype"])]
    if op == "Join":
        axis, parts = (a["axis"], ins) if "axis" in a else (int(ins[0]), ins[1:])
        return [np.concatenate(parts, axis=axis)]
    if op == "Split":
        if "axis" in a:
            axis, sizes = a["axis"], ins[1]
        else:
            axis, sizes = int(ins[1]), ins[2]
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    if op == "MakeVector":
        return [np.array([np.asarray(v).item() for v in ins])]
    if op == "ARange":
        return [np.arange(ins[0], ins[1], ins[2])]
    if op == "ExtractDiag":
        return [np.diagonal(x, a["offset"], a["axis1"], a["axis2"])]
    if op in ("Subtensor", "AdvancedSubtensor"):
        return [x[_index(a["idx_list"], ins)]]
    if op == "AdvancedSubtensor1":
        return [x[ins[1]]]
    if op == "IncSubtensor":
        return [_inc(x, ins[1], _index(a["idx_list"], ins), a, False)]
    if op == "AdvancedIncSubtensor":
        return [_inc(x, ins[1], _index(a["idx_list"], ins), a, not a.get("ignore_duplicates", False))]
    if op == "AdvancedIncSubtensor1":
        return [_inc(x, ins[1], ins[2], a, True)]
    reducers = {"Sum": np.sum, "Prod": np.prod, "Max": np.max, "Min": np.min, "All": np.all, "Any": np.any}
    if op == "CAReduce":
        op = {"Add": "Sum", "Mul": "Prod", "ScalarMaximum": "Max", "ScalarMinimum": "Min",
              "AND": "All", "OR": "Any"}[a["scalar_op"]]
    if op in reducers:
        return [np.asarray(reducers[op](x, axis=_axis(a["axis"], np.ndim(x))))]
    if op == "CumOp":
        f = np.cumsum if a["mode"] == "add" else np.cumprod
        return [f(x, axis=a["axis"])]
    if op == "Dot":
        return [np.dot(x, ins[1])]
    if op == "Cholesky":
        return [_cholesky(x, a)]
    if op == "SolveTriangular":
        return [scipy.linalg.solve_triangular(x, ins[1], lower=a.get("lower", False), trans=a.get("trans", 0),
                                              unit_diagonal=a.get("unit_diagonal", False))]
    if op == "Solve":
        return [scipy.linalg.solve(x, ins[1], assume_a=a.get("assume_a", "gen"), lower=a.get("lower", False))]
    if op == "MatrixInverse":
        return [np.linalg.inv(x)]
    if op == "Det":
        return [np.linalg.det(x)]
    if op == "SLogDet":
        return list(np.linalg.slogdet(x))
    if op == "IfElse":
        n = len(out_dtypes)
        return [np.array(v, copy=True) for v in (ins[1:1 + n] if x else ins[1 + n:])]
    out = _decomposition(op, a, ins)
    if out is not None:
        return out
    raise NotImplementedError(op)


def constants(doc, payload):
    out = {}
    for c in doc["constants"]:
        var = doc["variables"][c["var"]]
        if "data" in c:
            arr = np.array([_number(v) for v in c["data"]], dtype=var["dtype"])
        else:
            dt = np.dtype(var["dtype"]).newbyteorder("<")
            arr = np.frombuffer(payload, dt, c["nbytes"] // dt.itemsize, c["offset"])
        out[c["var"]] = arr.reshape(var["shape"])
    return out


def evaluate(doc, payload, args):
    """Run the graph; args maps input names to arrays (shared inputs default to their constants)."""
    env = constants(doc, payload)
    for i in doc["inputs"]:
        var = doc["variables"][i["var"]]
        if var["name"] in args:
            env[i["var"]] = np.asarray(args[var["name"]], dtype=var["dtype"])
        elif i["var"] not in env:
            raise KeyError(f"missing input {var['name']}")
    for n in doc["nodes"]:
        out_dtypes = [doc["variables"][o]["dtype"] for o in n["outputs"]]
        outs = tensor_apply(n, [env[i] for i in n["inputs"]], out_dtypes)
        for o, v, d in zip(n["outputs"], outs, out_dtypes):
            env[o] = np.asarray(v).astype(d)
    return [env[o] for o in doc["outputs"]]
