"""Checks an Ember graph document: the JSON Schema plus the rules a schema cannot say
(ids in range, topological order, constant sizes, payload bounds)."""

import json
from importlib.resources import files

import numpy as np

from ..tables import ITEMSIZE as _ITEMSIZE

# Shipped with the package (the format's only copy; docs/graph-format.md describes it).
_SCHEMA_PATH = files("ember").joinpath("graph-format.schema.json")


class GraphError(ValueError):
    pass


def load_schema(path=None):
    if path is None:
        return json.loads(_SCHEMA_PATH.read_text())
    with open(path) as f:
        return json.load(f)


def validate_schema(doc, schema=None):
    import jsonschema

    schema = schema or load_schema()
    jsonschema.Draft202012Validator(schema).validate(doc)


def check_structure(doc, payload=b""):
    """Raise GraphError naming the first place where doc breaks the format's rules."""
    nvars = len(doc["variables"])

    def fail(where, msg):
        raise GraphError(f"{where}: {msg}")

    def vid(v, where):
        if not 0 <= v < nvars:
            fail(where, f"variable {v} out of range (graph has {nvars})")
        return v

    defined = set()
    for k, i in enumerate(doc["inputs"]):
        defined.add(vid(i["var"], f"inputs[{k}]"))
    const_vars = set()
    for k, c in enumerate(doc["constants"]):
        where = f"constants[{k}]"
        var = doc["variables"][vid(c["var"], where)]
        shape = c.get("shape", var["shape"])
        if len(shape) != len(var["shape"]) or any(
                s is not None and d != s for d, s in zip(shape, var["shape"])):
            fail(where, "shape differs from the variable's static shape")
        if any(d is None for d in shape):
            fail(where, "value has an unknown dim (give \"shape\")")
        count = int(np.prod(shape, dtype=np.int64))
        if "data" in c:
            if len(c["data"]) != count:
                fail(where, f"{len(c['data'])} values, shape needs {count}")
        else:
            nbytes = count * _ITEMSIZE[var["dtype"]]
            if c["nbytes"] != nbytes:
                fail(where, f"nbytes {c['nbytes']}, shape and dtype need {nbytes}")
            if c["offset"] % _ITEMSIZE[var["dtype"]]:
                fail(where, "offset not a multiple of the element size")
            if c["offset"] + c["nbytes"] > len(payload):
                fail(where, "past the end of the payload")
        const_vars.add(c["var"])
        defined.add(c["var"])
    for k, i in enumerate(doc["inputs"]):
        if i.get("shared") and i["var"] not in const_vars:
            fail(f"inputs[{k}]", "shared input without a constant giving its value")
    for k, n in enumerate(doc["nodes"]):
        where = f"nodes[{k}] ({n['op']})"
        for v in n["inputs"]:
            if vid(v, where) not in defined:
                fail(where, f"input variable {v} is not defined before this node")
        for v in n["outputs"]:
            if vid(v, where) in defined:
                fail(where, f"output variable {v} is defined twice")
            defined.add(v)
        sop = n.get("attrs", {}).get("scalar_op")
        if isinstance(sop, dict) and sop.get("op") == "Composite":
            _check_composite(sop, len(n["inputs"]), len(n["outputs"]), f"{where}.scalar_op", fail)
        if isinstance(sop, dict) and sop.get("op") == "ScalarLoop":  # n_steps is no body input
            _check_composite(sop, len(n["inputs"]) - 1, len(n["outputs"]), f"{where}.scalar_op", fail)
    for k, v in enumerate(doc["outputs"]):
        if vid(v, f"outputs[{k}]") not in defined:
            fail(f"outputs[{k}]", f"variable {v} is never defined")


def _check_composite(c, n_in, n_out, where, fail):
    if len(c["inputs"]) != n_in:
        fail(where, f"{len(c['inputs'])} scalar inputs for {n_in} tensor inputs")
    if len(c["outputs"]) != n_out:
        fail(where, f"{len(c['outputs'])} scalar outputs for {n_out} tensor outputs")
    known = len(c["inputs"]) + len(c.get("constants", []))
    for k, n in enumerate(c["nodes"]):
        for i in n["inputs"]:
            if not 0 <= i < known:
                fail(f"{where}.nodes[{k}]", f"value {i} not defined before this node")
        known += 1
    for i in c["outputs"]:
        if not 0 <= i < known:
            fail(f"{where}.outputs", f"value {i} does not exist")


def check(doc, payload=b"", schema=None):
    validate_schema(doc, schema)
    check_structure(doc, payload)
