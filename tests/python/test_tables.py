"""Every Python-side table of scalar ops, reduce ops and dtypes is the one the
build generated from interp/scalar_ops.def and interp/dtype.def
(ember/_tables.py), so no hand copy can drift from the C++ side."""

import glob
import importlib
import os
import re

import numpy as np

from ember import scalar_ops, tables
from ember.testing import validate

import format_eval

export = importlib.import_module("ember.export")  # ember.export is also the function

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _def_rows(name):
    with open(os.path.join(ROOT, "interp", name)) as f:
        return re.findall(r'^X\((\w+),\s*"(\w+)",\s*([^,]+),\s*([^,)]+)', f.read(), re.M)


def test_generated_tables_are_the_def_files():
    assert [(n, (int(a), k)) for _, n, a, k in _def_rows("scalar_ops.def")] == list(tables.SCALAR_OPS.items())
    assert [n for _, n, _, _ in _def_rows("dtype.def")] == list(tables.DTYPES)
    assert set(tables.REDUCE_OPS) - set(tables.REDUCE_ONLY_OPS) <= set(tables.SCALAR_OPS)
    assert set(tables.REDUCE_ONLY_OPS) <= set(tables.REDUCE_OPS)
    assert not set(tables.REDUCE_ONLY_OPS) & set(tables.SCALAR_OPS)


def test_tables_are_the_engines():
    try:
        from ember import native
    except ImportError:
        return  # the pure-Python side alone: nothing to compare with
    assert native._core.supported_scalar_ops() == list(tables.SCALAR_OPS) + ["Composite"]


def test_package_tables_are_the_generated_ones():
    assert scalar_ops.SUPPORTED == set(tables.SCALAR_OPS)
    assert scalar_ops.REDUCE_OPS == set(tables.REDUCE_OPS)
    assert scalar_ops.REDUCE_ONLY == set(tables.REDUCE_ONLY_OPS)
    assert export.DTYPES == set(tables.DTYPES)
    assert export.INT_DTYPES == {n for n, (_, kind) in tables.DTYPES.items() if kind == "int"}
    assert validate._ITEMSIZE == {n: size for n, (size, _) in tables.DTYPES.items()}
    for name, (size, kind) in tables.DTYPES.items():
        dt = np.dtype(name)
        assert dt.itemsize == size and dt.kind in {"float": "f", "int": "iu", "bool": "b"}[kind], name


def test_schema_enums_are_the_tables():
    schema = validate.load_schema()
    assert schema["$defs"]["dtype"]["enum"] == list(tables.DTYPES)
    careduce = [c["then"] for c in schema["$defs"]["node"]["allOf"]
                if c.get("if", {}).get("properties", {}).get("op", {}).get("const") == "CAReduce"]
    assert len(careduce) == 1
    assert careduce[0]["properties"]["attrs"]["properties"]["scalar_op"]["enum"] == list(tables.REDUCE_OPS)


def test_test_evaluator_has_every_op():
    assert format_eval.KINDS == {n: kind for n, (_, kind) in tables.SCALAR_OPS.items()}
    assert set(format_eval.SCALAR) | {"Cast", "Switch"} == set(tables.SCALAR_OPS)


def test_no_hand_copy_in_the_package():
    # A dtype list names int16; a scalar op list names Erfcinv.
    for path in glob.glob(os.path.join(ROOT, "python", "ember", "**", "*.py"), recursive=True):
        with open(path) as f:
            text = f.read()
        assert not re.search(r"""["']int16["']|Erfcinv""", text), f"{path} copies a table of interp/*.def"
