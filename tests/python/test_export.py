"""Tests of ember.export on hand-built PyTensor graphs and on the exported model suite.

Runs on whichever PyTensor is installed (.venv: 3.3, .venv-py311: 2.38); forms that
the installed version cannot build are exercised with stand-in op objects that
carry the other version's attributes.
"""

import glob
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

import ember
import importlib

ex = importlib.import_module("ember.export")
from ember.testing.validate import check, check_structure, load_schema

import pytensor
import pytensor.scalar as ps  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pytensor.graph.fg import FunctionGraph  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_DIR = os.path.join(ROOT, "tests", "data", "models")
SCHEMA = load_schema()
PT_MAJOR = int(pytensor.__version__.split(".")[0])


def _symbolic_join_axis():
    try:
        pt.join(pt.lscalar(), pt.dvector(), pt.dvector())
    except TypeError:  # PyTensor >= 3.1.1: the axis is a constant property of the op
        return False
    return True


SYMBOLIC_JOIN_AXIS = _symbolic_join_axis()


def export(inputs, outputs, **kw):
    """Export an unrewritten graph; validate it; return (doc, payload)."""
    fg = FunctionGraph(inputs, outputs if isinstance(outputs, list) else [outputs], clone=False)
    doc, payload = ember.export_graph(fg, **kw)
    check(doc, payload, SCHEMA)
    return doc, payload


def nodes_named(doc, op):
    return [n for n in doc["nodes"] if n["op"] == op]


def only(doc, op):
    found = nodes_named(doc, op)
    assert len(found) == 1, [n["op"] for n in doc["nodes"]]
    return found[0]


def const_value(doc, var):
    for c in doc["constants"]:
        if c["var"] == var:
            return c["data"]
    raise KeyError(var)


# -- the scalar op table (names: tests/python/test_tables.py) --------------------


def test_maximum_class_exports_as_scalar_maximum():
    x, y = pt.dvectors("x", "y")
    doc, _ = export([x, y], [pt.maximum(x, y), pt.minimum(x, y)])
    assert sorted(n["attrs"]["scalar_op"]["op"] for n in nodes_named(doc, "Elemwise")) == [
        "ScalarMaximum", "ScalarMinimum"]


def test_cast_takes_dtype_from_output():
    x = pt.dvector("x")
    doc, _ = export([x], pt.cast(x, "int32"))
    node = only(doc, "Elemwise")
    assert node["attrs"]["scalar_op"] == {"op": "Cast"}
    assert doc["variables"][node["outputs"][0]]["dtype"] == "int32"


# -- Composite ------------------------------------------------------------------------


def test_composite_numbers_inputs_then_constants_then_nodes():
    a, b = ps.float64("a"), ps.float64("b")
    comp = ps.Composite([a, b], [ps.switch(ps.gt(a * b, ps.constant(np.int8(0))), a * b, ps.constant(-np.inf))])
    x, y = pt.dvectors("x", "y")
    doc, _ = export([x, y], pt.elemwise.Elemwise(comp)(x, y))
    sop = only(doc, "Elemwise")["attrs"]["scalar_op"]
    assert sop["op"] == "Composite"
    assert sop["inputs"] == ["float64", "float64"]
    consts = {(c["dtype"], c["value"]) for c in sop["constants"]}
    assert ("int8", 0) in consts
    assert any(v == "-inf" for _, v in consts)
    n_const = len(sop["constants"])
    ops = [n["op"] for n in sop["nodes"]]
    assert ops.count("Mul") >= 1 and "GT" in ops and ops[-1] == "Switch"
    sw = sop["nodes"][-1]
    assert sw["dtype"] == "float64"
    assert sop["outputs"] == [2 + n_const + len(sop["nodes"]) - 1]
    gt = sop["nodes"][sw["inputs"][0] - 2 - n_const]
    assert gt["op"] == "GT" and gt["dtype"] == "bool"


def test_nested_composite_is_inlined():
    a, b = ps.float64("a"), ps.float64("b")
    inner = ps.Composite([a, b], [ps.exp(a) + b])
    c, d = ps.float64("c"), ps.float64("d")
    outer = ps.Composite([c, d], [inner(c, d) * d])
    x, y = pt.dvectors("x", "y")
    doc, _ = export([x, y], pt.elemwise.Elemwise(outer)(x, y))
    sop = only(doc, "Elemwise")["attrs"]["scalar_op"]
    assert [n["op"] for n in sop["nodes"]] == ["Exp", "Add", "Mul"]
    exp, add, mul = sop["nodes"]
    assert exp["inputs"] == [0] and add["inputs"] == [2, 1] and mul["inputs"] == [3, 1]
    assert sop["outputs"] == [4]


def test_composite_multiple_outputs_and_passthrough_output():
    a, b = ps.float64("a"), ps.float64("b")
    comp = ps.Composite([a, b], [a + b, ps.log(a)])
    x, y = pt.dvectors("x", "y")
    out = pt.elemwise.Elemwise(comp)(x, y)
    doc, _ = export([x, y], list(out))
    sop = only(doc, "Elemwise")["attrs"]["scalar_op"]
    assert len(sop["outputs"]) == 2 and len(only(doc, "Elemwise")["outputs"]) == 2


# -- shape, dimshuffle, reductions --------------------------------------------------


def test_dimshuffle_reshape_shape_ops():
    x = pt.dmatrix("x")
    outs = [x.dimshuffle(1, "x", 0), x.reshape((x.shape[0] * x.shape[1],)), x.shape,
            pt.specify_shape(x, (None, 3))]
    doc, _ = export([x], outs)
    assert only(doc, "DimShuffle")["attrs"]["new_order"] == [1, "x", 0]
    assert only(doc, "Reshape")["attrs"]["ndim"] == 1
    ss = only(doc, "SpecifyShape")
    assert ss["attrs"]["shape"][0] is None and ss["attrs"]["shape"][1] == {"input": 1}
    assert len(ss["inputs"]) == 2


def test_reductions_carry_axis_and_class():
    x = pt.dmatrix("x")
    b = pt.bmatrix("b")
    doc, _ = export([x, b], [x.sum(axis=1), x.prod(), x.max(axis=0), x.min(axis=(0, 1)),
                             pt.all(b, axis=0), pt.any(b)])
    assert only(doc, "Sum")["attrs"]["axis"] == [1]
    assert only(doc, "Prod")["attrs"]["axis"] in (None, [0, 1])
    assert [0] in [n["attrs"]["axis"] for n in nodes_named(doc, "Max")]
    # PyTensor 2.x builds min(x) as -max(-x)
    assert [n["attrs"]["axis"] for n in nodes_named(doc, "Max") + nodes_named(doc, "Min")].count([0, 1]) == 1
    assert nodes_named(doc, "All") and nodes_named(doc, "Any")


def test_generic_careduce_names_scalar_op():
    x = pt.dmatrix("x")
    out = pt.elemwise.CAReduce(ps.maximum, axis=(0,))(x)
    doc, _ = export([x], out)
    node = only(doc, "CAReduce")
    assert node["attrs"]["scalar_op"] == "ScalarMaximum" and node["attrs"]["axis"] == [0]


# -- subtensor family ----------------------------------------------------------------


def test_basic_subtensor_literal_and_variable_bounds():
    x = pt.dvector("x")
    i = pt.lscalar("i")
    doc, _ = export([x, i], [x[1:3], x[i], x[::-1], x[i:-1:2]])
    subs = nodes_named(doc, "Subtensor")
    lists = [n["attrs"]["idx_list"] for n in subs]
    assert [{"type": "slice", "start": 1, "stop": 3, "step": None}] in lists
    assert [{"type": "slice", "start": None, "stop": None, "step": -1}] in lists
    idx = next(n for n in subs if n["attrs"]["idx_list"][0]["type"] == "index")
    assert idx["attrs"]["idx_list"][0]["value"] == {"input": 1}
    assert doc["variables"][idx["inputs"][1]]["shape"] == []
    var_slice = next(n for n in subs if n["attrs"]["idx_list"][0].get("start") == {"input": 1})
    assert var_slice["attrs"]["idx_list"][0]["stop"] == -1
    assert var_slice["attrs"]["idx_list"][0]["step"] == 2


def test_inc_and_set_subtensor():
    x = pt.dmatrix("x")
    y = pt.dvector("y")
    i = pt.lscalar("i")
    doc, _ = export([x, y, i], [pt.inc_subtensor(x[i, 1:], y), pt.set_subtensor(x[0], y)])
    incs = nodes_named(doc, "IncSubtensor")
    assert sorted(n["attrs"]["set_instead_of_inc"] for n in incs) == [False, True]
    inc = next(n for n in incs if not n["attrs"]["set_instead_of_inc"])
    assert inc["attrs"]["idx_list"] == [{"type": "index", "value": {"input": 2}},
                                        {"type": "slice", "start": 1, "stop": None, "step": None}]


def test_advanced_subtensor1_and_inc():
    x = pt.dvector("x")
    idx = pt.lvector("idx")
    doc, _ = export([x, idx], [x[idx], pt.inc_subtensor(x[idx], 1.0)])
    assert nodes_named(doc, "AdvancedSubtensor1") or nodes_named(doc, "AdvancedSubtensor")
    incs = nodes_named(doc, "AdvancedIncSubtensor1") + nodes_named(doc, "AdvancedIncSubtensor")
    assert len(incs) == 1 and incs[0]["attrs"]["set_instead_of_inc"] is False


def test_advanced_subtensor_mixed_slices_and_arrays():
    x = pt.dtensor3("x")
    idx = pt.lvector("idx")
    j = pt.lscalar("j")
    doc, _ = export([x, idx, j], [x[idx, 1:, j], pt.set_subtensor(x[idx, :j], 0.0)])
    adv = only(doc, "AdvancedSubtensor")
    entries = adv["attrs"]["idx_list"]
    assert entries[0] == {"type": "array", "input": 1}
    assert entries[1] == {"type": "slice", "start": 1, "stop": None, "step": None}
    # NumPy treats a 0-d integer among advanced indices as an array index too.
    assert entries[2]["type"] == "array"
    assert doc["variables"][adv["inputs"][entries[2]["input"]]]["shape"] == []
    inc = only(doc, "AdvancedIncSubtensor")
    e = inc["attrs"]["idx_list"]
    assert e[0] == {"type": "array", "input": 2}
    assert e[1]["type"] == "slice" and e[1]["stop"] == {"input": 3}
    assert inc["attrs"]["set_instead_of_inc"] is True


def test_2x_idx_list_form_with_type_placeholders():
    # PyTensor 2.x: idx_list holds ScalarType placeholders consumed from inputs in order.
    x, i, j = pt.dmatrix("x"), ps.int64("i"), ps.int64("j")
    out = pt.dvector()
    op = SimpleNamespace(idx_list=(ps.int64, slice(None, ps.int64, None)))
    node = SimpleNamespace(op=op, inputs=[x, i, j], outputs=[out])
    name, inputs, attrs = ex._subtensor_family("Subtensor", 1, False)(None, node)
    assert inputs == [x, i, j]
    assert attrs["idx_list"] == [{"type": "index", "value": {"input": 1}},
                                 {"type": "slice", "start": None, "stop": {"input": 2}, "step": None}]


def test_3x_idx_list_form_with_positions():
    # PyTensor 3.x: idx_list holds positions among the index inputs.
    x, i, j = pt.dmatrix("x"), ps.int64("i"), ps.int64("j")
    out = pt.dvector()
    op = SimpleNamespace(idx_list=(0, slice(None, 1, None)))
    node = SimpleNamespace(op=op, inputs=[x, i, j], outputs=[out])
    _, inputs, attrs = ex._subtensor_family("Subtensor", 1, False)(None, node)
    assert inputs == [x, i, j]
    assert attrs["idx_list"] == [{"type": "index", "value": {"input": 1}},
                                 {"type": "slice", "start": None, "stop": {"input": 2}, "step": None}]
    # 3.2+: AdvancedIncSubtensor with idx_list=(0,) replaces AdvancedIncSubtensor1.
    y, idx = pt.dvector("y"), pt.lvector("idx")
    op = SimpleNamespace(idx_list=(0,), set_instead_of_inc=False, ignore_duplicates=False)
    node = SimpleNamespace(op=op, inputs=[pt.dvector("x"), y, idx], outputs=[pt.dvector()])
    _, inputs, attrs = ex._subtensor_family("AdvancedIncSubtensor", 2, True)(None, node)
    assert attrs["idx_list"] == [{"type": "array", "input": 2}]


def test_constant_indices_become_literals():
    x = pt.dvector("x")
    op = SimpleNamespace(idx_list=(slice(0, 1, None),))
    node = SimpleNamespace(op=op, inputs=[x, pt.constant(np.int64(2)), pt.constant(np.int64(-1))],
                           outputs=[pt.dvector()])
    _, inputs, attrs = ex._subtensor_family("Subtensor", 1, False)(None, node)
    assert inputs == [x]
    assert attrs["idx_list"] == [{"type": "slice", "start": 2, "stop": -1, "step": None}]


# -- join / split / alloc ---------------------------------------------------------------


def test_join_constant_axis_becomes_attr():
    x, y = pt.dmatrices("x", "y")
    doc, _ = export([x, y], pt.concatenate([x, y], axis=1))
    node = only(doc, "Join")
    assert node["attrs"]["axis"] == 1 and len(node["inputs"]) == 2


def test_join_variable_axis_stays_input():
    if not SYMBOLIC_JOIN_AXIS:
        pytest.skip(f"PyTensor {pytensor.__version__} has no symbolic Join axis")
    x, y = pt.dmatrices("x", "y")
    a = pt.lscalar("a")
    doc, _ = export([x, y, a], pt.join(a, x, y))
    node = only(doc, "Join")
    assert "axis" not in node.get("attrs", {}) and len(node["inputs"]) == 3


def test_join_split_axis_property_form():
    # PyTensor >= 3.1.1 keeps the axis as a property, not an input.
    x, y = pt.dmatrices("x", "y")
    node = SimpleNamespace(op=SimpleNamespace(axis=0), inputs=[x, y], outputs=[pt.dmatrix()])
    assert ex._join(None, node) == ("Join", [x, y], {"axis": 0})
    s = pt.lvector("s")
    node = SimpleNamespace(op=SimpleNamespace(axis=1, len_splits=2), inputs=[x, s], outputs=[x, y])
    assert ex._split(None, node) == ("Split", [x, s], {"axis": 1, "len_splits": 2})


def test_split_alloc_makevector_arange():
    x = pt.dvector("x")
    n = pt.lscalar("n")
    a, b = pt.split(x, [2, 3], n_splits=2, axis=0)
    outs = [a, b, pt.alloc(1.5, n, 3), pt.stack([n, n]), pt.arange(n), pt.empty((n, 2))]
    doc, _ = export([x, n], outs)
    sp = only(doc, "Split")
    assert sp["attrs"] == {"axis": 0, "len_splits": 2} and len(sp["inputs"]) == 2
    assert nodes_named(doc, "Alloc") and nodes_named(doc, "MakeVector") and nodes_named(doc, "ARange")
    assert only(doc, "AllocEmpty")["attrs"]["dtype"] == "float64"


# -- linear algebra and others -------------------------------------------------------------


def _linalg_ops():
    import importlib

    for mod in ("pytensor.tensor.linalg", "pytensor.tensor.slinalg"):
        try:
            m = importlib.import_module(mod)
            if hasattr(m, "Cholesky"):
                break
        except ImportError:
            continue
    nl = importlib.import_module("pytensor.tensor.nlinalg")
    get = lambda name: getattr(m, name, None) or getattr(nl, name)  # noqa: E731
    return {n: get(n) for n in ("Cholesky", "SolveTriangular", "Solve", "MatrixInverse", "Det", "SLogDet")}


def test_linalg_ops_and_attrs():
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    ops = _linalg_ops()
    A = pt.dmatrix("A")
    b = pt.dvector("b")
    outs = [ops["Cholesky"](lower=False)(A), ops["SolveTriangular"](lower=True, b_ndim=1)(A, b),
            ops["Solve"](assume_a="pos", b_ndim=1)(A, b), ops["MatrixInverse"]()(A), ops["Det"]()(A),
            *ops["SLogDet"]()(A)]
    doc, _ = export([A, b], outs)
    assert only(doc, "Cholesky")["attrs"] == {"lower": False, "on_error": "nan"}
    st = only(doc, "SolveTriangular")["attrs"]
    assert st["lower"] is True and st["b_ndim"] == 1 and st["trans"] == 0
    assert only(doc, "Solve")["attrs"]["assume_a"] == "pos"
    assert len(only(doc, "SLogDet")["outputs"]) == 2
    assert nodes_named(doc, "MatrixInverse") and nodes_named(doc, "Det")


def test_blockwise_carries_core_op_and_signature():
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    x = pt.dtensor3("x")
    doc, _ = export([x], pt.linalg.cholesky(x))
    node = only(doc, "Blockwise")
    assert node["attrs"]["core_op"]["op"] == "Cholesky"
    assert node["attrs"]["signature"] == "(m,m)->(m,m)"


def test_dot_cumop_extractdiag_assert_views():
    from pytensor.compile.ops import DeepCopyOp, ViewOp
    from pytensor.raise_op import Assert

    A = pt.dmatrix("A")
    v = pt.dvector("v")
    outs = [pt.dot(A, v), pt.cumsum(v), pt.cumprod(A, axis=None), pt.diagonal(A, offset=1),
            Assert("v must be positive")(v, pt.all(v > 0)), DeepCopyOp()(v), ViewOp()(v)]
    doc, _ = export([A, v], outs)
    assert nodes_named(doc, "Dot")
    modes = sorted((n["attrs"]["mode"], n["attrs"]["axis"]) for n in nodes_named(doc, "CumOp"))
    # cumprod(axis=None) flattens first in PyTensor 2.x, so its axis may be 0 or None
    assert modes[0] == ("add", 0) and modes[1][0] == "mul"
    assert only(doc, "ExtractDiag")["attrs"] == {"offset": 1, "axis1": 0, "axis2": 1}
    assert only(doc, "Assert")["attrs"]["msg"] == "v must be positive"
    assert nodes_named(doc, "DeepCopyOp") and nodes_named(doc, "ViewOp")


def test_op_from_graph_is_inlined():
    from pytensor.compile.builders import OpFromGraph

    a = pt.dvector("a")
    ofg = OpFromGraph([a], [pt.exp(a) * 2.0])
    x = pt.dvector("x")
    doc, _ = export([x], ofg(x) + 1.0)
    assert {n["op"] for n in doc["nodes"]} <= {"Elemwise", "DimShuffle"}
    assert [n["attrs"]["scalar_op"]["op"] for n in nodes_named(doc, "Elemwise")] == ["Exp", "Mul", "Add"]


# -- constants, shared inputs, files ---------------------------------------------------------


def test_large_constants_go_to_payload_and_round_trip(tmp_path):
    x = pt.dvector("x")
    big = np.linspace(-1.0, 1.0, 1000)
    small = np.array([np.nan, np.inf, -np.inf, 0.5])
    out = x * pt.constant(big) + pt.constant(small).sum()
    doc, payload = export([x], out)
    entries = {len(c.get("data", [])) or c["nbytes"]: c for c in doc["constants"]}
    c_big = entries[8000]
    assert c_big["offset"] % 64 == 0
    assert np.array_equal(np.frombuffer(payload, "<f8", 1000, c_big["offset"]), big)
    assert entries[4]["data"][:3] == ["nan", "inf", "-inf"]
    path = tmp_path / "g.embg"
    ember.export(FunctionGraph([x], [out], clone=False), str(path))
    raw = path.read_bytes()
    assert raw[:8] == b"EMBRGRPH"
    doc2, payload2 = ember.loads(raw)
    assert doc2 == json.loads(json.dumps(doc)) and payload2[:len(payload)] == payload
    check(doc2, payload2, SCHEMA)


def test_plain_json_when_no_payload(tmp_path):
    x = pt.dvector("x")
    path = tmp_path / "g.json"
    ember.export(FunctionGraph([x], [x + 1.0], clone=False), str(path))
    assert path.read_bytes()[:1] == b"{"


def test_shared_variable_is_input_with_value():
    x = pt.dvector("x")
    s = pytensor.shared(np.arange(4.0), name="s")
    doc, _ = export([x, s], x * s)
    shared = [i for i in doc["inputs"] if i.get("shared")]
    assert len(shared) == 1
    var = shared[0]["var"]
    assert doc["variables"][var]["name"] == "s" and doc["variables"][var]["shape"] == [4]
    assert const_value(doc, var) == [0.0, 1.0, 2.0, 3.0]


def test_compiled_function_exports_its_rewritten_graph():
    x = pt.dvector("x")
    s = pytensor.shared(np.ones(3), name="s")
    f = pytensor.function([x], [(x * s).sum(), pt.exp(x)], mode="FAST_RUN")
    doc, payload = ember.export_graph(f, output_names=["total", "ex"])
    check(doc, payload, SCHEMA)
    assert [doc["variables"][i["var"]]["name"] for i in doc["inputs"]] == ["x", "s"]
    assert doc["inputs"][1] == {"var": doc["inputs"][1]["var"], "shared": True}
    assert len(doc["outputs"]) == 2


def test_unsupported_ops_are_listed_in_one_error():
    x = pt.dvector("x")
    z = pt.zvector("z")
    from pytensor.tensor.signal import convolve1d

    outs = [convolve1d(x, x), pt.extra_ops.Unique(axis=0)(x), pt.special.owens_t(x, x) if hasattr(pt.special, "owens_t")
            else pt.elemwise.Elemwise(ps.owens_t)(x, x), pt.real(z)]
    fg = FunctionGraph([x, z], outs, clone=False)
    with pytest.raises(ember.UnsupportedGraphError) as err:
        ember.export_graph(fg)
    text = str(err.value)
    assert "Convolve1d" in text and "Unique" in text and "Owens_t" in text and "complex128" in text
    assert len(err.value.problems) >= 4


def test_structure_check_catches_bad_order():
    doc = {"format": "ember-graph", "version": 1,
           "variables": [{"dtype": "float64", "shape": []}] * 3,
           "inputs": [{"var": 0}], "outputs": [2], "constants": [],
           "nodes": [{"op": "Elemwise", "inputs": [1], "outputs": [2], "attrs": {"scalar_op": {"op": "Exp"}}},
                     {"op": "Elemwise", "inputs": [0], "outputs": [1], "attrs": {"scalar_op": {"op": "Exp"}}}]}
    with pytest.raises(ValueError, match=r"nodes\[0\].*not defined"):
        check_structure(doc)


# -- the exported model suite -------------------------------------------------------------

MODEL_FILES = sorted(glob.glob(os.path.join(MODELS_DIR, "*.embg")))


def test_the_model_graphs_are_all_there():
    # The parametrized tests below would pass on an empty glob.
    assert len(MODEL_FILES) == 12, MODEL_FILES


@pytest.mark.parametrize("path", MODEL_FILES, ids=[os.path.basename(p) for p in MODEL_FILES])
def test_model_graph_is_valid_and_matches_values(path):
    with open(path, "rb") as f:
        raw = f.read()
    assert len(raw) < 1 << 20
    doc, payload = ember.loads(raw)
    check(doc, payload, SCHEMA)
    with open(path[:-len(".embg")] + ".values.json") as f:
        values = json.load(f)
    inp, *data_inputs = doc["inputs"]
    assert all(i.get("shared") for i in data_inputs)  # pm.Data
    var = doc["variables"][inp["var"]]
    assert var["name"] == values["input"] and var["shape"] == [values["n_dim"]]
    assert len(values["points"]) == len(values["logp"]) == len(values["grad"]) == 10
    assert all(len(p) == values["n_dim"] and len(g) == values["n_dim"]
               for p, g in zip(values["points"], values["grad"], strict=True))
    logp_var, grad_var = (doc["variables"][o] for o in doc["outputs"])
    assert logp_var["shape"] == [] and grad_var["shape"] == [values["n_dim"]]


def test_model_suite_is_present():
    names = {os.path.basename(p)[:-5] for p in MODEL_FILES}
    assert {"seed_gamma", "seed_lognormal", "eight_schools_centered", "eight_schools_noncentered",
            "radon", "logistic_glm", "poisson_glm", "studentt_regression", "data_regression",
            "mvnormal_lkj"} <= names


def test_data_regression_has_shared_inputs_with_values():
    with open(os.path.join(MODELS_DIR, "data_regression.embg"), "rb") as f:
        doc, payload = ember.loads(f.read())
    shared = [i for i in doc["inputs"] if i.get("shared")]
    names = sorted(doc["variables"][i["var"]]["name"] for i in shared)
    assert names == ["x_data", "y_data"]
    for i in shared:
        assert doc["variables"][i["var"]]["shape"] == [50]
        assert i["var"] in {c["var"] for c in doc["constants"]}


def test_2x_advanced_index_inputs_slices_and_newaxis():
    # PyTensor 2.x AdvancedSubtensor: no idx_list; index inputs are tensors, slices
    # (SliceConstant or MakeSlice outputs) and NoneConst for np.newaxis.
    from pytensor.tensor.type_other import NoneConst, SliceConstant, SliceType, make_slice

    x, idx, stop = pt.dmatrix("x"), pt.lvector("idx"), pt.lscalar("stop")
    const_slice = SliceConstant(SliceType(), slice(1, None, None))
    made = make_slice(pt.constant(np.int64(0)), stop, NoneConst)
    node = SimpleNamespace(op=SimpleNamespace(), inputs=[x, NoneConst, idx, const_slice, made],
                           outputs=[pt.dtensor3()])
    _, inputs, attrs = ex._subtensor_family("AdvancedSubtensor", 1, True)(None, node)
    assert inputs[:2] == [x, idx] and len(inputs) == 3  # make_slice may wrap stop in ScalarFromTensor
    assert attrs["idx_list"] == [
        {"type": "newaxis"}, {"type": "array", "input": 1},
        {"type": "slice", "start": 1, "stop": None, "step": None},
        {"type": "slice", "start": 0, "stop": {"input": 2}, "step": None}]


def test_op_from_graph_applied_twice_emits_only_its_inner_nodes():
    from pytensor.compile.builders import OpFromGraph

    a = pt.dvector("a")
    ofg = OpFromGraph([a], [pt.exp(a)])
    x = pt.dvector("x")
    y = pt.log(x)
    doc, _ = export([x], [ofg(y), ofg(y * 2.0)])
    ops = [n["attrs"]["scalar_op"]["op"] for n in nodes_named(doc, "Elemwise")]
    assert sorted(ops) == ["Exp", "Exp", "Log", "Mul"]  # Log is not re-emitted per application
    exps = [n for n in nodes_named(doc, "Elemwise") if n["attrs"]["scalar_op"]["op"] == "Exp"]
    assert exps[0]["inputs"] != exps[1]["inputs"] and exps[0]["outputs"] != exps[1]["outputs"]


@pytest.mark.parametrize("path", MODEL_FILES, ids=[os.path.basename(p) for p in MODEL_FILES])
def test_model_graph_evaluates_to_pytensor_values(path):
    # An independent NumPy reading of the format must reproduce PyTensor's logp/grad.
    import format_eval

    with open(path, "rb") as f:
        doc, payload = ember.loads(f.read())
    with open(path[:-len(".embg")] + ".values.json") as f:
        values = json.load(f)
    num = lambda v: format_eval._number(v)  # noqa: E731
    for x, logp, grad in zip(values["points"], values["logp"], values["grad"], strict=True):
        got_logp, got_grad = format_eval.evaluate(doc, payload, {values["input"]: np.array(x)})
        np.testing.assert_allclose(got_logp, num(logp), rtol=1e-10)
        np.testing.assert_allclose(got_grad, [num(g) for g in grad], rtol=1e-10, atol=1e-12)


def test_hand_built_graphs_evaluate_like_pytensor():
    # Index-list and Composite translations checked by value, not by shape of the JSON.
    import format_eval

    x = pt.dtensor3("x")
    idx = pt.lvector("idx")
    i = pt.lscalar("i")
    v = pt.dvector("v")
    a, b = ps.float64("a"), ps.float64("b")
    comp = ps.Composite([a, b], [ps.switch(ps.gt(a, b), ps.log1p(a * a), b - a), ps.sqr(b)])
    outs = [x[1:, ::-1, i], x[idx, :i], x[idx, 1:, i], x[-1, i], pt.set_subtensor(x[idx, :, i], 0.0),
            pt.inc_subtensor(x[idx], 1.0), pt.inc_subtensor(x[1:3, i], 2.0), x.dimshuffle(2, "x", 0, 1),
            pt.concatenate([x, x], axis=2).sum(axis=(0, 2)), *pt.elemwise.Elemwise(comp)(v, v[::-1]),
            pt.cumsum(v), pt.specify_shape(v, (4,))]
    fg = FunctionGraph([x, idx, i, v], outs, clone=False)
    doc, payload = ember.export_graph(fg)
    check(doc, payload, SCHEMA)
    rng = np.random.default_rng(0)
    args = {"x": rng.normal(size=(3, 4, 5)), "idx": np.array([2, 0, 2]), "i": np.array(-2),
            "v": rng.normal(size=4)}
    expected = pytensor.function([x, idx, i, v], outs, mode="FAST_COMPILE")(*args.values())
    got = format_eval.evaluate(doc, payload, args)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        np.testing.assert_allclose(g, e, rtol=1e-14, err_msg=f"output {k}")


def test_pytensor_eval_runs_wide_composites_and_op_from_graph():
    from pytensor.compile.builders import OpFromGraph

    from ember.testing.pytensor_eval import evaluate

    ins = [ps.float64(f"a{k}") for k in range(20)]
    outs = [ps.exp(ins[k]) * ins[k + 1] for k in range(15)]
    wide = pt.elemwise.Elemwise(ps.Composite(ins, outs))
    xs = [pt.dvector(f"x{k}") for k in range(20)]
    a = pt.dvector("a")
    ofg = OpFromGraph([a], [a * 3.0])
    graph_outs = [*wide(*xs), ofg(xs[0])]
    fg = FunctionGraph(xs, graph_outs, clone=False)
    rng = np.random.default_rng(1)
    vals = [rng.normal(size=3) for _ in xs]
    got = evaluate(fg, vals)
    for k in range(15):
        np.testing.assert_allclose(got[k], np.exp(vals[k]) * vals[k + 1], rtol=1e-15)
    np.testing.assert_allclose(got[15], vals[0] * 3.0, rtol=1e-15)


def test_hand_built_shape_join_linalg_graphs_evaluate_like_pytensor():
    import warnings

    import format_eval

    warnings.simplefilter("ignore", DeprecationWarning)
    ops = _linalg_ops()
    A = pt.dmatrix("A")
    v = pt.dvector("v")
    idx = pt.lvector("idx")
    ax = pt.lscalar("ax")
    n = pt.lscalar("n")
    spd = pt.dot(A, A.T) + pt.constant(3.0 * np.eye(3))
    s1, s2 = pt.split(v, [1, 3], n_splits=2, axis=0)
    outs = [ops["Cholesky"]()(spd), ops["SolveTriangular"](lower=True, b_ndim=1)(ops["Cholesky"]()(spd), v[:3]),
            ops["Solve"](b_ndim=1)(spd, v[:3]), ops["MatrixInverse"]()(spd), ops["Det"]()(spd),
            *ops["SLogDet"]()(spd), pt.join(ax if SYMBOLIC_JOIN_AXIS else 1, A, A), s1, s2, pt.alloc(v[0], n, 2), pt.cumprod(A, axis=1),
            pt.diagonal(A, offset=-1), pt.inc_subtensor(v[idx], 1.0), A.reshape((9,)), pt.arange(n),
            pt.stack([v[0], v[1]]), pt.dot(A, v[:3]), A.max(axis=0), pt.prod(A, axis=1)]
    fg = FunctionGraph([A, v, idx, ax, n], outs, clone=False)
    doc, payload = ember.export_graph(fg)
    check(doc, payload, SCHEMA)
    rng = np.random.default_rng(3)
    args = {"A": rng.normal(size=(3, 3)), "v": rng.normal(size=4), "idx": np.array([1, 1, 3]),
            "ax": np.array(1), "n": np.array(2)}
    expected = pytensor.function([A, v, idx, ax, n], outs, mode="FAST_COMPILE",
                                 on_unused_input="ignore")(*args.values())
    got = format_eval.evaluate(doc, payload, args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=f"output {k}")


def test_decompositions_export_their_attrs_and_evaluate_like_pytensor():
    import importlib
    import warnings

    import format_eval

    warnings.simplefilter("ignore", DeprecationWarning)

    def cls(name):
        for mod in ("pytensor.tensor.linalg", "pytensor.tensor.slinalg", "pytensor.tensor.nlinalg"):
            c = getattr(importlib.import_module(mod), name, None)
            if isinstance(c, type):
                return c
        raise LookupError(name)

    A, B, b = pt.dmatrix("A"), pt.dmatrix("B"), pt.dvector("b")
    spd = pt.dot(A, A.T) + pt.constant(3.0 * np.eye(3))
    try:
        eigh = cls("Eigh")(UPLO="U")
    except TypeError:
        eigh = cls("Eigh")(lower=False)
    LU, piv = cls("LUFactor")()(A)
    outs = [cls("CholeskySolve")(lower=True, b_ndim=1)(cls("Cholesky")(lower=True)(spd), b), LU, piv,
            *cls("LU")(p_indices=True)(A), cls("PivotToPermutations")(inverse=False)(piv),
            eigh(spd)[0], *cls("QR")(mode="economic")(B), cls("QR")(mode="r")(B),
            cls("SVD")(compute_uv=False)(B), cls("MatrixPinv")(hermitian=False)(B)]
    fg = FunctionGraph([A, B, b], outs, clone=False)
    doc, payload = ember.export_graph(fg)
    check(doc, payload, SCHEMA)
    assert only(doc, "CholeskySolve")["attrs"] == {"lower": True, "b_ndim": 1}
    assert only(doc, "LU")["attrs"] == {"permute_l": False, "p_indices": True}
    assert only(doc, "PivotToPermutations")["attrs"] == {"inverse": False}
    assert only(doc, "Eigh")["attrs"] == {"lower": False}
    assert sorted(n["attrs"]["mode"] for n in nodes_named(doc, "QR")) == ["economic", "r"]
    assert only(doc, "SVD")["attrs"] == {"full_matrices": True, "compute_uv": False}
    assert only(doc, "MatrixPinv")["attrs"] == {"hermitian": False}
    rng = np.random.default_rng(5)
    args = {"A": rng.normal(size=(3, 3)), "B": rng.normal(size=(4, 3)), "b": rng.normal(size=3)}
    expected = pytensor.function([A, B, b], outs, mode="FAST_COMPILE")(*args.values())
    got = format_eval.evaluate(doc, payload, args)
    for k, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, err_msg=f"output {k}")


def test_batched_lu_solve_exports_blockwise_row_gathers():
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    A, B = pt.dtensor3("A"), pt.dmatrix("B")
    LU, piv = pt.linalg.lu_factor(A)
    doc, _ = export([A, B], pt.linalg.lu_solve((LU, piv), B, b_ndim=1))
    cores = sorted(n["attrs"]["core_op"]["op"] for n in nodes_named(doc, "Blockwise"))
    assert {"LUFactor", "PivotToPermutations", "AdvancedSubtensor1", "SolveTriangular"} <= set(cores), cores
