#!/usr/bin/env python3
"""Writes NumPy-computed fixtures for the shape and indexing ops into
tests/data/ops_index/<case>.json.

Each file: {"graph": <ember graph>, "runs": [{"inputs": [arr...],
"expected": [arr...]} or {"inputs": [...], "error": "substring"}]} or, for
graphs the loader must reject, {"graph": ..., "load_error": ["substr", ...]}.
An array is {"dtype", "shape", "data"} with data flat in C order.
"""
import json
import math
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "ops_index")
rng = np.random.default_rng(20261129)


def enc_val(v, dtype):
    if dtype == "bool":
        return bool(v)
    if dtype.startswith("float"):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    return int(v)


def enc(a):
    a = np.asarray(a)
    dt = str(a.dtype)
    return {"dtype": dt, "shape": list(a.shape), "data": [enc_val(v, dt) for v in a.ravel()]}


class G:
    def __init__(self):
        self.vars, self.inputs, self.consts, self.nodes, self.outputs = [], [], [], [], []

    def var(self, dtype, shape):
        self.vars.append({"dtype": str(dtype), "shape": list(shape)})
        return len(self.vars) - 1

    def inp(self, dtype, shape):
        v = self.var(dtype, shape)
        self.inputs.append({"var": v})
        return v

    def const(self, a):
        a = np.asarray(a)
        v = self.var(a.dtype, a.shape)
        self.consts.append({"var": v, "data": enc(a)["data"]})
        return v

    def node(self, op, inputs, outs, **attrs):
        ids = [self.var(d, s) for d, s in outs]
        self.nodes.append({"op": op, "inputs": list(inputs), "outputs": ids, "attrs": attrs})
        return ids if len(ids) > 1 else ids[0]

    def json(self):
        return {"format": "ember-graph", "version": 1, "variables": self.vars, "inputs": self.inputs,
                "outputs": self.outputs, "constants": self.consts, "nodes": self.nodes}


CASES = {}


def case(name, g, runs=None, load_error=None):
    d = {"graph": g.json()}
    if load_error is not None:
        d["load_error"] = load_error
    else:
        d["runs"] = runs
    CASES[name] = d


def ok(inputs, expected):
    return {"inputs": [enc(a) for a in inputs], "expected": [enc(np.asarray(e)) for e in expected]}


def err(inputs, msg):
    return {"inputs": [enc(a) for a in inputs], "error": msg}


def unknown(a):
    return [None] * np.asarray(a).ndim


def i64(v):
    return np.array(v, dtype=np.int64)


def fl(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- shape ops

def shape_cases():
    x = fl(2, 3, 4)
    g = G()
    a = g.inp("float64", [None] * 3)
    g.outputs = [g.node("DimShuffle", [a], [("float64", [None] * 3)], new_order=[2, 0, 1])]
    case("dimshuffle_transpose", g, [ok([x], [x.transpose(2, 0, 1)])])

    x = fl(3, 1)
    g = G()
    a = g.inp("float64", [None, 1])
    y = g.node("DimShuffle", [a], [("float64", [1, None])], new_order=["x", 0])
    z = g.node("DimShuffle", [y], [("float64", [None, 1, 1])], new_order=[1, "x", 0])
    g.outputs = [y, z]
    case("dimshuffle_x_and_drop", g, [ok([x], [x[:, 0][None, :], x[:, 0][:, None, None]])])

    g = G()
    a = g.inp("float64", [None, 3])
    g.outputs = [g.node("DimShuffle", [a], [("float64", [None])], new_order=[0])]
    case("dimshuffle_rejects_dropping_non_broadcastable_axis", g,
         load_error=["node 0", "DimShuffle", "new_order", "axis 1"])

    x = fl(2, 6)
    g = G()
    a = g.inp("float64", [None, None])
    s = g.const(i64([3, -1]))
    r = g.node("Reshape", [a, s], [("float64", [3, None])], ndim=2)
    t = g.node("DimShuffle", [a], [("float64", [None, None])], new_order=[1, 0])
    s1 = g.const(i64([-1]))
    r2 = g.node("Reshape", [t, s1], [("float64", [None])], ndim=1)
    g.outputs = [r, r2]
    case("reshape_infers_minus_one_and_copies_strided_input", g,
         [ok([x], [x.reshape(3, -1), x.T.reshape(-1)]), err([fl(2, 5)], "cannot reshape")])

    g = G()
    a = g.inp("float64", [None])
    s = g.inp("int32", [2])
    g.outputs = [g.node("Reshape", [a, s], [("float64", [None, None])], ndim=2)]
    x = fl(12)
    case("reshape_shape_from_input", g,
         [ok([x, np.array([-1, 4], np.int32)], [x.reshape(-1, 4)]),
          ok([x, np.array([2, 6], np.int32)], [x.reshape(2, 6)]),
          err([x, np.array([-1, -1], np.int32)], "one unknown"),
          err([x, np.array([5, 3], np.int32)], "cannot reshape")])

    x = fl(2, 5, 3)
    g = G()
    a = g.inp("float64", [None] * 3)
    sh = g.node("Shape", [a], [("int64", [3])])
    s1 = g.node("Shape_i", [a], [("int64", [])], i=1)
    g.outputs = [sh, s1]
    case("shape_and_shape_i", g, [ok([x], [i64(x.shape), i64(5)])])

    g = G()
    a = g.inp("float64", [None, None])
    n = g.inp("int64", [])
    c3 = g.const(i64(3))
    g.outputs = [g.node("SpecifyShape", [a, n], [("float64", [None, None])],
                        shape=[None, {"input": 1}]),
                 g.node("SpecifyShape", [a, c3], [("float64", [None, 3])],
                        shape=[None, {"input": 1}])]
    x = fl(4, 3)
    case("specify_shape_checks_dims", g,
         [ok([x, i64(3)], [x, x]), err([x, i64(4)], "expected 4"),
          err([fl(4, 4), i64(4)], "dim 1 of input has shape 4, expected 3")])

    outs = []
    g = G()
    a = g.inp("float64", [None, None])
    s = g.inp("float64", [])
    for op in ["DeepCopyOp", "ViewOp", "OutputGuard", "Unbroadcast"]:
        outs.append(g.node(op, [a], [("float64", [None, None])]))
    for op in ["ScalarFromTensor", "TensorFromScalar"]:
        outs.append(g.node(op, [s], [("float64", [])]))
    g.outputs = outs
    x = fl(2, 3)
    case("passthrough_ops_return_input", g, [ok([x, np.float64(2.5)], [x] * 4 + [np.float64(2.5)] * 2)])

    g = G()
    a = g.inp("float64", [None])
    c = g.inp("bool", [])
    c2 = g.inp("int8", [None])
    g.outputs = [g.node("CheckAndRaise", [a, c, c2], [("float64", [None])], msg="sigma must be positive")]
    x = fl(3)
    case("check_and_raise_reports_message", g,
         [ok([x, np.bool_(True), np.array([1, 2], np.int8)], [x]),
          err([x, np.bool_(False), np.array([1, 2], np.int8)], "sigma must be positive"),
          err([x, np.bool_(True), np.array([1, 0], np.int8)], "sigma must be positive")])

    g = G()
    v = g.inp("float64", [None])
    d0 = g.inp("int64", [])
    d1 = g.inp("int64", [])
    al = g.node("Alloc", [v, d0, d1], [("float64", [None, None])])
    w = g.inp("float32", [None, 1])
    d2 = g.const(i64(4))
    al2 = g.node("Alloc", [w, d0, d2], [("float32", [None, 4])])
    s = g.inp("int32", [])
    al3 = g.node("Alloc", [s, d1], [("int32", [None])])
    g.outputs = [al, al2, al3]
    vv = fl(3)
    ww = fl(2, 1, dtype=np.float32)
    case("alloc_broadcasts_value", g,
         [ok([vv, i64(2), i64(3), ww, np.int32(7)],
             [np.broadcast_to(vv, (2, 3)), np.broadcast_to(ww, (2, 4)), np.full(3, 7, np.int32)]),
          err([vv, i64(2), i64(4), ww, np.int32(7)], "cannot be broadcast"),
          err([vv, i64(2), i64(-3), ww, np.int32(7)], "negative")])

    g = G()
    d0 = g.inp("int64", [])
    c = g.const(i64(3))
    g.outputs = [g.node("AllocEmpty", [d0, c], [("float32", [None, 3])], dtype="float32")]
    case("alloc_empty_is_zero_filled", g, [ok([i64(2)], [np.zeros((2, 3), np.float32)])])

    a0, a1, a2 = fl(2, 3), fl(2, 3), fl(1, 3)
    b0, b1 = fl(2, 1), fl(2, 4)
    g = G()
    x = g.inp("float64", [None, 3])
    y = g.inp("float64", [None, 3])
    z = g.inp("float64", [None, 3])
    j0 = g.node("Join", [x, y, z], [("float64", [None, 3])], axis=0)
    p = g.inp("float64", [2, None])
    q = g.inp("float64", [2, None])
    j1 = g.node("Join", [p, q], [("float64", [2, None])], axis=-1)
    ax = g.const(i64(1))
    j2 = g.node("Join", [ax, p, q], [("float64", [2, None])])
    axi = g.inp("int64", [])
    j3 = g.node("Join", [axi, x, y], [("float64", [None, None])])
    k = g.inp("int32", [None, 3])
    j4 = g.node("Join", [x, k], [("float64", [None, 3])], axis=0)
    g.outputs = [j0, j1, j2, j3, j4]
    kk = np.arange(6, dtype=np.int32).reshape(2, 3)
    case("join_along_each_axis", g,
         [ok([a0, a1, a2, b0, b1, i64(-1), kk],
             [np.concatenate([a0, a1, a2], 0), np.concatenate([b0, b1], 1), np.concatenate([b0, b1], 1),
              np.concatenate([a0, a1], -1), np.concatenate([a0, kk], 0)]),
          ok([a0, a1, a2, b0, b1, i64(0), kk],
             [np.concatenate([a0, a1, a2], 0), np.concatenate([b0, b1], 1), np.concatenate([b0, b1], 1),
              np.concatenate([a0, a1], 0), np.concatenate([a0, kk], 0)]),
          err([a0, fl(3, 3), a2, b0, b1, i64(1), kk], "incompatible")])

    xx = fl(4, 6)
    g = G()
    x = g.inp("float64", [None, None])
    sp = g.inp("int64", [2])
    o0 = g.node("Split", [x, sp], [("float64", [None, None])] * 2, axis=0, len_splits=2)
    sp3 = g.const(i64([2, 0, 4]))
    o1 = g.node("Split", [x, sp3], [("float64", [None, None])] * 3, axis=-1, len_splits=3)
    axc = g.const(i64(1))
    sp2 = g.const(i64([5, 1]))
    o2 = g.node("Split", [x, axc, sp2], [("float64", [None, None])] * 2, len_splits=2)
    g.outputs = list(o0) + list(o1) + list(o2)
    case("split_along_each_axis", g,
         [ok([xx, i64([1, 3])],
             np.split(xx, [1], 0) + np.split(xx, [2, 2], 1) + np.split(xx, [5], 1)),
          err([xx, i64([1, 4])], "sum to 5")])

    g = G()
    s0 = g.inp("float64", [])
    s1 = g.inp("int64", [])
    s2 = g.const(np.float64(-0.0))
    g.outputs = [g.node("MakeVector", [s0, s1, s2], [("float64", [3])])]
    case("make_vector_converts_scalars", g,
         [ok([np.float64(1.5), i64(-7)], [np.array([1.5, -7.0, -0.0])])])

    ar_runs = []
    g = G()
    outs = []
    inputs = []
    specs = [("int64", (0, 10, 3)), ("int64", (10, 0, -3)), ("int64", (5, 0, 1)),
             ("float64", (0.1, 1.0, 0.1)), ("float64", (-1.0, 2.5, 0.3)), ("float32", (0.0, 1.0, 0.1)),
             ("float32", (1.0, -2.0, -0.35)), ("int8", (-5, 20, 4)), ("int32", (3, -7, -2))]
    expected = []
    for dt, (a, b, c) in specs:
        ids = [g.inp(dt, []) for _ in range(3)]
        outs.append(g.node("ARange", ids, [(dt, [None])]))
        inputs += [np.array(v, dtype=dt) for v in (a, b, c)]
        expected.append(np.arange(np.array(a, dt).item(), np.array(b, dt).item(), np.array(c, dt).item(),
                                  dtype=dt))
    fi = [g.inp("float64", []) for _ in range(3)]
    outs.append(g.node("ARange", fi, [("int64", [None])]))
    inputs += [np.float64(0.5), np.float64(3.2), np.float64(1.0)]
    expected.append(np.arange(0.5, 3.2, 1.0, dtype=np.int64))
    g.outputs = outs
    bad = list(inputs)
    bad[2] = i64(0)
    case("arange_matches_numpy_for_each_dtype", g, [ok(inputs, expected), err(bad, "step")])

    x2 = fl(3, 4)
    x3 = fl(2, 3, 4)
    g = G()
    a = g.inp("float64", [None, None])
    b = g.inp("float64", [None, None, None])
    outs = [g.node("ExtractDiag", [a], [("float64", [None])], offset=o, axis1=0, axis2=1) for o in (0, 1, -1, 5, -3)]
    outs.append(g.node("ExtractDiag", [b], [("float64", [None, None])], offset=1, axis1=1, axis2=2))
    outs.append(g.node("ExtractDiag", [b], [("float64", [None, None])], offset=-1, axis1=2, axis2=0))
    g.outputs = outs
    case("extract_diag_offsets_and_axes", g,
         [ok([x2, x3], [np.diagonal(x2, o) for o in (0, 1, -1, 5, -3)] +
             [np.diagonal(x3, 1, 1, 2), np.diagonal(x3, -1, 2, 0)])])


# ---------------------------------------------------------------- index ops

def sl(start=None, stop=None, step=None):
    return {"type": "slice", "start": start, "stop": stop, "step": step}


def ix(v):
    return {"type": "index", "value": v}


def arr(k):
    return {"type": "array", "input": k}


NEWAXIS = {"type": "newaxis"}


def index_cases():
    x = np.arange(10, dtype=np.float64) * 1.5
    g = G()
    a = g.inp("float64", [None])
    slices = [(8, 1, -2), (None, None, -1), (-1, -11, -3), (5, 2, None), (3, 3, None), (-100, 100, None),
              (100, None, None), (None, -100, -1), (None, 100, -4), (-3, None, None), (7, -100, -2)]
    g.outputs = [g.node("Subtensor", [a], [("float64", [None])], idx_list=[sl(*s)]) for s in slices]
    case("subtensor_slices_match_python", g, [ok([x], [x[slice(*s)] for s in slices])])

    x = fl(4, 5)
    g = G()
    a = g.inp("float64", [None, None])
    o1 = g.node("Subtensor", [a], [("float64", [None])], idx_list=[ix(-1), sl(1, -1)])
    o2 = g.node("Subtensor", [a], [("float64", [])], idx_list=[ix(-4), ix(-5)])
    o3 = g.node("Subtensor", [a], [("float64", [None, None])], idx_list=[sl(None, None, -1)])
    o4 = g.node("Subtensor", [o3], [("float64", [None])], idx_list=[sl(None, None, 2), ix(3)])
    g.outputs = [o1, o2, o3, o4]
    case("subtensor_negative_indices_and_chained_views", g,
         [ok([x], [x[-1, 1:-1], x[-4, -5], x[::-1], x[::-1][::2, 3]])])

    g = G()
    a = g.inp("float64", [None, None])
    i = g.inp("int64", [])
    g.outputs = [g.node("Subtensor", [a, i], [("float64", [None])], idx_list=[sl(), ix({"input": 1})])]
    case("subtensor_index_out_of_bounds_is_call_error", g,
         [ok([x, i64(-5)], [x[:, -5]]),
          err([x, i64(5)], "index 5 is out of bounds for axis 1 with size 5"),
          err([x, i64(-6)], "index -6 is out of bounds for axis 1 with size 5")])

    x = fl(12)
    g = G()
    a = g.inp("float64", [None])
    s, e, st = g.inp("int64", []), g.inp("int32", []), g.inp("int8", [])
    g.outputs = [g.node("Subtensor", [a, s, e, st], [("float64", [None])],
                        idx_list=[sl({"input": 1}, {"input": 2}, {"input": 3})])]
    runs = []
    for (p, q, r) in [(1, 9, 2), (-2, 0, -3), (20, -20, -1), (0, 0, 1), (-30, 30, 5)]:
        runs.append(ok([x, i64(p), np.int32(q), np.int8(r)], [x[p:q:r]]))
    runs.append(err([x, i64(0), np.int32(5), np.int8(0)], "step cannot be zero"))
    case("subtensor_slice_bounds_from_inputs", g, runs)

    g = G()
    a = g.inp("float64", [None])
    g.outputs = [g.node("Subtensor", [a], [("float64", [])], idx_list=[ix(0), ix(0)])]
    case("subtensor_rejects_too_many_indices_with_node_index", g,
         load_error=["node 0", "Subtensor", "idx_list", "too many indices"])

    g = G()
    a = g.inp("float64", [None, None])
    g.outputs = [g.node("Subtensor", [a], [("float64", [None, None])], idx_list=[sl(None, None, 0)])]
    case("subtensor_rejects_zero_step_literal", g, load_error=["node 0", "idx_list[0].step", "zero"])

    x = fl(4, 6)
    y1 = fl(3)
    y2 = fl(2, 1)
    g = G()
    a = g.inp("float64", [None, None])
    b = g.inp("float64", [None])
    c = g.inp("float64", [None, None])
    i = g.inp("int64", [])
    o1 = g.node("IncSubtensor", [a, b], [("float64", [None, None])], idx_list=[ix(1), sl(None, None, 2)],
                set_instead_of_inc=False)
    o2 = g.node("IncSubtensor", [a, b], [("float64", [None, None])], idx_list=[ix(-1), sl(5, None, -2)],
                set_instead_of_inc=True)
    o3 = g.node("IncSubtensor", [a, c, i], [("float64", [None, None])],
                idx_list=[sl(None, None, -2), sl({"input": 2}, None)], set_instead_of_inc=False)
    g.outputs = [o1, o2, o3]

    def upd(f):
        z = x.copy()
        f(z)
        return z

    def e1(z): z[1, ::2] += y1
    def e2(z): z[-1, 5::-2] = y1
    def e3(z): z[::-2, 2:] += y2
    case("inc_subtensor_set_and_inc_broadcast_y", g,
         [ok([x, y1, y2, i64(2)], [upd(e1), upd(e2), upd(e3)]),
          err([x, fl(2), y2, i64(2)], "could not be broadcast")])

    x = fl(5, 3)
    g = G()
    a = g.inp("float64", [None, None])
    idx = g.inp("int64", [None])
    idx32 = g.inp("int32", [None])
    g.outputs = [g.node("AdvancedSubtensor1", [a, idx], [("float64", [None, None])]),
                 g.node("AdvancedSubtensor1", [a, idx32], [("float64", [None, None])])]
    ii = i64([4, -1, 0, 0, -5, 2])
    case("advanced_subtensor1_gathers_rows", g,
         [ok([x, ii, ii.astype(np.int32)], [x[ii], x[ii]]),
          err([x, i64([0, 5]), ii.astype(np.int32)], "index 5 is out of bounds for axis 0 with size 5")])

    xv = fl(6)
    xm = fl(4, 3)
    yv = fl(7)
    ym = fl(5, 3)
    iv = i64([0, 2, 2, -1, 0, 2, 5])
    im = i64([1, 1, -3, 3, 1])
    g = G()
    a = g.inp("float64", [None])
    b = g.inp("float64", [None])
    c = g.inp("int64", [None])
    m = g.inp("float64", [None, None])
    n = g.inp("float64", [None, None])
    d = g.inp("int64", [None])
    r = g.inp("float64", [None])
    g.outputs = [g.node("AdvancedIncSubtensor1", [a, b, c], [("float64", [None])], set_instead_of_inc=False),
                 g.node("AdvancedIncSubtensor1", [a, b, c], [("float64", [None])], set_instead_of_inc=True),
                 g.node("AdvancedIncSubtensor1", [m, n, d], [("float64", [None, None])], set_instead_of_inc=False),
                 g.node("AdvancedIncSubtensor1", [m, r, d], [("float64", [None, None])], set_instead_of_inc=False)]
    e = [xv.copy(), xv.copy(), xm.copy(), xm.copy()]
    np.add.at(e[0], iv, yv)
    e[1][iv] = yv
    np.add.at(e[2], im, ym)
    rr = fl(3)
    np.add.at(e[3], im, rr)
    case("advanced_inc_subtensor1_duplicates_accumulate_like_add_at", g,
         [ok([xv, yv, iv, xm, ym, im, rr], e),
          err([xv, yv, i64([0, 1, 2, 3, 4, 5, 6]), xm, ym, im, rr], "out of bounds")])

    x = fl(3, 4, 5)
    mask2 = rng.random((3, 4)) > 0.5
    mask1 = np.array([True, False, True, True])
    g = G()
    a = g.inp("float64", [None] * 3)
    i1 = g.inp("int64", [None])
    i2 = g.inp("int64", [None])
    i3 = g.inp("int64", [None, 1])
    mk2 = g.inp("bool", [None, None])
    mk1 = g.inp("bool", [None])
    s = g.inp("int64", [])
    f3 = [("float64", [None] * 3)]
    f2 = [("float64", [None] * 2)]
    outs = [
        g.node("AdvancedSubtensor", [a, i1], f3, idx_list=[sl(), arr(1), sl(1, 4)]),        # x[:, i1, 1:4]
        g.node("AdvancedSubtensor", [a, i1, i2], f2, idx_list=[arr(1), arr(2)]),            # x[i1, i2]
        g.node("AdvancedSubtensor", [a, i3, i2], f3, idx_list=[arr(1), sl(), arr(2)]),      # x[i3, :, i2]
        g.node("AdvancedSubtensor", [a, s, i2], f2, idx_list=[ix({"input": 1}), sl(), arr(2)]),  # x[s, :, i2]
        g.node("AdvancedSubtensor", [a, s, i2], f2, idx_list=[sl(), ix({"input": 1}), arr(2)]),  # x[:, s, i2]
        g.node("AdvancedSubtensor", [a, i2], [("float64", [None] * 4)],
               idx_list=[NEWAXIS, sl(None, None, -1), arr(1)]),                             # x[None, ::-1, i2]
        g.node("AdvancedSubtensor", [a, mk2], f2, idx_list=[arr(1)]),                       # x[mask2]
        g.node("AdvancedSubtensor", [a, mk1], f3, idx_list=[sl(), arr(1)]),                 # x[:, mask1]
        g.node("AdvancedSubtensor", [a, i3, i1], f3, idx_list=[sl(), arr(1), arr(2)]),      # x[:, i3, i1]
    ]
    g.outputs = outs
    I1 = i64([2, -1, 0, 1])
    I2 = i64([3, 0, -2, 1])
    I3 = i64([[0], [2], [-1]])
    S = i64(-2)
    expected = [x[:, I1, 1:4], x[I1, I2], x[I3, :, I2], x[S, :, I2], x[:, S, I2], x[None, ::-1, I2],
                x[mask2], x[:, mask1], x[:, I3, I1]]
    case("advanced_subtensor_mixes_arrays_slices_masks", g,
         [ok([x, I1, I2, I3, mask2, mask1, S], expected),
          err([x, I1, i64([0, 1, 2]), I3, mask2, mask1, S], "could not be broadcast"),
          err([x, I1, I2, I3, np.ones((2, 4), bool), mask1, S], "boolean index"),
          err([x, I1, i64([4, 0, 1, 1]), I3, mask2, mask1, S], "index 4 is out of bounds for axis 1 with size 4")])

    x = fl(4, 3)
    g = G()
    a = g.inp("float64", [None, None])
    y = g.inp("float64", [None, None])
    yr = g.inp("float64", [None])
    i1 = g.inp("int64", [None])
    i2 = g.inp("int64", [None])
    mk = g.inp("bool", [None, None])
    ym = g.inp("float64", [None])
    f2 = [("float64", [None, None])]
    outs = [
        g.node("AdvancedIncSubtensor", [a, y, i1], f2, idx_list=[arr(2)], set_instead_of_inc=False,
               ignore_duplicates=False),
        g.node("AdvancedIncSubtensor", [a, y, i1], f2, idx_list=[arr(2)], set_instead_of_inc=True,
               ignore_duplicates=False),
        g.node("AdvancedIncSubtensor", [a, y, i1], f2, idx_list=[arr(2)], set_instead_of_inc=False,
               ignore_duplicates=True),
        g.node("AdvancedIncSubtensor", [a, yr, i1, i2], f2, idx_list=[arr(2), arr(3)],
               set_instead_of_inc=False, ignore_duplicates=False),
        g.node("AdvancedIncSubtensor", [a, yr, i1], f2, idx_list=[sl(None, None, -1), arr(2)],
               set_instead_of_inc=False, ignore_duplicates=False),
        g.node("AdvancedIncSubtensor", [a, ym, mk], f2, idx_list=[arr(2)], set_instead_of_inc=False,
               ignore_duplicates=False),
    ]
    g.outputs = outs
    I1 = i64([2, 0, 2, -2, 2])
    YY = fl(5, 3)
    YR = fl(5)
    I2 = i64([1, 1, 1, -1, 0])
    MK = rng.random((4, 3)) > 0.4
    YM = fl(int(MK.sum()))
    case("advanced_inc_subtensor_add_at_set_and_ignore_duplicates", g,
         [ok([x, YY, YR, I1, I2, MK, YM], _adv_inc_expected(x, YY, YR, I1, I2, MK, YM))])


def _adv_inc_expected(x, YY, YR, I1, I2, MK, YM):
    e = [x.copy() for _ in range(6)]
    np.add.at(e[0], I1, YY)
    e[1][I1] = YY
    e[2][I1] += YY
    np.add.at(e[3], (I1, I2), YR)
    # x[::-1, I1] += yr broadcast over rows: yr has len(I1) entries
    np.add.at(e[4], (slice(None, None, -1), I1), np.broadcast_to(YR, (x.shape[0], len(I1))))
    np.add.at(e[5], MK, YM)
    return e


def rejection_cases():
    """Graphs the loader must reject, each naming node, op and field."""
    def one(name, build, parts):
        g = G()
        build(g)
        case(name, g, load_error=parts)

    def adv_float_index(g):
        a = g.inp("float64", [None])
        i = g.inp("float64", [None])
        g.outputs = [g.node("AdvancedSubtensor", [a, i], [("float64", [None])], idx_list=[arr(1)])]
    one("advanced_subtensor_rejects_float_index_array", adv_float_index,
        ["node 0", "AdvancedSubtensor", "idx_list[0]", "float64"])

    def inc_upcast(g):
        a = g.inp("int32", [None])
        y = g.inp("float64", [None])
        g.outputs = [g.node("IncSubtensor", [a, y], [("int32", [None])], idx_list=[sl(1, None)],
                            set_instead_of_inc=False)]
    one("inc_subtensor_rejects_y_that_would_upcast_x", inc_upcast, ["node 0", "IncSubtensor", "inputs", "float64"])

    def split_count(g):
        a = g.inp("float64", [None])
        sp = g.const(i64([1, 2]))
        g.outputs = [g.node("Split", [a, sp], [("float64", [None])], axis=0, len_splits=2)]
    one("split_rejects_output_count_not_len_splits", split_count, ["node 0", "Split"])

    def join_rank(g):
        a = g.inp("float64", [None])
        b = g.inp("float64", [None, None])
        g.outputs = [g.node("Join", [a, b], [("float64", [None])], axis=0)]
    one("join_rejects_inputs_of_other_rank", join_rank, ["node 0", "Join", "inputs", "input 1 has rank 2"])

    def reshape_two(g):
        a = g.inp("float64", [None])
        s = g.const(i64([-1, -1]))
        g.outputs = [g.node("Reshape", [a, s], [("float64", [None, None])], ndim=2)]
    one("reshape_rejects_two_unknown_dims_in_constant_shape", reshape_two, ["node 0", "Reshape", "-1"])

    def unused(g):
        a = g.inp("float64", [None])
        i = g.inp("int64", [])
        j = g.inp("int64", [])
        g.outputs = [g.node("Subtensor", [a, i, j], [("float64", [])], idx_list=[ix({"input": 1})])]
    one("subtensor_rejects_unused_index_input", unused, ["node 0", "idx_list", "input 2"])

    def basic_array(g):
        a = g.inp("float64", [None])
        i = g.inp("int64", [None])
        g.outputs = [g.node("Subtensor", [a, i], [("float64", [None])], idx_list=[arr(1)])]
    one("subtensor_rejects_array_entries", basic_array, ["node 0", "idx_list[0]", "Advanced"])

    def bad_ref(g):
        a = g.inp("float64", [None])
        g.outputs = [g.node("Subtensor", [a], [("float64", [None])], idx_list=[sl({"input": 3})])]
    one("subtensor_rejects_missing_input_reference", bad_ref, ["node 0", "idx_list[0].start", "input 3"])

    def alloc_static(g):
        v = g.inp("float64", [3])
        d = g.const(i64(4))
        g.outputs = [g.node("Alloc", [v, d], [("float64", [4])])]
    one("alloc_rejects_value_that_cannot_broadcast", alloc_static, ["node 0", "Alloc", "cannot be broadcast"])

    def diag_axes(g):
        a = g.inp("float64", [None, None])
        g.outputs = [g.node("ExtractDiag", [a], [("float64", [None])], offset=0, axis1=1, axis2=-1)]
    one("extract_diag_rejects_equal_axes", diag_axes, ["node 0", "ExtractDiag", "axis2"])

    def shape_i(g):
        a = g.inp("float64", [None, None])
        g.outputs = [g.node("Shape_i", [a], [("int64", [])], i=2)]
    one("shape_i_rejects_axis_out_of_range", shape_i, ["node 0", "Shape_i", "field 'i'"])

    def dim_twice(g):
        a = g.inp("float64", [None, None])
        g.outputs = [g.node("DimShuffle", [a], [("float64", [None, None])], new_order=[0, 0])]
    one("dimshuffle_rejects_repeated_axis", dim_twice, ["node 0", "new_order", "twice"])

    def out_dtype(g):
        a = g.inp("float64", [None])
        g.outputs = [g.node("Subtensor", [a], [("float32", [None])], idx_list=[sl(1)])]
    one("subtensor_rejects_wrong_output_dtype", out_dtype, ["node 0", "outputs", "float32"])

    def lit_oob(g):
        a = g.inp("float64", [3, None])
        g.outputs = [g.node("Subtensor", [a], [("float64", [None])], idx_list=[ix(-4)])]
    one("subtensor_rejects_literal_index_outside_static_dim", lit_oob,
        ["node 0", "idx_list[0].value", "index -4 is out of bounds for axis 0 with size 3"])

    def bad_static(g):
        a = g.inp("float64", [10])
        g.outputs = [g.node("Subtensor", [a], [("float64", [3])], idx_list=[sl(8, 1, -2)])]
    one("subtensor_rejects_output_static_shape_that_disagrees", bad_static, ["node 0", "outputs", "(3,)", "(4,)"])

    def inc_static(g):
        a = g.inp("float64", [6])
        y = g.inp("float64", [2])
        g.outputs = [g.node("IncSubtensor", [a, y], [("float64", [6])], idx_list=[sl(None, None, 2)],
                            set_instead_of_inc=False)]
    one("inc_subtensor_rejects_y_static_shape_that_cannot_broadcast", inc_static,
        ["node 0", "IncSubtensor", "cannot be broadcast"])


def more_index_cases():
    # dtypes, empty index arrays, non-contiguous inputs, 2-d index arrays
    x = np.arange(20, dtype=np.int32).reshape(5, 4) * 3 - 7
    g = G()
    a = g.inp("int32", [None, None])
    iu = g.inp("uint8", [None])
    i2 = g.inp("int16", [None, None])
    ie = g.inp("int64", [None])
    t = g.node("DimShuffle", [a], [("int32", [None, None])], new_order=[1, 0])
    outs = [g.node("AdvancedSubtensor1", [a, iu], [("int32", [None, None])]),
            g.node("AdvancedSubtensor", [a, i2], [("int32", [None, None, None])], idx_list=[arr(1)]),
            g.node("AdvancedSubtensor1", [a, ie], [("int32", [None, None])]),
            g.node("AdvancedSubtensor1", [t, iu], [("int32", [None, None])]),
            g.node("AdvancedSubtensor", [t, i2], [("int32", [None, None, None])],
                   idx_list=[sl(None, None, -1), arr(1)])]
    g.outputs = outs
    I2 = np.array([[0, -1, 2], [1, 1, -4]], np.int16)
    IE = np.zeros(0, np.int64)
    IU = np.array([3, 0, 2, 3], np.uint8)
    case("gather_with_small_int_indices_empty_and_transposed_input", g,
         [ok([x, IU, I2, IE], [x[IU], x[I2], x[IE], x.T[IU], x.T[::-1, I2]])])

    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    xf = fl(3, 4, dtype=np.float32)
    g = G()
    a = g.inp("int32", [None, None])
    y8 = g.inp("int8", [None])
    i = g.inp("int64", [None])
    af = g.inp("float32", [None, None])
    yd = g.inp("float64", [None])
    ie = g.inp("int64", [None])
    ye = g.inp("int8", [None, None])
    r = g.node("Subtensor", [a], [("int32", [None, None])], idx_list=[sl(None, None, -1)])
    outs = [g.node("AdvancedIncSubtensor1", [a, y8, i], [("int32", [None, None])], set_instead_of_inc=False),
            g.node("AdvancedIncSubtensor1", [r, y8, i], [("int32", [None, None])], set_instead_of_inc=False),
            g.node("IncSubtensor", [af, yd], [("float32", [None, None])], idx_list=[sl(), ix(2)],
                   set_instead_of_inc=True),
            g.node("AdvancedIncSubtensor1", [a, ye, ie], [("int32", [None, None])], set_instead_of_inc=False)]
    g.outputs = outs
    Y8 = np.array([5, -3, 100, 1], np.int8)
    I = i64([0, 2, 0, -1])
    YD = fl(3)
    e0 = x.copy(); np.add.at(e0, I, Y8)
    e1 = x[::-1].copy(); np.add.at(e1, I, Y8)
    e2 = xf.copy(); e2[:, 2] = YD
    case("inc_with_narrower_y_dtype_and_reversed_input", g,
         [ok([x, Y8, I, xf, YD, np.zeros(0, np.int64), np.zeros((0, 4), np.int8)], [e0, e1, e2, x])])

    g = G()
    v = g.inp("float64", [None])
    d = g.inp("int64", [])
    g.outputs = [g.node("Alloc", [v, d], [("float64", [4])])]
    case("alloc_rejects_dims_that_contradict_static_shape", g,
         [ok([np.array([2.5]), i64(4)], [np.full(4, 2.5)]),
          err([np.array([2.5]), i64(5)], "declares")])


def random_cases():
    """Many random index lists, each compared with NumPy (and np.add.at)."""
    def rand_slice(n):
        pick = lambda: None if rng.random() < 0.3 else int(rng.integers(-n - 3, n + 4))
        step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
        return pick(), pick(), step

    # basic indexing: views
    g = G()
    runs_in, expected = [], []
    for k in range(40):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(0 if k % 10 == 0 else 1, 5)) for _ in range(nd))
        x = rng.standard_normal(shape)
        a = g.inp("float64", [None] * nd)
        ent, key = [], []
        for d in range(int(rng.integers(1, nd + 1))):
            if rng.random() < 0.3 and shape[d] > 0:
                i = int(rng.integers(-shape[d], shape[d]))
                ent.append(ix(i))
                key.append(i)
            else:
                s0, s1, s2 = rand_slice(shape[d])
                ent.append(sl(s0, s1, s2))
                key.append(slice(s0, s1, s2))
        r = x[tuple(key)]
        g.outputs.append(g.node("Subtensor", [a], [("float64", [None] * r.ndim)], idx_list=ent))
        runs_in.append(x)
        expected.append(r)
    case("subtensor_random_index_lists_match_numpy", g, [ok(runs_in, expected)])

    # advanced indexing and np.add.at / set with the same index tuples
    g = G()
    ins, exp_get, exp_inc, exp_set = [], [], [], []
    outs_get, outs_inc, outs_set = [], [], []
    for k in range(30):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(1, 5)) for _ in range(nd))
        x = rng.standard_normal(shape)
        xa = g.inp("float64", [None] * nd)
        ins.append(x)
        ent, key, arrays = [], [], []
        nidx = int(rng.integers(1, nd + 1))
        arr_axes = set(int(v) for v in rng.choice(nidx, size=int(rng.integers(1, nidx + 1)), replace=False))
        bshape = tuple(int(v) for v in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        for d in range(nidx):
            if d in arr_axes:
                ia = rng.integers(-shape[d], shape[d], size=bshape if rng.random() < 0.8 else ())
                ia = np.asarray(ia, dtype=np.int64)
                arrays.append(ia)
                ent.append(arr(0))  # input number fixed below
                key.append(ia)
            else:
                s0, s1, s2 = rand_slice(shape[d])
                ent.append(sl(s0, s1, s2))
                key.append(slice(s0, s1, s2))
        idx_ids = []
        for ia in arrays:
            v = g.inp("int64", [None] * ia.ndim)
            idx_ids.append(v)
            ins.append(ia)
        n = 0
        for e in ent:
            if e["type"] == "array":
                e["input"] = 1 + n
                n += 1
        r = x[tuple(key)]
        outs_get.append(g.node("AdvancedSubtensor", [xa] + idx_ids, [("float64", [None] * r.ndim)], idx_list=ent))
        exp_get.append(r)
        y = rng.standard_normal(r.shape)
        ya = g.inp("float64", [None] * r.ndim)
        ins.append(y)
        inc_ent = [dict(e, input=e["input"] + 1) if e["type"] == "array" else e for e in ent]
        outs_inc.append(g.node("AdvancedIncSubtensor", [xa, ya] + idx_ids, [("float64", [None] * nd)],
                               idx_list=inc_ent, set_instead_of_inc=False, ignore_duplicates=False))
        e1 = x.copy()
        np.add.at(e1, tuple(key), y)
        exp_inc.append(e1)
        outs_set.append(g.node("AdvancedIncSubtensor", [xa, ya] + idx_ids, [("float64", [None] * nd)],
                               idx_list=inc_ent, set_instead_of_inc=True, ignore_duplicates=False))
        e2 = x.copy()
        e2[tuple(key)] = y
        exp_set.append(e2)
    g.outputs = outs_get + outs_inc + outs_set
    case("advanced_random_index_lists_match_numpy_and_add_at", g, [ok(ins, exp_get + exp_inc + exp_set)])


def fast_path_cases():
    """AdvancedSubtensor1 / AdvancedIncSubtensor1 fast paths (engine/ops/index_fast.hpp):
    constant indices packed at load, index arrays of every integer dtype and
    stride read directly, rows and strided inputs, every element size."""
    # Constant int64 index with negatives and repeats, x's static dim known:
    # normalized and packed at load. Constant non-negative index with x's dim
    # unknown: packed, used when the run-time dim exceeds its max. Constant
    # with negatives and unknown dim: checked per call.
    c1 = rng.integers(-100, 100, size=300)
    c2 = rng.integers(0, 38, size=200)
    c2[7] = 37
    c3 = i64([3, -1, 0, -5, 3])
    c4 = rng.integers(-300, 300, size=500)  # needs 2-byte entries
    g = G()
    x100 = g.inp("float64", [100])
    xu = g.inp("float64", [None])
    x300 = g.inp("float64", [300])
    k1, k2, k3, k4 = (g.const(i64(c)) for c in (c1, c2, c3, c4))
    g.outputs = [g.node("AdvancedSubtensor1", [x100, k1], [("float64", [300])]),
                 g.node("AdvancedSubtensor1", [xu, k2], [("float64", [200])]),
                 g.node("AdvancedSubtensor1", [xu, k3], [("float64", [5])]),
                 g.node("AdvancedSubtensor1", [x300, k4], [("float64", [500])])]
    a, b, d, b38 = fl(100), fl(50), fl(300), fl(38)
    case("gather1_constant_index_packed_matches_numpy", g,
         [ok([a, b, d], [a[c1], b[c2], b[c3], d[c4]]),
          err([a, fl(20), d], "is out of bounds for axis 0 with size 20"),
          ok([a, b38, d], [a[c1], b38[c2], b38[c3], d[c4]])])

    # Index inputs of every integer dtype, a reversed (stride -1) index view,
    # out-of-range values of each sign.
    x = fl(7)
    g = G()
    a = g.inp("float64", [None])
    ins = [g.inp(dt, [None]) for dt in ("int8", "uint8", "int16", "int32", "int64")]
    rev = g.node("Subtensor", [ins[3]], [("int32", [None])], idx_list=[sl(None, None, -1)])
    g.outputs = [g.node("AdvancedSubtensor1", [a, i], [("float64", [None])]) for i in ins + [rev]]
    I8 = np.array([-7, 6, -1, 0, 3, 3], np.int8)
    U8 = np.array([6, 0, 0, 5], np.uint8)
    I16 = np.array([-2, 4], np.int16)
    I32 = np.array([1, -3, 6, -7, 2], np.int32)
    I64 = i64([0, -1])
    good = [I8, U8, I16, I32, I64]
    case("gather1_reads_every_index_dtype_and_stride", g,
         [ok([x] + good, [x[i] for i in good] + [x[I32[::-1]]]),
          err([x, np.array([-8], np.int8), U8, I16, I32, I64], "index -8 is out of bounds for axis 0 with size 7"),
          err([x, I8, np.array([7], np.uint8), I16, I32, I64], "index 7 is out of bounds for axis 0 with size 7"),
          err([x, I8, U8, I16, np.array([2, 1000], np.int32), I64], "index 1000 is out of bounds"),
          ok([np.zeros(0)] + [np.zeros(0, i.dtype) for i in good], [np.zeros(0)] * 6),
          err([np.zeros(0), I8[:0], U8[:0], I16[:0], I32[:0], i64([0])], "index 0 is out of bounds for axis 0 with size 0")])

    # Element sizes 1, 2, 4, 8 (and bool), rows (memcpy), reversed rows,
    # reversed elements, transposed rows (the generic path), empty rows.
    c = rng.integers(-5, 5, size=40)
    g = G()
    xs_ = [g.inp(dt, [5]) for dt in ("int8", "int16", "float32", "bool", "int64")]
    m = g.inp("float64", [5, 3])
    e = g.inp("float64", [5, 0])
    k = g.const(i64(c))
    iv = g.inp("int64", [None])
    rv = g.node("Subtensor", [xs_[4]], [("int64", [5])], idx_list=[sl(None, None, -1)])
    rm = g.node("Subtensor", [m], [("float64", [5, 3])], idx_list=[sl(None, None, -1)])
    tm = g.node("DimShuffle", [m], [("float64", [3, 5])], new_order=[1, 0])
    outs = [g.node("AdvancedSubtensor1", [v, k], [(str(dt), [40])])
            for v, dt in zip(xs_, ("int8", "int16", "float32", "bool", "int64"))]
    outs += [g.node("AdvancedSubtensor1", [rv, k], [("int64", [40])]),
             g.node("AdvancedSubtensor1", [m, k], [("float64", [40, 3])]),
             g.node("AdvancedSubtensor1", [rm, iv], [("float64", [None, 3])]),
             g.node("AdvancedSubtensor1", [tm, iv], [("float64", [None, 5])]),
             g.node("AdvancedSubtensor1", [e, k], [("float64", [40, 0])]),
             g.node("AdvancedSubtensor1", [e, iv], [("float64", [None, 0])])]
    g.outputs = outs
    X = [rng.integers(-100, 100, 5).astype(np.int8), rng.integers(-3000, 3000, 5).astype(np.int16),
         fl(5, dtype=np.float32), rng.random(5) > 0.5, rng.integers(-2**40, 2**40, 5)]
    M = fl(5, 3)
    E = np.zeros((5, 0))
    IV = i64([2, -1, 2, 0])
    case("gather1_element_sizes_rows_and_strided_inputs", g,
         [ok(X + [M, E, IV], [v[c] for v in X] + [X[4][::-1][c], M[c], M[::-1][IV], M.T[IV], E[c], E[IV]]),
          err(X + [M, E, i64([0, 3])], "index 3 is out of bounds for axis 0 with size 3")])

    # Scatter-add / set with a constant index: sorted with runs (register
    # accumulation), random (in order through memory), and with duplicates
    # for set (last wins); a run-time index of another dtype; y broadcast
    # from 0-d and (1,), y strided; bad y length; empty index.
    srt = np.sort(rng.integers(-30, 30, size=300))
    rnd = rng.integers(-30, 30, size=300)
    g = G()
    x = g.inp("float64", [30])
    y = g.inp("float64", [300])
    y0 = g.inp("float64", [])
    y1 = g.inp("float64", [1])
    ks, kr = g.const(i64(srt)), g.const(i64(rnd))
    i16 = g.inp("int16", [None])
    yv = g.inp("float64", [None])
    xi = g.inp("int32", [30])
    yi = g.inp("int32", [300])
    yrev = g.node("Subtensor", [y], [("float64", [300])], idx_list=[sl(None, None, -1)])
    ke = g.const(np.zeros(0, np.int64))
    ye = g.inp("float64", [0])
    inc = lambda xx, yy, ii, set_=False, out=("float64", [30]): g.node(
        "AdvancedIncSubtensor1", [xx, yy, ii], [out], set_instead_of_inc=set_)
    g.outputs = [inc(x, y, ks), inc(x, y, kr), inc(x, y, kr, True), inc(x, y0, kr), inc(x, y1, ks),
                 inc(x, yrev, kr), inc(x, yv, i16), inc(x, yv, i16, True), inc(xi, yi, kr, out=("int32", [30])),
                 inc(x, ye, ke)]
    X, Y, Y0, Y1 = fl(30), fl(300), fl(), fl(1)
    XI, YI = rng.integers(-1000, 1000, 30).astype(np.int32), rng.integers(-1000, 1000, 300).astype(np.int32)
    I16 = np.array([3, -1, 3, 3, 0, -30, 29], np.int16)
    YV = fl(7)

    def add_at(xx, ii, yy):
        r = xx.copy()
        np.add.at(r, ii, yy)
        return r

    def set_at(xx, ii, yy):
        r = xx.copy()
        r[ii] = yy
        return r

    want = [add_at(X, srt, Y), add_at(X, rnd, Y), set_at(X, rnd, Y), add_at(X, rnd, np.broadcast_to(Y0, 300)),
            add_at(X, srt, np.broadcast_to(Y1, 300)), add_at(X, rnd, Y[::-1]), add_at(X, I16, YV),
            set_at(X, I16, YV), add_at(XI, rnd, YI), X]
    case("inc_subtensor1_constant_and_runtime_index_fast_paths", g,
         [ok([X, Y, Y0, Y1, I16, YV, XI, YI, np.zeros(0)], want),
          err([X, Y, Y0, Y1, I16, fl(6), XI, YI, np.zeros(0)],
              "value array of shape (6,) could not be broadcast to indexing result of shape (7,)"),
          err([X, Y, Y0, Y1, np.array([0, 30], np.int16), fl(2), XI, YI, np.zeros(0)],
              "index 30 is out of bounds for axis 0 with size 30")])

    # A constant index with an entry out of range is not packed: each call
    # reports it (PyTensor raises at run time, not at compile time).
    g = G()
    x = g.inp("float64", [4])
    y = g.inp("float64", [3])
    k = g.const(i64([0, 4, 1]))
    g.outputs = [g.node("AdvancedSubtensor1", [x, k], [("float64", [3])])]
    case("gather1_constant_index_out_of_range_fails_per_call", g,
         [err([fl(4), fl(3)], "index 4 is out of bounds for axis 0 with size 4")])


def main():
    global rng
    # Each group draws from its own stream, so editing one leaves the others' files unchanged.
    for seed, group in enumerate([shape_cases, index_cases, rejection_cases, more_index_cases, random_cases,
                                   fast_path_cases]):
        rng = np.random.default_rng(20261129 + seed)
        group()
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".json"):
            os.remove(os.path.join(OUT, f))
    for name, d in CASES.items():
        with open(os.path.join(OUT, name + ".json"), "w") as fh:
            json.dump(d, fh, separators=(",", ":"))
    print(f"wrote {len(CASES)} fixtures to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
