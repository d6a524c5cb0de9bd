"""Writes tests/data/ops_reduce/*.json: one-node Ember graphs for the
reduction, CumOp and linear-algebra ops, their inputs, and the results NumPy
and SciPy give (or the error they raise). Read by tests/unit/test_ops_reduce.cpp
and tests/unit/test_ops_linalg.cpp.

Each file: {"cases": [{"name", "graph", "inputs": [array], "outputs": [array]
| "error": substring, "rtol"}]}, array = {"dtype", "shape", "data"} with
floats' non-finite values as "nan"/"inf"/"-inf" (or "gen": "mod", see gen_mod).
Run: python3 tests/gen/gen_fixtures_ops_reduce.py
"""
import itertools
import json
import os

import numpy as np
import scipy.linalg as sla

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "ops_reduce")
rng = np.random.default_rng(20261129)


def gen_mod(shape):
    """Large inputs are not stored: x.flat[i] = (i*7919 % 1009)/1009 - 0.5,
    which C++ computes to the same bits (tests read {"gen": "mod"})."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return ((i * 7919 % 1009).astype(np.float64) / 1009.0 - 0.5).reshape(shape)


def enc(a):
    a = np.asarray(a)
    if a.size > 5000 and a.dtype == np.float64 and np.array_equal(a, gen_mod(a.shape)):
        return {"dtype": "float64", "shape": list(a.shape), "gen": "mod"}
    if a.dtype == np.bool_:
        data = [bool(v) for v in a.ravel()]
    elif a.dtype.kind == "f":
        data = [("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")) if not np.isfinite(v)
                else float(v) for v in a.ravel()]
    else:
        data = [int(v) for v in a.ravel()]
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": data}


def graph(op, ins, outs, attrs, static=True):
    """ins/outs: arrays (or (dtype, shape) for outputs known only by error)."""
    vars_ = []
    for k, a in enumerate(ins):
        a = np.asarray(a)
        shape = list(a.shape) if static else [None] * a.ndim
        vars_.append({"name": f"x{k}", "dtype": str(a.dtype), "shape": shape})
    for k, (dt, shape) in enumerate(outs):
        vars_.append({"name": f"y{k}", "dtype": dt, "shape": list(shape) if static else [None] * len(shape)})
    n = len(ins)
    return {"format": "ember-graph", "version": 1, "variables": vars_,
            "inputs": [{"var": k} for k in range(n)],
            "outputs": list(range(n, n + len(outs))),
            "nodes": [{"op": op, "inputs": list(range(n)), "outputs": list(range(n, n + len(outs))),
                       "attrs": attrs}]}


def case(name, op, ins, expected, attrs, rtol=0.0, static=True, out_specs=None, error=None):
    if out_specs is None:
        out_specs = [(str(np.asarray(e).dtype), np.asarray(e).shape) for e in expected]
    c = {"name": name, "graph": graph(op, ins, out_specs, attrs, static), "inputs": [enc(a) for a in ins],
         "rtol": rtol}
    if error is not None:
        c["error"] = error
    else:
        c["outputs"] = [enc(e) for e in expected]
    return c


def write(fname, cases):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, fname), "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))
    print(fname, len(cases), "cases")


# ---- reductions --------------------------------------------------------------

SUM_OUT = {"bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64", "uint8": "int64"}


def reduce_np(opname, x, axis):
    ax = None if axis is None else tuple(axis)
    if opname in ("Sum", "Prod"):
        acc = np.float64 if x.dtype.kind == "f" else np.int64
        f = np.sum if opname == "Sum" else np.prod
        r = f(x.astype(acc), axis=ax)
        out = SUM_OUT.get(str(x.dtype), str(x.dtype))
        return np.asarray(r).astype(out)
    if opname in ("Max", "Min"):
        f = np.max if opname == "Max" else np.min
        return np.asarray(f(x, axis=ax)).astype(x.dtype)
    f = np.all if opname == "All" else np.any
    return np.asarray(f(x, axis=ax))


def sample(dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.6
    if dtype in ("float64", "float32"):
        return rng.normal(size=shape).astype(dtype)
    lo, hi = (0, 4) if dtype == "uint8" else (-3, 4)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def reduce_cases():
    cases = []
    shape = (2, 3, 4)
    axis_sets = [None, []] + [list(c) for r in (1, 2, 3) for c in itertools.combinations(range(3), r)]
    axis_sets += [[-1], [0, -2]]
    named = {"Sum": "Add", "Prod": "Mul", "Max": "ScalarMaximum", "Min": "ScalarMinimum",
             "All": "AND", "Any": "OR"}
    for dt in ["float64", "float32", "int64", "int32", "int16", "int8", "uint8", "bool"]:
        x = sample(dt, shape)
        for opname in ["Sum", "Prod", "Max", "Min", "All", "Any"]:
            for axis in axis_sets:
                norm = None if axis is None else [a % 3 for a in axis]
                e = reduce_np(opname, x, norm)
                rtol = 1e-6 if dt == "float32" else 1e-13
                attrs = {"axis": axis}
                name = f"{opname}_{dt}_axis{'None' if axis is None else ''.join(map(str, axis))}"
                cases.append(case(name, opname, [x], [e], attrs, rtol))
                # The generic CAReduce spelling, with unknown static shapes.
                if axis is not None and len(axis) == 2:
                    cases.append(case("CAReduce_" + name, "CAReduce", [x], [e],
                                      {"axis": axis, "scalar_op": {"op": named[opname]}}, rtol, static=False))
    # NaN and infinities.
    xn = np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, -1.0], [-np.inf, np.inf, 0.5]])
    for opname in ["Sum", "Prod", "Max", "Min"]:
        for axis in [None, [0], [1]]:
            e = reduce_np(opname, xn, axis)
            cases.append(case(f"nan_{opname}_axis{axis}", opname, [xn], [e], {"axis": axis}, 1e-13))
    # float32 sums accumulate in float64 (values that lose bits in float32).
    xf = np.array([1e8, 1.0, -1e8, 1.0, 3.0, 1e-3], dtype=np.float32)
    cases.append(case("sum_float32_accumulates_in_float64", "Sum", [xf],
                      [np.float32(np.sum(xf.astype(np.float64)))], {"axis": None}, 0.0))
    # acc_dtype float32 keeps float32 arithmetic: compare loosely.
    cases.append(case("sum_acc_dtype_float32", "Sum", [xf[:4]], [np.float32(np.sum(xf[:4]))],
                      {"axis": None, "acc_dtype": "float32"}, 1e-6))
    # Larger arrays cross the leaf (128) and chunk (65536) sizes; reduce over
    # outer axes (column loop) and inner axes (row loop).
    for shape, axis in [((300,), None), ((70000,), None), ((300, 5), [0]), ((5, 300), [1]),
                        ((3, 70000), [1]), ((70000, 3), [0]), ((129, 7, 9), [0, 2])]:
        xl = gen_mod(shape)
        e = np.sum(xl, axis=None if axis is None else tuple(axis))
        cases.append(case(f"sum_large_{'x'.join(map(str, shape))}_axis{axis}", "Sum", [xl], [np.asarray(e)],
                          {"axis": axis}, 1e-11))
        e = np.max(xl, axis=None if axis is None else tuple(axis))
        cases.append(case(f"max_large_{'x'.join(map(str, shape))}_axis{axis}", "Max", [xl], [np.asarray(e)],
                          {"axis": axis}, 0.0))
    # Empty reductions.
    x0 = np.zeros((0, 3))
    cases.append(case("sum_empty_axis0_is_zero", "Sum", [x0], [np.zeros(3)], {"axis": [0]}))
    cases.append(case("prod_empty_axis0_is_one", "Prod", [x0], [np.ones(3)], {"axis": [0]}))
    cases.append(case("sum_empty_all_is_zero", "Sum", [x0], [np.asarray(0.0)], {"axis": None}))
    cases.append(case("all_empty_is_true", "All", [x0.astype(bool)], [np.asarray(True)], {"axis": None}))
    cases.append(case("any_empty_is_false", "Any", [x0.astype(bool)], [np.asarray(False)], {"axis": None}))
    cases.append(case("max_empty_axis1_is_empty", "Max", [x0], [np.zeros(0)], {"axis": [1]}))
    cases.append(case("max_empty_axis0_raises", "Max", [x0], None, {"axis": [0]},
                      out_specs=[("float64", (3,))],
                      error="zero-size array to reduction operation maximum which has no identity"))
    cases.append(case("min_empty_all_raises", "Min", [x0], None, {"axis": None}, out_specs=[("float64", ())],
                      error="zero-size array to reduction operation minimum which has no identity"))
    return cases


def cumop_cases():
    cases = []
    for dt in ["float64", "float32", "int64", "int32"]:
        x = sample(dt, (3, 4))
        for mode in ["add", "mul"]:
            for axis in [None, 0, 1, -1]:
                f = np.cumsum if mode == "add" else np.cumprod
                e = f(x, axis=axis).astype(dt)
                cases.append(case(f"cum{mode}_{dt}_axis{axis}", "CumOp", [x], [e], {"axis": axis, "mode": mode},
                                  1e-6 if dt == "float32" else 1e-14))
    x3 = rng.normal(size=(2, 3, 4))
    for axis in [0, 1, 2, None]:
        cases.append(case(f"cumsum_3d_axis{axis}", "CumOp", [x3], [np.cumsum(x3, axis=axis)],
                          {"axis": axis, "mode": "add"}, 1e-14, static=False))
    return cases


# ---- linear algebra -------------------------------------------------------------

def spd(n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def linalg_cases():
    cases = []
    R = 1e-12
    m, k, n = 3, 4, 5
    shapes = {"vv": ((k,), (k,)), "mv": ((m, k), (k,)), "vm": ((k,), (k, n)), "mm": ((m, k), (k, n))}
    for kind, (sa, sb) in shapes.items():
        for da, db in [("float64", "float64"), ("float32", "float32"), ("float32", "float64"),
                       ("int64", "int64"), ("int32", "float64"), ("int32", "int32"), ("int8", "int64")]:
            a, b = sample(da, sa), sample(db, sb)
            e = np.asarray(np.dot(a, b))
            rtol = 1e-5 if e.dtype == np.float32 else (R if e.dtype.kind == "f" else 0.0)
            cases.append(case(f"dot_{kind}_{da}_{db}", "Dot", [a, b], [e], {}, rtol))
    a, b = rng.normal(size=(3, 0)), rng.normal(size=(0, 2))
    cases.append(case("dot_empty_inner_is_zero", "Dot", [a, b], [np.zeros((3, 2))], {}))
    cases.append(case("dot_rejects_misaligned_at_call", "Dot", [rng.normal(size=(2, 3)), rng.normal(size=(4,))],
                      None, {}, static=False, out_specs=[("float64", (2,))], error="not aligned"))

    A = spd(4)
    for lower in [True, False]:
        e = sla.cholesky(A, lower=lower)
        cases.append(case(f"cholesky_lower{lower}", "Cholesky", [A], [e], {"lower": lower}, R))
    cases.append(case("cholesky_float32", "Cholesky", [A.astype(np.float32)],
                      [sla.cholesky(A.astype(np.float32), lower=True)], {"lower": True}, 1e-5))
    notpd = np.array([[1.0, 2.0], [2.0, 1.0]])
    cases.append(case("cholesky_raise_not_pd", "Cholesky", [notpd], None, {"lower": True, "on_error": "raise"},
                      out_specs=[("float64", (2, 2))], error="matrix is not positive definite"))
    cases.append(case("cholesky_nan_not_pd", "Cholesky", [notpd], [np.full((2, 2), np.nan)],
                      {"lower": True, "on_error": "nan"}))
    nanm = np.array([[np.nan, 0.0], [0.0, 1.0]])
    cases.append(case("cholesky_nan_input_raises", "Cholesky", [nanm], None, {"on_error": "raise"},
                      out_specs=[("float64", (2, 2))], error="matrix is not positive definite"))

    T = np.tril(rng.normal(size=(4, 4))) + 4 * np.eye(4)
    for lower in [True, False]:
        Am = T if lower else T.T
        for trans in [0, 1, "T"]:
            for unit in [False, True]:
                for bshape in [(4,), (4, 3)]:
                    b = rng.normal(size=bshape)
                    e = sla.solve_triangular(Am, b, lower=lower, trans=trans, unit_diagonal=unit)
                    cases.append(case(f"solve_triangular_lower{lower}_trans{trans}_unit{unit}_b{len(bshape)}",
                                      "SolveTriangular", [Am, b], [e],
                                      {"lower": lower, "trans": trans, "unit_diagonal": unit,
                                       "b_ndim": len(bshape)}, R))
    sing = np.tril(np.ones((3, 3)))
    sing[1, 1] = 0.0
    cases.append(case("solve_triangular_singular_raises", "SolveTriangular", [sing, np.ones(3)], None,
                      {"lower": True, "b_ndim": 1}, out_specs=[("float64", (3,))], error="singular matrix"))

    G = rng.normal(size=(4, 4))
    S = G + G.T
    P = spd(4)
    for assume, M in [("gen", G), ("sym", S), ("pos", P)]:
        for lower in [False, True]:
            Mi = M.copy()
            if assume != "gen":  # garbage in the unused triangle must be ignored
                if lower:
                    Mi[np.triu_indices(4, 1)] = 99.0
                else:
                    Mi[np.tril_indices(4, -1)] = 99.0
            for bshape in [(4,), (4, 2)]:
                b = rng.normal(size=bshape)
                e = sla.solve(Mi, b, assume_a=assume, lower=lower)
                cases.append(case(f"solve_{assume}_lower{lower}_b{len(bshape)}", "Solve", [Mi, b], [e],
                                  {"assume_a": assume, "lower": lower, "b_ndim": len(bshape)}, 1e-11))
    cases.append(case("solve_singular_raises", "Solve", [np.ones((3, 3)), np.ones(3)], None,
                      {"assume_a": "gen", "b_ndim": 1}, out_specs=[("float64", (3,))], error="matrix is singular"))
    cases.append(case("solve_pos_not_pd_raises", "Solve", [notpd, np.ones(2)], None,
                      {"assume_a": "pos", "b_ndim": 1}, out_specs=[("float64", (2,))],
                      error="matrix is not positive definite"))

    cases.append(case("matrix_inverse", "MatrixInverse", [G], [np.linalg.inv(G)], {}, 1e-11))
    cases.append(case("matrix_inverse_int_input", "MatrixInverse", [np.array([[2, 1], [1, 3]])],
                      [np.linalg.inv(np.array([[2.0, 1], [1, 3]]))], {}, R))
    cases.append(case("matrix_inverse_singular_raises", "MatrixInverse", [np.ones((2, 2))], None, {},
                      out_specs=[("float64", (2, 2))], error="matrix is singular"))
    for nm, M in [("gen", G), ("neg", -spd(3)), ("singular", np.ones((3, 3)))]:
        cases.append(case(f"det_{nm}", "Det", [M], [np.asarray(np.linalg.det(M))], {}, 1e-11))
        s, l = np.linalg.slogdet(M)
        cases.append(case(f"slogdet_{nm}", "SLogDet", [M], [np.asarray(s), np.asarray(l)], {}, 1e-11))
    cases.append(case("det_empty_is_one", "Det", [np.zeros((0, 0))], [np.asarray(1.0)], {}))
    # Strided views reach the kernels through Blockwise batches too.
    Ab = spd(3, (2, 4))
    cases.append(case("blockwise_cholesky", "Blockwise", [Ab], [np.linalg.cholesky(Ab)],
                      {"core_op": {"op": "Cholesky", "attrs": {"lower": True, "on_error": "raise"}},
                       "signature": "(m,m)->(m,m)"}, R))
    Aw = spd(3, (2, 1))
    bw = rng.normal(size=(4, 3, 2))
    e = np.linalg.solve(np.broadcast_to(Aw, (2, 4, 3, 3)), np.broadcast_to(bw, (2, 4, 3, 2)))
    cases.append(case("blockwise_solve_broadcasts_batch_dims", "Blockwise", [Aw, bw], [e],
                      {"core_op": {"op": "Solve", "attrs": {"assume_a": "gen", "lower": False, "b_ndim": 2}},
                       "signature": "(m,m),(m,n)->(m,n)"}, 1e-11))
    a3, b2 = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))
    cases.append(case("blockwise_matmul", "Blockwise", [a3, b2], [a3 @ b2],
                      {"core_op": {"op": "Dot", "attrs": {}}, "signature": "(m,k),(k,n)->(m,n)"}, R, static=False))
    D = rng.normal(size=(5, 3, 3))
    s, l = np.linalg.slogdet(D)
    cases.append(case("blockwise_slogdet_two_outputs", "Blockwise", [D], [s, l],
                      {"core_op": {"op": "SLogDet", "attrs": {}}, "signature": "(m,m)->(),()"}, 1e-11))
    cases.append(case("blockwise_det", "Blockwise", [D], [np.linalg.det(D)],
                      {"core_op": {"op": "Det", "attrs": {}}, "signature": "(m,m)->()"}, 1e-11))
    Lb = np.tril(rng.normal(size=(3, 4, 4))) + 4 * np.eye(4)
    bb = rng.normal(size=(3, 4))
    e = np.stack([sla.solve_triangular(Lb[i], bb[i], lower=True) for i in range(3)])
    cases.append(case("blockwise_solve_triangular_vector_b", "Blockwise", [Lb, bb], [e],
                      {"core_op": {"op": "SolveTriangular", "attrs": {"lower": True, "b_ndim": 1}},
                       "signature": "(m,m),(m)->(m)"}, R))
    cases.append(case("blockwise_inverse_empty_batch", "Blockwise", [np.zeros((0, 2, 2))], [np.zeros((0, 2, 2))],
                      {"core_op": {"op": "MatrixInverse", "attrs": {}}, "signature": "(m,m)->(m,m)"}))
    bad = spd(2, (2,))
    bad[1] = notpd
    cases.append(case("blockwise_cholesky_failure_names_the_error", "Blockwise", [bad], None,
                      {"core_op": {"op": "Cholesky", "attrs": {"on_error": "raise"}}, "signature": "(m,m)->(m,m)"},
                      out_specs=[("float64", (2, 2, 2))], error="matrix is not positive definite"))
    e = np.stack([sla.cholesky(bad[0], lower=True), np.full((2, 2), np.nan)])
    cases.append(case("blockwise_cholesky_nan_per_batch", "Blockwise", [bad], [e],
                      {"core_op": {"op": "Cholesky", "attrs": {"on_error": "nan"}}, "signature": "(m,m)->(m,m)"},
                      R))
    return cases


if __name__ == "__main__":
    write("reduce.json", reduce_cases())
    write("cumop.json", cumop_cases())
    write("linalg.json", linalg_cases())
